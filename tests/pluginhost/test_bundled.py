"""Every bundled package with code loads in the real host; each tool, action and handler runs."""

from __future__ import annotations

from pathlib import Path

import pytest

from catalogue.manifest import Manifest, load_package
from pluginhost.callbacks import InMemoryCallbacks
from pluginhost.services import (
    plugin_form_validate,
    plugin_function_call,
    plugin_load,
    plugin_rpc_call,
    plugin_tool_call,
)

PLUGINS = Path(__file__).resolve().parents[2] / "plugins"
WORLD = {
    "characters": [
        {"id": "mara", "name": "Mara", "type": "npc"},
        {"id": "hero", "name": "Hero", "type": "player"},
    ],
    "seats": [{"id": "seat-1", "primary": True, "currentCharacterId": "hero"}],
}
CONTEXT = {"sessionId": "s1", "turnId": "t1", "seed": "s1:t1", "world": WORLD, "locale": "en"}


def bundled(name: str) -> Manifest:
    result = load_package(str(PLUGINS / name))
    assert result.ok, [str(issue) for issue in result.errors]
    return result.manifest


def with_code() -> list[str]:
    names = []
    for folder in sorted(PLUGINS.iterdir()):
        if (folder / "PLUGIN.md").is_file() and any(folder.rglob("*.js")):
            names.append(folder.name)
    return names


@pytest.mark.parametrize("name", with_code())
def test_each_bundled_package_with_code_loads(name, host):
    manifest = bundled(name)
    loaded = plugin_load(manifest=manifest, host=host, force=True)
    declared = list(manifest.contributes.get("tools", ()))
    assert [tool["name"] for tool in loaded.tools] == declared
    function_runtimes = [runtime.id for runtime in manifest.runtimes if runtime.is_function]
    assert sorted(loaded.runtimes) == sorted(function_runtimes)


def test_affinity_proposes_the_new_score(host):
    envelope = plugin_tool_call(
        manifest=bundled("rapport"),
        tool="adjust-affinity",
        host=host,
        callbacks=InMemoryCallbacks(),
        context=CONTEXT,
        args={
            "changes": [
                {"id": "mara", "name": "Mara", "delta": 4, "reason": "You gave her your cloak."}
            ]
        },
    )
    [proposal] = envelope.pending_proposals
    assert proposal["type"] == "plugin.data"
    assert proposal["payload"]["key"] == "mara"
    assert proposal["payload"]["value"]["score"] == 4
    assert envelope.model_view["summary"]


def test_affinity_refuses_a_zero_delta(host):
    from pluginhost.errors import ToolFailure

    with pytest.raises(ToolFailure) as caught:
        plugin_tool_call(
            manifest=bundled("rapport"),
            tool="adjust-affinity",
            host=host,
            callbacks=InMemoryCallbacks(),
            args={"changes": [{"id": "mara", "name": "Mara", "delta": 0, "reason": "Nothing."}]},
        )
    assert caught.value.code == "invalid_tool_arguments"


def test_dice_tool_action_and_handler_roll_in_range_and_reproducibly(host):
    dice = bundled("dice")
    callbacks = InMemoryCallbacks()
    first = plugin_tool_call(
        manifest=dice,
        tool="roll-dice",
        args={"count": 2, "sides": 6},
        host=host,
        callbacks=callbacks,
        context=CONTEXT,
    )
    again = plugin_tool_call(
        manifest=dice,
        tool="roll-dice",
        args={"count": 2, "sides": 6},
        host=host,
        callbacks=callbacks,
        context=CONTEXT,
    )
    assert first.content == again.content  # same turn seed, same dice
    assert all(1 <= d <= 6 for d in first.content["dice"]) and first.content["total"] == sum(
        first.content["dice"]
    )

    rolled = plugin_rpc_call(
        manifest=dice,
        action="roll",
        payload={"count": 2, "expression": "d8+1 sneak"},
        host=host,
        callbacks=callbacks,
    )
    assert rolled["ok"] is True
    assert rolled["data"]["notation"] == "2d8+1" and rolled["data"]["label"] == "sneak"

    result = plugin_function_call(
        manifest=dice,
        runtime="dice",
        host=host,
        callbacks=callbacks,
        context={**CONTEXT, "manualPayload": {"count": 2, "sides": 6, "modifier": 1}},
    )
    assert result.outcome == "success"
    [operation] = result.operations
    assert (operation["kind"], operation["namespace"], operation["key"]) == ("set", "rolls", "t1")
    # Once the roll is stored, a retried turn reads it instead of rolling again.
    callbacks.data[("dice", "rolls")] = {"t1": {"total": 99}}
    retried = plugin_function_call(
        manifest=dice,
        runtime="dice",
        host=host,
        callbacks=callbacks,
        context={**CONTEXT, "seed": "other", "manualPayload": {"count": 2, "sides": 6}},
    )
    assert retried.result["value"] == {"total": 99} and retried.operations == []


