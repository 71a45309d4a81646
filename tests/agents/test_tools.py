"""Which tools an agent runtime's model gets, built from its manifest (no model, no host)."""

from __future__ import annotations

from pathlib import Path

from agent_helpers import PLUGINS, load, write_toolbox

from agents.tools import build_toolset, event_directory, service_providers, service_tool_name

RING = {"name": "ring", "description": "Ring.", "jsonSchema": {"type": "object"}}


def names(bindings) -> list[str]:
    return [b.spec.name for b in bindings]


def test_dataset_tools_follow_each_datasets_ops(toolbox):
    toolset = build_toolset(
        manifest=toolbox,
        runtime=toolbox.runtimes[0],
        registered_tools=[RING],
        events=event_directory([toolbox]),
    )
    everything = names(toolset.offered) + names(toolset.deferred)
    # cards allows set and delete: get, list, upsert, update; counters asked for get and update.
    assert {
        "cards-get",
        "cards-list",
        "cards-upsert",
        "cards-update",
        "counters-get",
        "counters-update",
    } <= set(everything)
    assert "counters-upsert" not in everything and "counters-list" not in everything
    update = toolset.binding("counters-update").spec.parameters
    assert update["properties"]["ops"]["items"]["properties"]["op"]["enum"] == ["inc"]
    cards_update = toolset.binding("cards-update").spec.parameters
    assert cards_update["properties"]["ops"]["items"]["properties"]["op"]["enum"] == [
        "set",
        "delete",
    ]


def test_the_upsert_schema_is_the_dataset_schema_and_the_key_comes_from_the_record(toolbox):
    toolset = build_toolset(manifest=toolbox, runtime=toolbox.runtimes[0], registered_tools=[RING])
    params = toolset.binding("cards-upsert").spec.parameters
    assert params["required"] == ["value"]  # key: id, so the key is the record's id field
    assert params["properties"]["value"]["properties"]["text"] == {
        "type": "string",
        "maxLength": 40,
    }
    assert "$schema" not in params["properties"]["value"]


def test_defer_holds_named_tools_back_and_unknown_builtins_are_reported(toolbox):
    toolset = build_toolset(manifest=toolbox, runtime=toolbox.runtimes[0], registered_tools=[RING])
    assert names(toolset.deferred) == ["cards-upsert"]
    assert "cards-upsert" not in names(toolset.offered)
    assert {"emit-event", "create-notification", "create-form", "ring"} <= set(
        names(toolset.offered)
    )
    assert any("get-character is not available" in w for w in toolset.warnings)


def test_defer_true_defers_the_whole_whitelist(tmp_path: Path):
    manifest = load(write_toolbox(tmp_path, defer="true"))
    toolset = build_toolset(
        manifest=manifest, runtime=manifest.runtimes[0], registered_tools=[RING]
    )
    assert toolset.offered == []
    assert "ring" in names(toolset.deferred) and "emit-event" in names(toolset.deferred)


def test_an_unregistered_plugin_tool_is_left_out_with_a_warning(toolbox):
    toolset = build_toolset(manifest=toolbox, runtime=toolbox.runtimes[0], registered_tools=[])
    assert "ring" not in toolset.names
    assert any("ring is not registered" in w for w in toolset.warnings)


def test_a_single_runtime_package_gets_every_contributed_tool_when_plugin_is_omitted():
    notebook = load(PLUGINS / "notebook")
    save = {"name": "save-note", "description": "Save.", "jsonSchema": {"type": "object"}}
    toolset = build_toolset(
        manifest=notebook, runtime=notebook.runtimes[0], registered_tools=[save]
    )
    assert names(toolset.offered) == ["save-note"]


def test_services_are_named_by_as_or_by_the_contract_without_version():
    assert service_tool_name("inventory.items@1") == ("inventory.items@1", "inventory-items")
    assert (
        service_tool_name({"contract": "inventory.items@1", "as": "change-items"})[1]
        == "change-items"
    )
    satchel = load(PLUGINS / "satchel")
    toolset = build_toolset(
        manifest=satchel,
        runtime=satchel.runtimes[0],
        registered_tools=[],
        services=service_providers([satchel]),
    )
    spec = toolset.binding("change-items").spec
    # Without the host's registration, the contract's published schema describes the input.
    assert spec.parameters["required"] == ["changes"]
    assert "inventory.items@1" in spec.description


def test_a_service_without_an_active_provider_is_left_out():
    satchel = load(PLUGINS / "satchel")
    toolset = build_toolset(
        manifest=satchel, runtime=satchel.runtimes[0], registered_tools=[], services={}
    )
    assert "change-items" not in toolset.names
    assert any("no active provider" in w for w in toolset.warnings)


def test_a_write_service_is_left_out_of_a_run_that_cannot_change_its_data():
    satchel = load(PLUGINS / "satchel")
    toolset = build_toolset(
        manifest=satchel,
        runtime=satchel.runtimes[0],
        registered_tools=[],
        services=service_providers([satchel]),
        can_write={"satchel": False},
    )
    assert "change-items" not in toolset.names
    assert any("cannot change" in w for w in toolset.warnings)
