"""Documents against the schemas: a rich valid manifest passes, each kind of fault is caught
at its exact path with the rule (JSON Schema keyword) that failed."""

from __future__ import annotations

import copy
from collections.abc import Iterator
from typing import Any

import pytest
from jsonschema import ValidationError


def full_manifest() -> dict[str, Any]:
    """A manifest that uses almost every field and every alternative shape."""
    return {
        "id": "dice-check",
        "kind": "plugin",
        "version": "1.2.0",
        "covel": ">=0.0.45",
        "displayName": "Dice check",
        "description": "Rolls dice for skill checks.",
        "tags": ["mode:dialogue"],
        "author": {
            "name": "Jane Doe",
            "url": "https://example.com",
            "about": "I write small tools.",
            "links": [{"label": "Discord", "url": "https://example.com/community"}],
        },
        "license": "MIT",
        "homepage": "https://example.com/dice",
        "provides": ["dice.roll@1", {"contract": "dice.table@2", "default": True}],
        "requires": ["scene.state@1"],
        "conflicts": ["dice.roll@2"],
        "contracts": {"dice.roll@1": {"schema": "schemas/roll.json"}},
        "entry": "./server/index.js",
        "permissions": {
            "http": [{"origin": "https://api.example.com", "methods": ["GET", "POST"]}]
        },
        "contributes": {
            "tools": ["roll"],
            "actions": ["reroll"],
            "commands": [
                {
                    "name": "roll-dice",
                    "aliases": ["r"],
                    "description": "Roll some dice.",
                    "arguments": [
                        {
                            "name": "count",
                            "type": "integer",
                            "description": "How many",
                            "required": True,
                        },
                        {"name": "notes", "variadic": True, "choices": ["a", "b"]},
                    ],
                    "action": "reroll",
                    "context": ["session", "models"],
                }
            ],
            "actionKinds": [
                {
                    "name": "gesture",
                    "roles": ["player", "host"],
                    "text": "none",
                    "actor": False,
                    "schema": "schemas/gesture.json",
                    "display": {"label": "Gesture", "icon": "hand", "placeholder": "Wave…"},
                }
            ],
            "services": [
                "dice.roll@1",
                {"contract": "dice.table@2", "access": "write", "modelFacing": True},
            ],
            "extensions": [
                "prompt.segment@1/rules",
                {
                    "point": "ui.slot@1",
                    "id": "tray",
                    "order": -1,
                    "slot": "sidebar",
                    "watch": ["rolls"],
                    "preview": ["dice.rolled"],
                },
            ],
            "hooks": ["TurnStart", {"event": "PreToolUse", "enforce": "pre"}],
            "wires": ["dice-wire"],
            "forms": ["point-buy"],
            "events": [
                {
                    "topic": "dice.rolled",
                    "schema": "schemas/rolled.json",
                    "description": "A roll happened.",
                    "advertise": False,
                }
            ],
            "settings": [
                {
                    "key": "sides",
                    "type": "slider",
                    "label": "Sides",
                    "default": 20,
                    "min": 2,
                    "max": 100,
                    "step": 1,
                },
                {
                    "key": "style",
                    "type": "select",
                    "label": "Style",
                    "description": "How rolls look.",
                    "options": [{"value": "plain", "label": "Plain"}],
                },
                {"key": "model", "type": "slot", "label": "Model"},
            ],
            "datasets": {
                "rolls": {
                    "schema": "schemas/roll-record.json",
                    "key": "id",
                    "ops": ["set", "merge"],
                    "tools": ["get", "list", "upsert"],
                    "description": "Every roll.",
                }
            },
            "data": {
                "tables": {
                    "schema": "schemas/table.json",
                    "description": "Dice tables.",
                    "version": 2,
                    "accepts": ["dice.table@2"],
                    "authoring": {
                        "title": "Dice tables",
                        "summary": "Tables of outcomes.",
                        "hint": "One table per file.",
                        "example": "examples/table.json",
                        "source": {
                            "path": "data/tables/*.yaml",
                            "key": "id",
                            "localeArrayKeys": ["slug"],
                            "visibility": "hidden",
                            "lorebook": True,
                        },
                        "references": [
                            {
                                "path": "attributes[].id",
                                "to": "character-attribute",
                                "type": "number",
                                "within": ["min"],
                            },
                            {
                                "path": "when.**.dimension",
                                "to": "world-dimension",
                                "values": ["in[]"],
                            },
                        ],
                        "generate": "offer",
                    },
                    "search": {"text": "body"},
                }
            },
            "ui": {
                "view": ["ui/view.json"],
                "right": ["ui/right.json"],
                "message": [],
                "segment": [],
            },
            "worldProjections": {
                "tables-from-world": {
                    "from": "https://example.com/world-tables.schema.json",
                    "handler": "projections/tables.js",
                    "outputs": {"main": {"namespace": "tables", "key": "id"}},
                }
            },
            "prompt": [
                {"id": "rules", "content": "Roll fairly.", "position": "system", "role": "system"},
                {"id": "deep", "content": "Remember the dice.", "position": {"depth": 2}},
            ],
        },
        "runtime": {
            "description": "Reads the roll and narrates it.",
            "schedule": {
                "stage": "post-turn",
                "every": 2,
                "trigger": {
                    "type": "auto",
                    "maxTriggerCount": 10,
                    "cooldownTurns": 1,
                    "startTurn": 3,
                },
                "needs": [
                    "dice-check",
                    {"runtime": "dice-check", "scope": "turn"},
                    {"contract": "scene.state@1", "cardinality": "all"},
                ],
                "after": [{"runtime": "dice-check"}, {"contract": "scene.state@1"}],
                "detached": {
                    "settle": True,
                    "maxSettleWaitMs": 120000,
                    "maxQueueMs": 5000,
                    "maxExecutionMs": 60000,
                },
                "background": False,
                "subagentOnly": False,
            },
            "io": {
                "inputs": {
                    "digest": {"from": {"kernel": "turn-digest@1"}},
                    "scene": {
                        "from": {"contract": "scene.state@1"},
                        "required": False,
                        "select": "/scene",
                    },
                    "last": {
                        "from": {"runtime": "dice-check"},
                        "scope": "committed",
                        "recordAs": "last",
                    },
                },
                "selfData": [
                    {
                        "namespace": "tables",
                        "as": "<tables>",
                        "format": "ids-only",
                        "maxEntries": 10,
                    }
                ],
                "payloadSchema": "schemas/payload.json",
                "output": {
                    "contract": "dice.roll@1",
                    "schema": "schemas/out.json",
                    "recordAs": "last",
                },
                "visibility": "system",
                "concealed": True,
            },
            "agent": {
                "model": "utility",
                "toolChoice": {"name": "roll"},
                "reasoning": False,
                "history": {"includeSummaries": True, "maxTurns": 0},
                "tools": {
                    "builtin": ["emit-event"],
                    "plugin": ["roll"],
                    "defer": ["roll"],
                    "services": ["dice.table@2", {"contract": "dice.table@2", "as": "tables"}],
                    "datasets": ["rolls", {"dataset": "rolls", "tools": ["get"]}],
                },
                "advertiseEvents": True,
                "finishWith": "roll",
                "completion": {"require": "tool-use", "afterTools": ["roll"]},
                "loop": {
                    "maxSteps": 2,
                    "timeoutMs": 60000,
                    "callTimeoutMs": 30000,
                    "firstTokenTimeoutMs": 10000,
                    "idleTimeoutMs": 20000,
                    "maxRetries": 0,
                    "loopDetection": 0,
                    "maxRecursionDepth": 3,
                    "profile": "actor",
                    "stream": False,
                    "steering": False,
                    "truncation": "reject",
                    "fallback": "fail",
                    "corrections": {
                        "toolUse": 0,
                        "review": 1,
                        "loopPerturbation": 2,
                        "outputRepair": 0,
                    },
                    "finalizer": {"maxSteps": False, "deadlineReserveMs": 1000},
                },
            },
            "guard": "guard.js",
            "effects": {
                "reads": ["narrative:*", "plugin-data:self:tables"],
                "writes": ["event:dice.rolled"],
                "parallelSafe": True,
            },
            "permissions": {"http": [{"origin": "https://api.example.com"}]},
        },
    }


