"""world-ir-provider@1 and narrative-engine@1 on this hub: the bundled hub-world-ir and
hub-narrative-v1 make a package written like Covel's affinity (the kinship corpus package,
which requires both) active, and it reads the world's characters from the turn's WorldIR.

Covel's shapes: plugins/world-ir/schemas/world-ir.schema.json (WorldIR v1) and
plugins/chat-mode-narrator/schemas/narrative-engine.schema.json ({narrativeOutput}).
"""

from __future__ import annotations

import json

import jsonschema
from support import CHARACTERS, play, ui_session

from catalogue.manifest.loader import load_package
from sessions.models import PluginData, RecordedExport

REPO_SCHEMA = "plugins/hub-world-ir/schemas/world-ir.schema.json"


def test_a_package_requiring_world_ir_becomes_active_and_reads_the_world(db, alice, settings):
    session = ui_session(alice, "kinship", bundled=("hub-world-ir", "hub-narrative-v1"))
    assert {"kinship", "hub-world-ir", "hub-narrative-v1"} <= set(session.resolved_plugins)
    assert session.outcomes["hub-world-ir"][-1]["code"] == "dependency"
    result = play(session, "I thank Mira for her help.")
    runs = {r["runtime"]: r for r in result["runtimes"]}
    assert runs["hub-world-ir"]["status"] == "succeeded", runs["hub-world-ir"]
    assert runs["hub-narrative-v1"]["status"] == "succeeded", runs["hub-narrative-v1"]
    assert runs["kinship"]["status"] == "succeeded", runs["kinship"]
    # kinship read the WorldIR: exactly the characters it named (Mira, from the player's words,
    # and whoever the storyteller's paragraph names) got +10 for the thanks.
    facts = RecordedExport.objects.get(session=session, record_as="world-ir-v1").value
    named = {e["id"] for e in facts["entities"]}
    assert "mira" in named
    scores = {
        row.key: row.value
        for row in PluginData.objects.filter(
            session=session, plugin_id="kinship", namespace="affinity"
        )
    }
    assert set(scores) == named
    assert scores["mira"]["name"] == "Mira" and scores["mira"]["score"] == 10
    assert scores["mira"]["tierLabel"] == {"zh": "友好", "en": "Friendly"}
    # The narrative-engine@1 input carried the story text under narrativeOutput.
    turn_id = result["turnId"]
    message = PluginData.objects.get(session=session, plugin_id="kinship", namespace="message")
    assert message.key == turn_id
    assert message.value["storyChars"] == len(result["narrativeText"]) > 0


def test_the_world_ir_output_has_covels_shape(db, alice):
    session = ui_session(alice, "kinship", bundled=("hub-world-ir", "hub-narrative-v1"))
    play(session, "Tobin and Mira argue at the <b>docks</b>.")
    facts = RecordedExport.objects.get(
        session=session, plugin_id="hub-world-ir", record_as="world-ir-v1"
    ).value
    schema = json.loads(open(REPO_SCHEMA, encoding="utf-8").read())
    jsonschema.validate(facts, schema)
    assert facts["schemaVersion"] == 1
    assert [(e["id"], e["type"], e["name"]) for e in facts["entities"]] == [
        ("mira", "character", "Mira"),
        ("tobin", "character", "Tobin"),
    ]
    assert facts["entities"][0]["description"] == CHARACTERS[1]["description"]
    [event] = facts["events"]
    assert event["type"] == "interaction" and event["participantIds"] == ["mira", "tobin"]
    assert event["description"] == "Tobin and Mira argue at the <b>docks</b>."
    assert facts["relations"] == [] and facts["statements"] == []


def test_without_a_provider_the_package_is_out_and_the_reason_names_the_contract(db, alice):
    session = ui_session(alice, "kinship", bundled=("hub-narrative-v1",))
    assert "kinship" not in session.resolved_plugins
    verdict = session.outcomes["kinship"][-1]
    assert verdict["code"] == "missing-provider" and verdict["active"] is False
    assert "world-ir-provider@1" in verdict["message"]


def test_the_bundled_providers_load_and_shadow_no_covel_id():
    for package_id in ("hub-world-ir", "hub-narrative-v1"):
        result = load_package(f"plugins/{package_id}", host_version="0.1.0")
        assert result.ok, [str(e) for e in result.errors]
        # Covel's own ids are world-ir and the narrators; ours carry the hub- prefix.
        assert result.manifest.id.startswith("hub-")
        assert result.manifest.kind == "plugin"