def test_inventory_proposes_an_operation_based_write(host):
    envelope = plugin_tool_call(
        manifest=bundled("satchel"),
        tool="adjust-gold",
        args={"amount": 5, "reason": "sold a fish"},
        host=host,
        callbacks=InMemoryCallbacks(),
        context=CONTEXT,
    )
    [proposal] = envelope.pending_proposals
    assert proposal["payload"]["ops"] == [{"op": "inc", "by": 5, "min": 0}]
    assert envelope.content == {"balance": 5, "change": 5}


def test_notebook_saves_through_a_proposal_and_lists_through_its_action(host):
    notebook = bundled("notebook")
    callbacks = InMemoryCallbacks(
        data={("notebook", "notes"): {"gate": {"id": "gate", "text": "Locked."}}}
    )
    envelope = plugin_tool_call(
        manifest=notebook,
        tool="save-note",
        args={"id": "well", "text": "The well is dry."},
        host=host,
        callbacks=callbacks,
        context=CONTEXT,
    )
    assert envelope.pending_proposals[0]["payload"]["value"] == {
        "id": "well",
        "text": "The well is dry.",
    }
    listed = plugin_rpc_call(
        manifest=notebook, action="inspect-note", payload={}, host=host, callbacks=callbacks
    )
    assert listed == {"ok": True, "data": [{"id": "gate", "text": "Locked."}]}


def test_narrator_weather_and_word_count_handlers(host):
    callbacks = InMemoryCallbacks()
    narration = plugin_function_call(
        manifest=bundled("storyteller"),
        runtime="storyteller",
        host=host,
        callbacks=callbacks,
        context={**CONTEXT, "playerMessage": "I open the door."},
    )
    assert narration.outcome == "success" and narration.result["value"]["narrativeOutput"]
    repeat = plugin_function_call(
        manifest=bundled("storyteller"),
        runtime="storyteller",
        host=host,
        callbacks=callbacks,
        context={**CONTEXT, "playerMessage": "I open the door."},
    )
    assert repeat.result == narration.result

    weather = plugin_function_call(
        manifest=bundled("weather"),
        runtime="weather",
        host=host,
        callbacks=callbacks,
        context=CONTEXT,
    )
    assert weather.outcome == "success" and weather.result["value"]["summary"]

    counted = plugin_function_call(
        manifest=bundled("word-count"),
        runtime="word-count",
        host=host,
        callbacks=callbacks,
        context={
            **CONTEXT,
            "inputs": {
                "turn": {"value": {"playerMessage": "one two three", "narrativeText": "a b c d"}}
            },
        },
    )
    assert (
        counted.result["value"]["playerWords"] == 3 and counted.result["value"]["storyWords"] == 4
    )
    assert counted.operations[0]["namespace"] == "totals"


def test_scene_setter_handler_and_form_validator(host):
    scene = bundled("scene-setter")
    result = plugin_function_call(
        manifest=scene,
        runtime="scene-setter",
        host=host,
        callbacks=InMemoryCallbacks(),
        context=CONTEXT,
    )
    assert result.outcome == "success"
    [form] = result.result["effects"]["interactions"]
    assert form["validation"] == {"name": "scene-form"}
    assert result.operations[0]["key"] == "current"
    verdict = plugin_form_validate(
        manifest=scene, name="scene-form", values={"place": "", "mood": "x"}, host=host
    )
    assert not verdict.ok and {e["field"] for e in verdict.field_errors} == {"place", "mood"}