def function_runtime() -> dict[str, Any]:
    return {
        "description": "Summarises the turn.",
        "schedule": {
            "stage": "audit",
            "detached": True,
            "trigger": {"type": "event", "topic": "scene.set"},
        },
        "function": {
            "handler": "./handler.js",
            "model": "memory",
            "timeoutMs": 5000,
            "tools": {"builtin": ["x"], "defer": True},
        },
    }


def all_errors(errors: Iterator[ValidationError]) -> list[ValidationError]:
    """Errors with the per-branch errors of oneOf/anyOf flattened in."""
    out: list[ValidationError] = []
    for error in errors:
        out.append(error)
        out += all_errors(iter(error.context or []))
    return out


def pointer(error: ValidationError) -> str:
    return "".join(f"/{part}" for part in error.absolute_path)


def set_at(doc: dict[str, Any], path: str, value: Any) -> None:
    parts = [int(p) if p.isdigit() else p for p in path.strip("/").split("/")]
    node: Any = doc
    for part in parts[:-1]:
        node = node[part]
    node[parts[-1]] = value


def delete_at(doc: dict[str, Any], path: str) -> None:
    parts = [int(p) if p.isdigit() else p for p in path.strip("/").split("/")]
    node: Any = doc
    for part in parts[:-1]:
        node = node[part]
    del node[parts[-1]]


