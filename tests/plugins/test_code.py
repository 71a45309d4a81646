"""The bundled packages' JavaScript, run for real in the Node plugin host.

Each package with code loads (the host checks every registration against contributes, both
ways); then each tool, action, handler and form validator is called with a seeded ctx and its
results, proposals and plugin-data operations are checked. Function outputs are checked against
the runtime's own io.output.schema.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from catalogue.manifest.loader import load_package
from catalogue.manifest.types import Manifest
from pluginhost import services
from pluginhost.callbacks import InMemoryCallbacks
from pluginhost.errors import ToolFailure
from pluginhost.host import NodeHost

PLUGINS_DIR = Path(__file__).resolve().parents[2] / "plugins"
WORLD = {
    "characters": [
        {"id": "hero", "name": "Ash", "type": "player"},
        {"id": "mara", "name": "Mara", "type": "npc"},
        {"id": "hale", "name": "Captain Hale", "type": "npc"},
    ],
    "seats": [],
}


@pytest.fixture(scope="module")
def host() -> Iterator[NodeHost]:
    instance = NodeHost(grace=1.0)
    instance.start()
    yield instance
    instance.stop()


def manifest_of(package: str) -> Manifest:
    result = load_package(str(PLUGINS_DIR / package), host_version="0.1.0")
    assert result.manifest is not None, [str(e) for e in result.errors]
    return result.manifest


def output_schema(manifest: Manifest, runtime_id: str) -> dict[str, Any]:
    runtime = manifest.runtime(runtime_id)
    assert runtime is not None
    path = Path(manifest.path) / runtime.data["io"]["output"]["schema"]
    return json.loads(path.read_text(encoding="utf-8"))


def run(
    host: NodeHost,
    package: str,
    runtime: str,
    callbacks: InMemoryCallbacks | None = None,
    **context: Any,
) -> services.FunctionResult:
    return services.plugin_function_call(
        manifest=manifest_of(package),
        runtime=runtime,
        callbacks=callbacks or InMemoryCallbacks(),
        context={"sessionId": "s1", "turnId": "t1", **context},
        host=host,
    )


def tool(
    host: NodeHost,
    package: str,
    name: str,
    args: dict[str, Any],
    callbacks: InMemoryCallbacks | None = None,
    **context: Any,
) -> services.ToolEnvelope:
    return services.plugin_tool_call(
        manifest=manifest_of(package),
        tool=name,
        args=args,
        callbacks=callbacks or InMemoryCallbacks(),
        context={"sessionId": "s1", "turnId": "t1", **context},
        host=host,
    )


def rpc(
    host: NodeHost,
    package: str,
    action: str,
    payload: Any,
    callbacks: InMemoryCallbacks | None = None,
    **context: Any,
) -> Any:
    return services.plugin_rpc_call(
        manifest=manifest_of(package),
        action=action,
        payload=payload,
        callbacks=callbacks or InMemoryCallbacks(),
        context={"sessionId": "s1", **context},
        host=host,
    )


CODE_PACKAGES = sorted(
    p.name for p in PLUGINS_DIR.iterdir() if (p / "server").is_dir() or any(p.rglob("handler.js"))
)


def test_most_packages_carry_code() -> None:
    assert len(CODE_PACKAGES) >= 8


@pytest.mark.parametrize("package", CODE_PACKAGES)
def test_it_loads_with_registrations_matching_contributes(host: NodeHost, package: str) -> None:
    manifest = manifest_of(package)
    loaded = services.plugin_load(
        manifest=manifest, host=host, callbacks=InMemoryCallbacks(), force=True
    )
    assert loaded is not None
    declared = manifest.contributes
    assert sorted(t["name"] for t in loaded.tools) == sorted(declared.get("tools", ()))
    assert sorted(loaded.actions) == sorted(declared.get("actions", ()))
    assert sorted(loaded.forms) == sorted(declared.get("forms", ()))
    functions = sorted(r.id for r in manifest.runtimes if r.is_function)
    assert sorted(loaded.runtimes) == functions


# ---------------------------------------------------------------- storyteller


def test_the_narrator_is_reproducible_for_a_seed(host: NodeHost) -> None:
    first = run(
        host,
        "storyteller",
        "storyteller",
        playerMessage="I open the gate.",
        seed="turn-7",
        world=WORLD,
    )
    again = run(
        host,
        "storyteller",
        "storyteller",
        playerMessage="I open the gate.",
        seed="turn-7",
        world=WORLD,
    )
    assert first.outcome == "success" and first.result == again.result
    text = first.result["value"]["narrativeOutput"]
    assert "You open the gate" in text and ("Mara" in text or "Captain Hale" in text)
    assert "Ash" not in text  # the player's own character never witnesses the deed
    jsonschema.validate(
        first.result["value"], output_schema(manifest_of("storyteller"), "storyteller")
    )
    others = {
        run(
            host, "storyteller", "storyteller", playerMessage="I wait.", seed=f"s{i}", world=WORLD
        ).result["value"]["narrativeOutput"]
        for i in range(6)
    }
    assert len(others) > 1, "different seeds should not all tell the same paragraph"


def test_the_narrator_style_setting_changes_the_prose(host: NodeHost) -> None:
    terse = run(host, "storyteller", "storyteller", playerMessage="I wave.", seed="x", world=WORLD)
    lyrical = run(
        host,
        "storyteller",
        "storyteller",
        playerMessage="I wave.",
        seed="x",
        world=WORLD,
        userSettings={"style": "lyrical"},
    )
    assert terse.result["value"]["style"] == "terse"
    assert lyrical.result["value"]["style"] == "lyrical"
    assert terse.result["value"]["narrativeOutput"] != lyrical.result["value"]["narrativeOutput"]


# ---------------------------------------------------------------- notebook


def test_save_note_proposes_a_write_and_shows_the_model_a_summary(host: NodeHost) -> None:
    envelope = tool(
        host, "notebook", "save-note", {"id": "gate-is-locked", "text": "The gate is locked."}
    )
    assert envelope.content == {"id": "gate-is-locked"}
    assert envelope.model_view and "gate-is-locked" in envelope.model_view["summary"]
    [proposal] = envelope.pending_proposals
    assert proposal["type"] == "plugin.data"
    assert proposal["payload"] == {
        "namespace": "notes",
        "key": "gate-is-locked",
        "value": {"id": "gate-is-locked", "text": "The gate is locked."},
    }
    assert proposal["source"]["pluginId"] == "notebook"


def test_save_note_refuses_a_key_that_is_not_kebab_case(host: NodeHost) -> None:
    with pytest.raises(ToolFailure) as caught:
        tool(host, "notebook", "save-note", {"id": "Gate Is Locked", "text": "x"})
    assert caught.value.code == "invalid_tool_arguments" and "id" in str(caught.value)


def test_inspect_note_lists_saved_notes_and_checks_its_payload(host: NodeHost) -> None:
    data = {
        ("notebook", "notes"): {
            "b-fact": {"id": "b-fact", "text": "B"},
            "a-fact": {"id": "a-fact", "text": "A"},
        }
    }
    listed = rpc(host, "notebook", "inspect-note", {}, InMemoryCallbacks(data=data))
    assert listed == {
        "ok": True,
        "data": [{"id": "a-fact", "text": "A"}, {"id": "b-fact", "text": "B"}],
    }
    one = rpc(host, "notebook", "inspect-note", {"id": "b-fact"}, InMemoryCallbacks(data=data))
    assert one["data"] == [{"id": "b-fact", "text": "B"}]
    by_command = rpc(
        host,
        "notebook",
        "inspect-note",
        None,
        InMemoryCallbacks(data=data),
        command={"command": "note", "canonical": "note", "args": {"id": "a-fact"}},
    )
    assert by_command["data"] == [{"id": "a-fact", "text": "A"}]
    refused = rpc(
        host, "notebook", "inspect-note", {"id": "<script>"}, InMemoryCallbacks(data=data)
    )
    assert refused["ok"] is False and "kebab-case" in refused["error"]


# ---------------------------------------------------------------- dice


def test_roll_dice_is_seeded_and_bounded(host: NodeHost) -> None:
    args = {"count": 3, "sides": 6, "modifier": 2, "label": "ambush"}
    one = tool(host, "dice", "roll-dice", args, seed="r1")
    two = tool(host, "dice", "roll-dice", args, seed="r1")
    assert one.content == two.content
    assert one.content["notation"] == "3d6+2" and len(one.content["dice"]) == 3
    assert all(1 <= d <= 6 for d in one.content["dice"])
    assert one.content["total"] == sum(one.content["dice"]) + 2
    with pytest.raises(ToolFailure):
        tool(host, "dice", "roll-dice", {"count": 21, "sides": 6})


def test_the_roll_command_parses_its_arguments(host: NodeHost) -> None:
    # Covel's command invocation is the payload, and ctx.command too.
    command = {
        "command": "r",
        "canonical": "roll",
        "args": {"notation": "2d8+1", "label": "sneak attack"},
    }
    answer = rpc(host, "dice", "roll", command, command=command, seed="c1")
    assert answer["ok"] is True
    result = answer["data"]
    assert result["notation"] == "2d8+1" and result["label"] == "sneak attack"
    assert len(result["dice"]) == 2 and all(1 <= d <= 8 for d in result["dice"])
    assert (
        answer["message"]
        == f"2d8+1: {', '.join(map(str, result['dice']))} (total {result['total']})"
    )
    # ctx.command alone still reads, and so do the earlier count and expression fields.
    older = rpc(host, "dice", "roll", None, command={"args": {"count": 2, "expression": "d8+1 x"}})
    assert older["ok"] is True and older["data"]["notation"] == "2d8+1"
    bad = rpc(host, "dice", "roll", {"args": {"notation": "0d6"}})
    assert bad["ok"] is False and "count must be an integer from 1" in bad["message"]
    huge = rpc(host, "dice", "roll", {"count": 1, "expression": "d1000"})
    assert huge["ok"] is False and "sides" in huge["message"]
    words = rpc(host, "dice", "roll", {"args": {"notation": "two dice"}})
    assert words == {
        "ok": False,
        "message": 'Use /roll NdM+K, for example /roll 2d6+1 sneak attack (not "two dice")',
        "data": {"code": "invalid-notation"},
    }


def test_the_manual_roll_is_stored_once_per_turn(host: NodeHost) -> None:
    callbacks = InMemoryCallbacks()
    first = run(
        host,
        "dice",
        "dice",
        callbacks,
        seed="m1",
        manualPayload={"count": 2, "sides": 10},
        sourceTurnId="turn-3",
    )
    assert first.outcome == "success"
    jsonschema.validate(first.result["value"], output_schema(manifest_of("dice"), "dice"))
    [operation] = first.operations
    assert (
        operation["kind"] == "set"
        and operation["namespace"] == "rolls"
        and operation["key"] == "turn-3"
    )
    # A retry of that turn finds the stored roll and draws nothing new, even with another seed.
    callbacks.data[("dice", "rolls")] = {"turn-3": operation["value"]}
    retry = run(
        host,
        "dice",
        "dice",
        callbacks,
        seed="other",
        manualPayload={"count": 2, "sides": 10},
        sourceTurnId="turn-3",
    )
    assert retry.result["value"] == first.result["value"] and retry.operations == []


def test_advantage_keeps_the_higher_of_two_dice(host: NodeHost) -> None:
    for seed in ("a1", "a2", "a3"):
        result = run(
            host,
            "dice",
            "dice",
            seed=seed,
            manualPayload={"count": 1},
            userSettings={"sides": 20, "advantage": True},
        ).result["value"]
        assert result["advantage"] is True and result["dice"][0] >= result["discarded"]
        assert result["notation"] == "1d20"


def test_a_manual_roll_outside_the_limits_fails(host: NodeHost) -> None:
    result = run(host, "dice", "dice", seed="z", manualPayload={"count": 1, "sides": 1})
    assert (
        result.outcome == "failed" and "sides" in result.result["error"] and result.operations == []
    )


# ---------------------------------------------------------------- weather


def test_weather_reports_the_chosen_city_offline(host: NodeHost) -> None:
    report = run(host, "weather", "weather", userSettings={"city": "Saltmere"}).result["value"]
    assert report["city"] == "Saltmere" and report["known"] is True and report["sky"] == "drizzle"
    jsonschema.validate(report, output_schema(manifest_of("weather"), "weather"))
    default = run(host, "weather", "weather").result["value"]
    assert default["city"] == "Harbor"
    unknown = run(host, "weather", "weather", userSettings={"city": "Atlantis"}).result["value"]
    assert unknown["known"] is False


# ---------------------------------------------------------------- chronicle


def test_the_index_records_capitalised_names_by_turn(host: NodeHost) -> None:
    digest = {
        "playerMessage": "I ask.",
        "narrativeText": "The bell of Saltmere rang. Mara smiled at Saltmere.",
    }
    result = run(
        host, "chronicle", "index", inputs={"digest": {"value": digest}}, sourceTurnId="turn-9"
    )
    value = result.result["value"]
    assert value == {"turnId": "turn-9", "names": ["Mara", "Saltmere"]}
    jsonschema.validate(value, output_schema(manifest_of("chronicle"), "index"))
    assert {(op["namespace"], op["key"]) for op in result.operations} == {
        ("index", "mara"),
        ("index", "saltmere"),
    }


def test_the_archive_files_the_committed_summary(host: NodeHost) -> None:
    summary = {"title": "The Bell", "summary": "The bell rang at last.", "names": ["Saltmere"]}
    result = run(
        host, "chronicle", "archive", inputs={"summary": {"value": summary}}, sourceTurnId="turn-2"
    )
    assert result.outcome == "success"
    jsonschema.validate(result.result["value"], output_schema(manifest_of("chronicle"), "archive"))
    [operation] = result.operations
    assert (operation["namespace"], operation["key"], operation["value"]["title"]) == (
        "chapters",
        "turn-2",
        "The Bell",
    )
    missing = run(host, "chronicle", "archive", inputs={})
    assert missing.outcome == "failed" and missing.operations == []


# ---------------------------------------------------------------- satchel


def test_adjust_gold_proposes_an_increment_with_a_floor(host: NodeHost) -> None:
    callbacks = InMemoryCallbacks(data={("satchel", "wallet"): {"gold": 10}})
    envelope = tool(
        host, "satchel", "adjust-gold", {"amount": -3, "reason": "ferry fare"}, callbacks
    )
    assert envelope.content == {"balance": 7, "change": -3}
    [proposal] = envelope.pending_proposals
    assert proposal["payload"] == {
        "namespace": "wallet",
        "key": "gold",
        "ops": [{"op": "inc", "by": -3, "min": 0}],
    }


def test_adjust_gold_refuses_a_payment_the_purse_cannot_cover(host: NodeHost) -> None:
    callbacks = InMemoryCallbacks(data={("satchel", "wallet"): {"gold": 2}})
    with pytest.raises(ToolFailure) as caught:
        tool(host, "satchel", "adjust-gold", {"amount": -5, "reason": "a sword"}, callbacks)
    assert caught.value.tool_code == "insufficient-gold" and caught.value.hint
    with pytest.raises(ToolFailure) as zero:
        tool(host, "satchel", "adjust-gold", {"amount": 0, "reason": "nothing"}, callbacks)
    assert zero.value.code == "invalid_tool_arguments"


# ---------------------------------------------------------------- rapport


def test_adjust_affinity_accumulates_and_clamps(host: NodeHost) -> None:
    callbacks = InMemoryCallbacks(
        data={("rapport", "rapport"): {"mara": {"id": "mara", "name": "Mara", "score": 95}}}
    )
    envelope = tool(
        host,
        "rapport",
        "adjust-affinity",
        {
            "changes": [
                {"id": "mara", "name": "Mara", "delta": 10, "reason": "You saved her brother."},
                {"id": "hale", "name": "Captain Hale", "delta": -4, "reason": "You mocked him."},
            ]
        },
        callbacks,
    )
    values = {p["payload"]["key"]: p["payload"]["value"] for p in envelope.pending_proposals}
    assert values["mara"]["score"] == 100 and values["mara"]["tier"] == "devoted"
    assert values["hale"]["score"] == -4 and values["hale"]["tier"] == "neutral"
    schema = json.loads((PLUGINS_DIR / "rapport/schemas/affinity.schema.json").read_text())
    for value in values.values():
        jsonschema.validate(value, schema)


def test_adjust_affinity_follows_the_intensity_setting(host: NodeHost) -> None:
    change = {"changes": [{"id": "mara", "name": "Mara", "delta": 4, "reason": "You helped."}]}
    doubled = tool(host, "rapport", "adjust-affinity", change, userSettings={"intensity": 10})
    frozen = tool(host, "rapport", "adjust-affinity", change, userSettings={"intensity": 0})
    assert doubled.pending_proposals[0]["payload"]["value"]["score"] == 8
    assert frozen.pending_proposals[0]["payload"]["value"]["score"] == 0


def test_adjust_affinity_lets_idle_scores_decay(host: NodeHost) -> None:
    stored = {"mara": {"id": "mara", "name": "Mara", "score": 40, "turn": 3}}
    change = {"changes": [{"id": "mara", "name": "Mara", "delta": 2, "reason": "You waved."}]}

    def score(**context: Any) -> int:
        callbacks = InMemoryCallbacks(data={("rapport", "rapport"): dict(stored)})
        value = tool(
            host, "rapport", "adjust-affinity", change, callbacks, **context
        ).pending_proposals[0]
        return value["payload"]["value"]["score"]

    assert score(turnNumber=5, userSettings={"decay": 0.5}) == 40 * 0.25 + 2  # two idle turns
    assert score(turnNumber=5, userSettings={"decay": 0}) == 42
    assert score(turnNumber=3, userSettings={"decay": 0.5}) == 42  # changed this very turn
    assert score(userSettings={"decay": 0.5}) == 42  # no turn number: nothing to count from


# ---------------------------------------------------------------- scene-setter


def test_setup_draws_a_scene_offers_the_form_and_is_done(host: NodeHost) -> None:
    result = run(host, "scene-setter", "scene-setter", seed="open-1")
    assert result.outcome == "success" and result.result["completion"] == "done"
    scene = result.result["value"]
    jsonschema.validate(scene, output_schema(manifest_of("scene-setter"), "scene-setter"))
    [form] = result.result["effects"]["interactions"]
    assert form["type"] == "form" and form["validation"] == {"name": "scene-form"}
    [operation] = result.operations
    assert (operation["namespace"], operation["key"], operation["value"]) == (
        "scene",
        "current",
        scene,
    )
    # A rerun (new package version) keeps the scene the table already has.
    kept = run(
        host,
        "scene-setter",
        "scene-setter",
        InMemoryCallbacks(data={("scene-setter", "scene"): {"current": {"place": "The Old Mill"}}}),
        seed="open-2",
    )
    assert kept.result["value"] == {"place": "The Old Mill"} and kept.operations == []


def test_the_scene_form_validator_names_each_bad_field(host: NodeHost) -> None:
    manifest = manifest_of("scene-setter")
    good = services.plugin_form_validate(
        manifest=manifest,
        name="scene-form",
        values={"place": "The pier", "mood": "calm"},
        host=host,
    )
    assert good.ok
    bad = services.plugin_form_validate(
        manifest=manifest,
        name="scene-form",
        values={"place": "", "mood": "angry", "details": "x" * 401},
        host=host,
    )
    assert not bad.ok
    assert {e["field"] for e in bad.field_errors} == {"place", "mood", "details"}


# ---------------------------------------------------------------- word-count


def test_word_count_counts_both_sides_and_keeps_totals(host: NodeHost) -> None:
    callbacks = InMemoryCallbacks(
        data={
            ("word-count", "totals"): {"session": {"turns": 2, "playerWords": 5, "storyWords": 40}}
        }
    )
    digest = {
        "playerMessage": "I open the gate",
        "narrativeText": "The gate creaks open — 门开了。",
    }
    result = run(host, "word-count", "word-count", callbacks, inputs={"turn": {"value": digest}})
    value = result.result["value"]
    assert value["playerWords"] == 4 and value["storyWords"] == 4 + 3
    assert value["totals"] == {"turns": 3, "playerWords": 9, "storyWords": 47}
    jsonschema.validate(value, output_schema(manifest_of("word-count"), "word-count"))


def test_the_weather_service_answers_agents_and_packages(host: NodeHost) -> None:
    # No service wrapper exists in pluginhost.services yet, so this speaks the host's own method.
    services.plugin_load(manifest=manifest_of("weather"), host=host, callbacks=InMemoryCallbacks())
    answer = host.request(
        "service",
        {
            "package": "weather",
            "contract": "weather-report@1",
            "input": {"city": "Highcrest"},
            "callerPluginId": "storyteller",
        },
    )
    assert answer["output"]["city"] == "Highcrest" and answer["output"]["temperatureC"] == -2
    schema = json.loads((PLUGINS_DIR / "weather/schemas/report.schema.json").read_text())
    jsonschema.validate(answer["output"], schema)
    with pytest.raises(Exception, match="city"):
        host.request(
            "service", {"package": "weather", "contract": "weather-report@1", "input": {"city": ""}}
        )


def test_the_commit_guard_refuses_an_oversized_scene(host: NodeHost) -> None:
    services.plugin_load(
        manifest=manifest_of("scene-setter"), host=host, callbacks=InMemoryCallbacks()
    )

    def proposal(details: str, plugin: str = "scene-setter") -> dict[str, Any]:
        return {
            "type": "plugin.data",
            "source": {"pluginId": plugin},
            "payload": {
                "namespace": "scene",
                "key": "current",
                "value": {"place": "Pier", "details": details},
            },
        }

    def verdict(*proposals: dict[str, Any]) -> dict[str, Any]:
        answer = host.request(
            "hook",
            {
                "package": "scene-setter",
                "event": "PreStateCommit",
                "payload": {"proposals": list(proposals)},
                "context": {},
            },
        )
        [result] = answer["results"]
        return result

    assert verdict(proposal("short")) == {"action": "continue"}
    refused = verdict(proposal("x" * 401))
    assert refused["action"] == "abort" and "401" in refused["reason"]
    # Another plugin's namespace of the same name is not ours to police.
    assert verdict(proposal("x" * 401, plugin="elsewhere")) == {"action": "continue"}


def happy_path_tool_calls() -> list[tuple[str, str, dict[str, Any]]]:
    """The package-tool calls of the first (passing) case of every runtime-cases.json."""
    found = []
    for path in sorted(PLUGINS_DIR.glob("*/tests/runtime-cases.json")):
        package = path.parts[-3]
        own = set(manifest_of(package).contributes.get("tools") or ())
        first = json.loads(path.read_text(encoding="utf-8"))["cases"][0]
        assert first["expect"]["runtimeResults"][0]["status"] == "success", (
            f"{package}: put the passing case first"
        )
        for response in first["llmResponses"]:
            for call in response.get("toolCalls") or ():
                if call["name"] in own:
                    found.append((package, call["name"], json.loads(call["arguments"])))
    return found


def test_the_runtime_cases_call_package_tools() -> None:
    assert {package for package, _, _ in happy_path_tool_calls()} >= {
        "notebook",
        "satchel",
        "rapport",
    }


@pytest.mark.parametrize(
    "package,name,args", happy_path_tool_calls(), ids=lambda v: v if isinstance(v, str) else ""
)
def test_scripted_arguments_pass_the_real_tool(
    host: NodeHost, package: str, name: str, args: dict[str, Any]
) -> None:
    envelope = tool(host, package, name, args)
    assert envelope.pending_proposals, f"{package}/{name} proposed no write for its scripted call"