def test_chronicle_function_runtimes(host):
    chronicle = bundled("chronicle")
    callbacks = InMemoryCallbacks()
    archived = plugin_function_call(
        manifest=chronicle,
        runtime="archive",
        host=host,
        callbacks=callbacks,
        context={
            **CONTEXT,
            "inputs": {"summary": {"value": {"title": "Ch 1", "summary": "Things happened."}}},
        },
    )
    assert archived.outcome == "success" and archived.operations[0]["namespace"] == "chapters"
    indexed = plugin_function_call(
        manifest=chronicle,
        runtime="index",
        host=host,
        callbacks=callbacks,
        context={
            **CONTEXT,
            "inputs": {"digest": {"value": {"playerMessage": "hi", "narrativeText": "The story."}}},
        },
    )
    assert indexed.outcome == "success"


def test_inventory_write_service_stages_operations(host):
    from pluginhost.services import plugin_service_call

    satchel = bundled("satchel")
    callbacks = InMemoryCallbacks(
        data={
            ("satchel", "items"): {
                "brass-key": {"id": "brass-key", "name": "Brass Key", "quantity": 1}
            }
        }
    )
    result = plugin_service_call(
        manifest=satchel,
        contract="inventory.items@1",
        host=host,
        callbacks=callbacks,
        caller="storyteller",
        input={
            "changes": [
                {"op": "add", "name": "Brass Key", "quantity": 2},
                {"op": "add", "name": "Rope"},
                {"op": "remove", "name": "Lamp"},
            ]
        },
    )
    assert result.output["applied"] == [
        {"id": "brass-key", "name": "Brass Key", "quantity": 3},
        {"id": "rope", "name": "Rope", "quantity": 1},
    ]
    assert result.output["skipped"] == [{"name": "Lamp", "reason": "not in the satchel"}]
    assert [(op["kind"], op["key"]) for op in result.operations] == [
        ("update", "brass-key"),
        ("set", "rope"),
    ]
    assert callbacks.data[("satchel", "items")]["brass-key"]["quantity"] == 1  # staged, not saved


def test_weather_read_service_checks_its_input(host):
    from pluginhost.errors import PluginCallError
    from pluginhost.services import plugin_service_call

    weather = bundled("weather")
    report = plugin_service_call(
        manifest=weather,
        contract="weather-report@1",
        input={"city": "Harbor"},
        host=host,
        callbacks=InMemoryCallbacks(),
    )
    assert report.output["city"] == "Harbor" and report.operations == []
    with pytest.raises(PluginCallError) as caught:
        plugin_service_call(
            manifest=weather,
            contract="weather-report@1",
            input={"city": ""},
            host=host,
            callbacks=InMemoryCallbacks(),
        )
    assert caught.value.code == "invalid_service_input"
    assert caught.value.details[0]["path"] == "city"


def test_scene_setter_pre_commit_hook_refuses_an_oversized_scene(host):
    from pluginhost.services import plugin_hook_call

    scene = bundled("scene-setter")
    proposal = {
        "type": "plugin.data",
        "source": {"pluginId": "scene-setter"},
        "payload": {"namespace": "scene", "key": "current", "value": {"details": "x" * 5000}},
    }
    [verdict] = plugin_hook_call(
        manifest=scene,
        event="PreStateCommit",
        payload={"proposals": [proposal]},
        host=host,
        callbacks=InMemoryCallbacks(),
    )
    assert verdict["action"] == "abort" and "5000 characters" in verdict["reason"]
    proposal["payload"]["value"]["details"] = "short"
    assert plugin_hook_call(
        manifest=scene,
        event="PreStateCommit",
        payload={"proposals": [proposal]},
        host=host,
        callbacks=InMemoryCallbacks(),
    ) == [{"action": "continue"}]
    assert plugin_hook_call(
        manifest=scene, event="TurnStart", payload={}, host=host, callbacks=InMemoryCallbacks()
    ) == [{"action": "continue"}]