def test_the_full_manifest_is_valid(plugin_validator):
    assert [e.message for e in plugin_validator.iter_errors(full_manifest())] == []


def test_the_smallest_manifest_is_just_a_description(plugin_validator):
    assert plugin_validator.is_valid({"description": "Does one thing."})
    missing = list(plugin_validator.iter_errors({}))
    assert [(e.validator, e.message) for e in missing] == [
        ("required", "'description' is a required property")
    ]


def test_a_function_runtime_file_is_valid(runtime_validator, plugin_validator):
    assert [e.message for e in runtime_validator.iter_errors(function_runtime())] == []
    assert plugin_validator.is_valid({"description": "x", "runtime": function_runtime()})
    assert runtime_validator.is_valid({"function": {}})
    assert runtime_validator.is_valid({})


def test_a_runtime_file_refuses_package_keys(runtime_validator):
    errors = list(runtime_validator.iter_errors({"description": "x", "contributes": {}, "id": "a"}))
    assert [(pointer(e), e.validator) for e in errors] == [("", "additionalProperties")]
    assert "'contributes'" in errors[0].message and "'id'" in errors[0].message


# (path, value to set, or DELETE; expected pointer of the error; expected keyword)
DELETE = object()
FAULTS = [
    # unknown keys at several depths
    ("/unknown", 1, "", "additionalProperties"),
    ("/author/links/0/title", "x", "/author/links/0", "additionalProperties"),
    (
        "/contributes/commands/0/arguments/0/hint",
        "x",
        "/contributes/commands/0/arguments/0",
        "additionalProperties",
    ),
    (
        "/contributes/data/tables/authoring/source/format",
        "yaml",
        "/contributes/data/tables/authoring/source",
        "additionalProperties",
    ),
    (
        "/contributes/worldProjections/tables-from-world/outputs/main/extra",
        1,
        "/contributes/worldProjections/tables-from-world/outputs/main",
        "additionalProperties",
    ),
    (
        "/runtime/agent/loop/finalizer/extra",
        1,
        "/runtime/agent/loop/finalizer",
        "additionalProperties",
    ),
    (
        "/runtime/io/inputs/digest/from/scope",
        "turn",
        "/runtime/io/inputs/digest/from",
        "additionalProperties",
    ),
    ("/runtime/schedule/detached/retries", 2, "/runtime/schedule/detached", "additionalProperties"),
    ("/contributes/services/1/extra", True, "/contributes/services/1", "additionalProperties"),
    # wrong enums
    ("/kind", "library", "/kind", "enum"),
    ("/runtime/schedule/stage", "epilogue", "/runtime/schedule/stage", "enum"),
    ("/runtime/io/visibility", "plugin", "/runtime/io/visibility", "enum"),
    ("/contributes/settings/0/type", "color", "/contributes/settings/0/type", "enum"),
    ("/contributes/hooks/0", "OnTurn", "/contributes/hooks/0", "enum"),
    ("/permissions/http/0/methods/0", "get", "/permissions/http/0/methods/0", "enum"),
    (
        "/runtime/io/inputs/digest/from/kernel",
        "turn-digest@2",
        "/runtime/io/inputs/digest/from/kernel",
        "enum",
    ),
    ("/contributes/datasets/rolls/ops/0", "push", "/contributes/datasets/rolls/ops/0", "enum"),
    (
        "/runtime/agent/tools/datasets/1/tools/0",
        "delete",
        "/runtime/agent/tools/datasets/1/tools/0",
        "enum",
    ),
    ("/contributes/prompt/0/position", "middle", "/contributes/prompt/0/position", "enum"),
    ("/runtime/agent/toolChoice", "auto", "/runtime/agent/toolChoice", "const"),
    # missing required fields
    ("/description", DELETE, "", "required"),
    ("/author/name", DELETE, "/author", "required"),
    ("/contributes/commands/0/action", DELETE, "/contributes/commands/0", "required"),
    ("/contributes/actionKinds/0/display", DELETE, "/contributes/actionKinds/0", "required"),
    (
        "/contributes/data/tables/authoring/title",
        DELETE,
        "/contributes/data/tables/authoring",
        "required",
    ),
    ("/runtime/agent/history/maxTurns", DELETE, "/runtime/agent/history", "required"),
    ("/runtime/io/inputs/scene/from", DELETE, "/runtime/io/inputs/scene", "required"),
    (
        "/runtime/agent/tools/datasets/1/tools",
        DELETE,
        "/runtime/agent/tools/datasets/1",
        "required",
    ),
    # wrong types
    ("/tags", "mode:dialogue", "/tags", "type"),
    ("/version", 1.2, "/version", "type"),
    ("/contributes/events/0/advertise", "yes", "/contributes/events/0/advertise", "type"),
    ("/runtime/schedule/every", 1.5, "/runtime/schedule/every", "type"),
    ("/contributes/settings/0/min", "2", "/contributes/settings/0/min", "type"),
    ("/displayName", {"en": "Dice"}, "/displayName", "type"),
    ("/runtime/schedule/detached", "yes", "/runtime/schedule/detached", "type"),
    ("/runtime/agent/tools/defer", False, "/runtime/agent/tools/defer", "const"),
    # limits and syntaxes
    (
        "/author/links",
        [{"label": str(i), "url": "https://example.com"} for i in range(7)],
        "/author/links",
        "maxItems",
    ),
    (
        "/runtime/schedule/detached/maxSettleWaitMs",
        120001,
        "/runtime/schedule/detached/maxSettleWaitMs",
        "maximum",
    ),
    ("/runtime/agent/history/maxTurns", -1, "/runtime/agent/history/maxTurns", "minimum"),
    ("/permissions/http/0/methods", ["GET", "GET"], "/permissions/http/0/methods", "uniqueItems"),
    ("/runtime/effects/reads", ["state:*", "state:*"], "/runtime/effects/reads", "uniqueItems"),
    ("/requires/0", "Scene@1", "/requires/0", "pattern"),
    ("/provides/1/contract", "dice.table@0", "/provides/1/contract", "pattern"),
    # a bad map key: jsonschema reports the key's own rule at the map's path
    ("/contracts/dice", {"schema": "x.json"}, "/contracts", "pattern"),
    ("/contributes/commands/0/name", "/roll", "/contributes/commands/0/name", "pattern"),
    ("/contributes/events/0/topic", "Dice Rolled", "/contributes/events/0/topic", "pattern"),
    (
        "/contributes/worldProjections/tables-from-world/outputs",
        {},
        "/contributes/worldProjections/tables-from-world/outputs",
        "minProperties",
    ),
    ("/id", "Dice_Check", "/id", "pattern"),
]


@pytest.mark.parametrize(
    ("path", "value", "where", "keyword"), FAULTS, ids=[f"{f[0]}:{f[3]}" for f in FAULTS]
)
def test_each_fault_is_reported_at_its_path(plugin_validator, path, value, where, keyword):
    doc = copy.deepcopy(full_manifest())
    if value is DELETE:
        delete_at(doc, path)
    else:
        set_at(doc, path, value)
    errors = all_errors(plugin_validator.iter_errors(doc))
    assert errors, "the fault was accepted"
    found = [(pointer(e), e.validator) for e in errors]
    assert (where, keyword) in found, found


def test_a_needs_entry_cannot_mix_both_forms(plugin_validator):
    doc = full_manifest()
    doc["runtime"]["schedule"]["needs"] = [{"runtime": "dice-check", "contract": "scene.state@1"}]
    errors = list(plugin_validator.iter_errors(doc))
    assert [(pointer(e), e.validator) for e in errors] == [("/runtime/schedule/needs/0", "oneOf")]


def test_a_kernel_input_takes_no_other_key(plugin_validator):
    doc = full_manifest()
    doc["runtime"]["io"]["inputs"]["digest"]["from"] = {"kernel": "operations@1", "contract": "a@1"}
    assert not plugin_validator.is_valid(doc)
    doc["runtime"]["io"]["inputs"]["digest"]["from"] = {"kernel": "operations@1"}
    assert plugin_validator.is_valid(doc)


def test_effect_resources_may_be_named_or_free_form(plugin_validator):
    doc = full_manifest()
    doc["runtime"]["effects"] = {
        "reads": ["state:*", "plugin-data:self:x"],
        "writes": ["unknown:*"],
    }
    assert plugin_validator.is_valid(doc)  # anyOf: a listed resource also matches the string form
    doc["runtime"]["effects"]["reads"] = [""]
    assert not plugin_validator.is_valid(doc)


def test_a_setting_default_may_be_any_value(plugin_validator):
    for value in (None, 0, "x", [1], {"a": 1}, True):
        doc = full_manifest()
        doc["contributes"]["settings"][0]["default"] = value
        assert plugin_validator.is_valid(doc), value
