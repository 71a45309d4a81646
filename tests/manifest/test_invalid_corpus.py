"""The invalid-package corpus: one package per rule and per schema feature.

Each case starts from the valid BASE package (tests/manifest/conftest.py), breaks one thing and
states the complete list of errors it must produce: file, JSON pointer and code, exactly.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from catalogue.manifest import load_package

from .conftest import BASE, BASE_FILES, codes, drop, put, write_package

P = "PLUGIN.md"


@dataclass
class Case:
    id: str
    set: dict[str, Any] = field(default_factory=dict)
    drop: list[str] = field(default_factory=list)
    expect: list[tuple[str, str, str]] = field(default_factory=list)
    files: dict[str, str] = field(default_factory=dict)
    runtimes: dict[str, Any] = field(default_factory=dict)
    name: str = "notes"
    no_files: list[str] = field(default_factory=list)


RT_A = {"schedule": {"stage": "post-turn"}, "agent": {}}
# A valid authoring example of the facts namespace (its schema is NOTE_SCHEMA).
FACTS_EXAMPLE = json.dumps([{"id": "gate-is-locked", "text": "The gate is locked at dusk."}])
RT_B = {"schedule": {"stage": "audit"}, "agent": {}}

CASES = [
    # ---------------------------------------------------------------- schema features
    Case("unknown-field-top", set={"/colour": "red"}, expect=[(P, "/colour", "unknown-field")]),
    Case(
        "unknown-field-depth-2",
        set={"/author/nickname": "J"},
        expect=[(P, "/author/nickname", "unknown-field")],
    ),
    Case(
        "unknown-field-depth-5",
        set={"/contributes/commands/0/arguments/0/kind": "word"},
        expect=[(P, "/contributes/commands/0/arguments/0/kind", "unknown-field")],
    ),
    Case(
        "unknown-field-in-runtime",
        set={"/runtime/agent/loop": {"maxStep": 2}},
        expect=[(P, "/runtime/agent/loop/maxStep", "unknown-field")],
    ),
    Case(
        "unknown-field-in-runtime-file",
        drop=["/runtime"],
        runtimes={"a": {**RT_A, "schedule": {"stage": "post-turn", "when": "now"}}},
        expect=[("runtimes/a/RUNTIME.md", "/schedule/when", "unknown-field")],
    ),
    Case("not-in-enum-kind", set={"/kind": "library"}, expect=[(P, "/kind", "not-in-enum")]),
    Case(
        "not-in-enum-stage",
        set={"/runtime/schedule/stage": "later"},
        expect=[(P, "/runtime/schedule/stage", "not-in-enum")],
    ),
    Case(
        "not-in-enum-setting-type",
        set={"/contributes/settings/1/type": "colour"},
        expect=[(P, "/contributes/settings/1/type", "not-in-enum")],
    ),
    Case(
        "required-missing-description",
        drop=["/description"],
        expect=[(P, "/description", "required-field-missing")],
    ),
    Case(
        "required-missing-nested",
        drop=["/contributes/commands/0/description"],
        expect=[(P, "/contributes/commands/0/description", "required-field-missing")],
    ),
    Case(
        "required-missing-author-name",
        drop=["/author/name"],
        expect=[(P, "/author/name", "required-field-missing")],
    ),
    Case("wrong-type-version", set={"/version": 1.5}, expect=[(P, "/version", "wrong-type")]),
    Case(
        "wrong-type-list",
        set={"/contributes/tools": "save-note"},
        expect=[(P, "/contributes/tools", "wrong-type")],
    ),
    Case(
        "wrong-type-deep",
        set={"/runtime/agent/history/maxTurns": "two"},
        expect=[(P, "/runtime/agent/history/maxTurns", "wrong-type")],
    ),
    Case(
        "one-of-wrong-type",
        set={"/runtime/schedule/needs": [5]},
        expect=[(P, "/runtime/schedule/needs/0", "wrong-type")],
    ),
    Case(
        "one-of-best-branch-enum",
        set={"/runtime/io/inputs/turn": {"from": {"kernel": "turn-digest@9"}}},
        expect=[(P, "/runtime/io/inputs/turn/from/kernel", "not-in-enum")],
    ),
    Case(
        "one-of-best-branch-unknown-field",
        set={"/runtime/schedule/after": [{"contract": "narrative-engine@2", "scope": "turn"}]},
        expect=[(P, "/runtime/schedule/after/0/scope", "unknown-field")],
    ),
    # ---------------------------------------------------------------- id
    Case("id-mismatch", set={"/id": "other"}, expect=[(P, "/id", "id-mismatch")]),
    Case("id-syntax-written", set={"/id": "Bad_Id"}, expect=[(P, "/id", "id-syntax")]),
    Case("id-syntax-folder", name="Bad_Name", expect=[(P, "", "id-syntax")]),
    Case("id-too-long-folder", name="x" * 101, expect=[(P, "", "id-too-long")]),
    Case("id-reserved-folder", name="framework", expect=[(P, "", "id-reserved")]),
    Case(
        "id-reserved-written",
        name="framework",
        set={"/id": "framework"},
        expect=[(P, "/id", "id-reserved")],
    ),
    # ---------------------------------------------------------------- tags, urls, origins
    Case(
        "tag-role",
        set={"/tags": ["mode:x", "role:storyteller"]},
        expect=[(P, "/tags/1", "tag-role-forbidden")],
    ),
    Case(
        "author-url-http",
        set={"/author/url": "http://example.com"},
        expect=[(P, "/author/url", "url-not-https")],
    ),
    Case(
        "author-link-ftp",
        set={"/author/links/0/url": "ftp://example.com/x"},
        expect=[(P, "/author/links/0/url", "url-not-https")],
    ),
    Case(
        "homepage-http",
        set={"/homepage": "http://example.com"},
        expect=[(P, "/homepage", "url-not-https")],
    ),
    Case(
        "homepage-credentials",
        set={"/homepage": "https://user:pw@example.com/"},
        expect=[(P, "/homepage", "url-has-credentials")],
    ),
    Case(
        "homepage-no-host",
        set={"/homepage": "https:///path"},
        expect=[(P, "/homepage", "url-invalid")],
    ),
    Case(
        "too-many-author-links",
        set={
            "/author/links": [
                {"label": f"L{i}", "url": f"https://example.com/{i}"} for i in range(7)
            ]
        },
        expect=[(P, "/author/links", "too-many-author-links")],
    ),
    Case(
        "origin-http",
        set={"/permissions/http/0/origin": "http://api.example.com"},
        expect=[(P, "/permissions/http/0/origin", "origin-not-https")],
    ),
    Case(
        "origin-path",
        set={"/permissions/http/0/origin": "https://api.example.com/v1"},
        expect=[(P, "/permissions/http/0/origin", "origin-not-canonical")],
    ),
    Case(
        "origin-query",
        set={"/permissions/http/0/origin": "https://api.example.com?key=1"},
        expect=[(P, "/permissions/http/0/origin", "origin-not-canonical")],
    ),
    Case(
        "origin-fragment",
        set={"/permissions/http/0/origin": "https://api.example.com#x"},
        expect=[(P, "/permissions/http/0/origin", "origin-not-canonical")],
    ),
    Case(
        "origin-trailing-slash",
        set={"/permissions/http/0/origin": "https://api.example.com/"},
        expect=[(P, "/permissions/http/0/origin", "origin-not-canonical")],
    ),
    Case(
        "origin-userinfo",
        set={"/permissions/http/0/origin": "https://me@api.example.com"},
        expect=[(P, "/permissions/http/0/origin", "origin-has-credentials")],
    ),
    Case(
        "origin-runtime-level",
        set={"/runtime/permissions": {"http": [{"origin": "https://api.example.com:8443/x"}]}},
        expect=[(P, "/runtime/permissions/http/0/origin", "origin-not-canonical")],
    ),
    Case(
        "duplicate-origin",
        set={"/permissions/http/1": {"origin": "https://api.example.com"}},
        expect=[(P, "/permissions/http/1/origin", "duplicate-origin")],
    ),
    Case(
        "duplicate-http-method",
        set={"/permissions/http/0/methods": ["GET", "POST", "GET"]},
        expect=[(P, "/permissions/http/0/methods/2", "duplicate-http-method")],
    ),
    # ---------------------------------------------------------------- commands, settings, kinds
    Case(
        "command-action-undeclared",
        set={"/contributes/commands/0/action": "other-action"},
        expect=[(P, "/contributes/commands/0/action", "command-action-undeclared")],
    ),
    Case(
        "duplicate-argument",
        set={"/contributes/commands/0/arguments": [{"name": "a"}, {"name": "a"}]},
        expect=[(P, "/contributes/commands/0/arguments/1/name", "duplicate-argument")],
    ),
    Case(
        "variadic-not-last",
        set={"/contributes/commands/0/arguments": [{"name": "a", "variadic": True}, {"name": "b"}]},
        expect=[(P, "/contributes/commands/0/arguments/0/variadic", "variadic-not-last")],
    ),
    Case(
        "duplicate-command",
        set={
            "/contributes/commands/1": {
                "name": "notes",
                "aliases": ["note"],
                "description": "d",
                "action": "inspect-note",
            }
        },
        expect=[(P, "/contributes/commands/1/aliases/0", "duplicate-command")],
    ),
    Case(
        "select-needs-options",
        drop=["/contributes/settings/0/options"],
        expect=[(P, "/contributes/settings/0/options", "select-needs-options")],
    ),
    Case(
        "select-default-not-option",
        set={"/contributes/settings/0/default": "medium"},
        expect=[(P, "/contributes/settings/0/default", "setting-default-invalid")],
    ),
    Case(
        "integer-default-out-of-range",
        set={"/contributes/settings/1/default": 11},
        expect=[(P, "/contributes/settings/1/default", "setting-default-invalid")],
    ),
    Case(
        "setting-min-above-max",
        set={"/contributes/settings/1/min": 10, "/contributes/settings/1/max": 1},
        drop=["/contributes/settings/1/default"],
        expect=[(P, "/contributes/settings/1/min", "setting-range-invalid")],
    ),
    Case(
        "setting-field-not-allowed",
        set={
            "/contributes/settings/2": {
                "key": "on",
                "type": "toggle",
                "label": "On",
                "min": 0,
                "options": [],
            }
        },
        expect=[
            (P, "/contributes/settings/2/options", "setting-field-not-allowed"),
            (P, "/contributes/settings/2/min", "setting-field-not-allowed"),
        ],
    ),
    Case(
        "duplicate-setting-key",
        set={"/contributes/settings/1/key": "style"},
        expect=[(P, "/contributes/settings/1/key", "duplicate-setting-key")],
    ),
    Case(
        "duplicate-option",
        set={"/contributes/settings/0/options/1/value": "short"},
        expect=[(P, "/contributes/settings/0/options/1/value", "duplicate-option")],
    ),
    Case(
        "action-kind-reserved",
        set={"/contributes/actionKinds": [{"name": "say", "display": {"label": "Say"}}]},
        expect=[(P, "/contributes/actionKinds/0/name", "action-kind-reserved")],
    ),
    Case(
        "duplicate-action-kind",
        set={
            "/contributes/actionKinds": [
                {"name": "cast", "display": {"label": "Cast"}},
                {"name": "cast", "display": {"label": "Cast again"}},
            ]
        },
        expect=[(P, "/contributes/actionKinds/1/name", "duplicate-action-kind")],
    ),
    Case(
        "duplicate-event-topic",
        set={
            "/contributes/events/1": {
                "topic": "note.saved",
                "schema": "./schemas/note.schema.json",
                "description": "x",
            }
        },
        expect=[(P, "/contributes/events/1/topic", "duplicate-event-topic")],
    ),
    Case(
        "duplicate-prompt-id",
        set={
            "/contributes/prompt": [
                {"id": "p", "content": "a", "position": "system"},
                {"id": "p", "content": "b", "position": "system"},
            ]
        },
        expect=[(P, "/contributes/prompt/1/id", "duplicate-prompt-id")],
    ),
    Case(
        "entry-missing",
        no_files=["server/index.js"],
        expect=[(P, "/contributes/tools", "entry-missing")],
    ),
    # ---------------------------------------------------------------- datasets and data
    Case(
        "dataset-tool-not-allowed",
        set={"/contributes/datasets/notes/tools": ["get", "update"]},
        expect=[(P, "/contributes/datasets/notes/tools/1", "dataset-tool-not-allowed")],
    ),
    Case(
        "dataset-key-unknown",
        set={"/contributes/datasets/notes/key": "slug"},
        expect=[(P, "/contributes/datasets/notes/key", "dataset-key-unknown")],
    ),
    Case(
        "dataset-unknown-by-name",
        set={"/runtime/agent/tools/datasets": ["ghosts"]},
        expect=[(P, "/runtime/agent/tools/datasets/0", "dataset-unknown")],
    ),
    Case(
        "dataset-unknown-by-object",
        set={"/runtime/agent/tools/datasets": [{"dataset": "ghosts", "tools": ["get"]}]},
        expect=[(P, "/runtime/agent/tools/datasets/0/dataset", "dataset-unknown")],
    ),
    Case(
        "dataset-tool-not-offered",
        set={"/runtime/agent/tools/datasets": [{"dataset": "notes", "tools": ["get", "update"]}]},
        expect=[(P, "/runtime/agent/tools/datasets/0/tools/1", "dataset-tool-not-offered")],
    ),
    Case(
        "authoring-source-conflict",
        set={
            "/contributes/data/facts/authoring": {
                "title": "Facts",
                "characterField": "facts",
                "source": {"path": "data/facts.yaml"},
            }
        },
        expect=[
            (P, "/contributes/data/facts/authoring/characterField", "authoring-source-conflict")
        ],
    ),
    Case(
        "authoring-source-reserved",
        set={
            "/contributes/data/facts/authoring": {
                "title": "Facts",
                "source": {"path": "data/lorebook.zh.yaml"},
            }
        },
        expect=[(P, "/contributes/data/facts/authoring/source/path", "authoring-source-reserved")],
    ),
    Case(
        "authoring-generate-needs-example",
        set={
            "/contributes/data/facts/authoring": {
                "title": "Facts",
                "generate": "offer",
                "source": {"path": "data/facts.yaml"},
            }
        },
        expect=[
            (P, "/contributes/data/facts/authoring/example", "authoring-generate-needs-example")
        ],
    ),
    Case(
        "authoring-generate-needs-source",
        set={
            "/contributes/data/facts/authoring": {
                "title": "Facts",
                "generate": "default",
                "example": "./examples/facts.json",
                "source": {"path": "media/facts"},
            }
        },
        files={"examples/facts.json": FACTS_EXAMPLE},
        expect=[
            (P, "/contributes/data/facts/authoring/generate", "authoring-generate-needs-source")
        ],
    ),
    Case(
        "authoring-example-invalid",
        set={
            "/contributes/data/facts/authoring": {
                "title": "Facts",
                "example": "./examples/facts.json",
            }
        },
        files={"examples/facts.json": json.dumps([{"id": "gate", "text": 5}])},
        expect=[(P, "/contributes/data/facts/authoring/example", "authoring-example-invalid")],
    ),
    Case(
        "authoring-example-unchecked",
        set={
            "/contributes/data/facts/schema": "./schemas/facts.schema.json",
            "/contributes/data/facts/authoring": {
                "title": "Facts",
                "example": "./examples/facts.json",
            },
        },
        files={
            "examples/facts.json": FACTS_EXAMPLE,
            "schemas/facts.schema.json": json.dumps({"$ref": "https://example.com/fact.json"}),
        },
        expect=[
            (P, "/contributes/data/facts/authoring/example", "authoring-example-unchecked"),
            ("schemas/facts.schema.json", "/$ref", "schema-ref-outside"),
        ],
    ),
    # Schema files are parsed and checked by validate_plugin, not first in a turn.
    Case(
        "schema-ref-cycle",
        set={"/contributes/data/facts/schema": "./schemas/facts.schema.json"},
        files={
            "schemas/facts.schema.json": json.dumps(
                {
                    "$defs": {"a": {"$ref": "#/$defs/b"}, "b": {"anyOf": [{"$ref": "#/$defs/a"}]}},
                    "$ref": "#/$defs/a",
                }
            )
        },
        expect=[("schemas/facts.schema.json", "/$defs/b/anyOf/0/$ref", "schema-ref-cycle")],
    ),
    Case(
        "schema-ref-outside",
        set={"/contributes/data/facts/schema": "./schemas/facts.schema.json"},
        files={
            "schemas/facts.schema.json": json.dumps(
                {"properties": {"who": {"$ref": "../../secret.json"}}}
            )
        },
        expect=[("schemas/facts.schema.json", "/properties/who/$ref", "schema-ref-outside")],
    ),
    Case(
        "schema-ref-unresolvable",
        set={"/contributes/data/facts/schema": "./schemas/facts.schema.json"},
        files={"schemas/facts.schema.json": json.dumps({"items": {"$ref": "#/$defs/none"}})},
        expect=[("schemas/facts.schema.json", "/items/$ref", "schema-ref-unresolvable")],
    ),
    Case(
        "schema-not-json",
        set={"/contributes/data/facts/schema": "./schemas/facts.schema.json"},
        files={"schemas/facts.schema.json": "{type: object}"},
        expect=[("schemas/facts.schema.json", "", "schema-not-json")],
    ),
    Case(
        "schema-invalid",
        set={"/contributes/data/facts/schema": "./schemas/facts.schema.json"},
        files={"schemas/facts.schema.json": json.dumps({"properties": {"n": {"minimum": "1"}}})},
        expect=[("schemas/facts.schema.json", "/properties/n/minimum", "schema-invalid")],
    ),
    Case(
        "schema-too-large",
        set={"/contributes/data/facts/schema": "./schemas/facts.schema.json"},
        files={
            "schemas/facts.schema.json": json.dumps({"description": "x" * (256 * 1024)}),
        },
        expect=[("schemas/facts.schema.json", "", "schema-too-large")],
    ),
    Case(
        "schema-too-complex",
        set={"/contributes/data/facts/schema": "./schemas/facts.schema.json"},
        files={"schemas/facts.schema.json": '{"not":' * 70 + "{}" + "}" * 70},
        expect=[("schemas/facts.schema.json", "/not" * 65, "schema-too-complex")],
    ),
    Case(
        "authoring-source-path-invalid",
        set={
            "/contributes/data/facts/authoring": {
                "title": "Facts",
                "source": {"path": "data/**/*.yaml"},
            }
        },
        expect=[
            (P, "/contributes/data/facts/authoring/source/path", "authoring-source-path-invalid")
        ],
    ),
    Case(
        "reference-type-not-allowed",
        set={
            "/contributes/data/facts/authoring": {
                "title": "Facts",
                "references": [{"path": "dim", "to": "world-dimension", "type": "number"}],
            }
        },
        expect=[
            (
                P,
                "/contributes/data/facts/authoring/references/0/type",
                "reference-field-not-allowed",
            )
        ],
    ),
    Case(
        "namespace-undeclared-self-data",
        set={"/runtime/io/selfData": [{"namespace": "ghosts", "as": "<ghosts>"}]},
        expect=[(P, "/runtime/io/selfData/0/namespace", "namespace-undeclared")],
    ),
    Case(
        "namespace-undeclared-projection",
        set={
            "/contributes/worldProjections": {
                "p": {
                    "from": "https://example.com/s",
                    "handler": "./server/index.js",
                    "outputs": {"o": {"namespace": "ghosts", "key": "id"}},
                }
            }
        },
        expect=[(P, "/contributes/worldProjections/p/outputs/o/namespace", "namespace-undeclared")],
    ),
    # ---------------------------------------------------------------- contracts and host range
    Case(
        "contract-requires",
        set={"/requires/0": "narrative-engine"},
        expect=[(P, "/requires/0", "contract-id-syntax")],
    ),
    Case(
        "contract-provides",
        set={"/provides": ["notes@0"]},
        expect=[(P, "/provides/0", "contract-id-syntax")],
    ),
    Case(
        "contract-provides-object",
        set={"/provides": [{"contract": "Notes@1", "default": True}]},
        expect=[(P, "/provides/0/contract", "contract-id-syntax")],
    ),
    Case(
        "contract-conflicts",
        set={"/conflicts": ["x@1.5"]},
        expect=[(P, "/conflicts/0", "contract-id-syntax")],
    ),
    Case(
        "contract-map-key",
        set={"/contracts/notes-view": {"schema": "./schemas/note.schema.json"}},
        expect=[(P, "/contracts/notes-view", "contract-id-syntax")],
    ),
    Case(
        "contract-output",
        set={"/runtime/io/output": {"contract": "notes"}},
        expect=[(P, "/runtime/io/output/contract", "contract-id-syntax")],
    ),
    Case(
        "contract-input-from",
        set={"/runtime/io/inputs/narrative/from/contract": "narrative@x"},
        expect=[(P, "/runtime/io/inputs/narrative/from/contract", "contract-id-syntax")],
    ),
    Case(
        "contract-accepts",
        set={"/runtime/io/inputs/narrative/accepts": "contract:narrative"},
        expect=[(P, "/runtime/io/inputs/narrative/accepts", "contract-id-syntax")],
    ),
    Case(
        "contract-needs",
        set={"/runtime/schedule/needs": [{"contract": "engine"}]},
        expect=[(P, "/runtime/schedule/needs/0/contract", "contract-id-syntax")],
    ),
    Case(
        "contract-services",
        set={"/contributes/services": [{"contract": "notes", "access": "read"}]},
        expect=[(P, "/contributes/services/0/contract", "contract-id-syntax")],
    ),
    Case(
        "contract-agent-services",
        set={"/runtime/agent/tools/services": ["inventory.items"]},
        expect=[(P, "/runtime/agent/tools/services/0", "contract-id-syntax")],
    ),
    Case(
        "contract-data-accepts",
        set={"/contributes/data/facts/accepts": ["facts"]},
        expect=[(P, "/contributes/data/facts/accepts/0", "contract-id-syntax")],
    ),
    Case(
        "host-range-invalid", set={"/covel": "~0.1"}, expect=[(P, "/covel", "host-range-invalid")]
    ),
    Case(
        "host-range-unsupported",
        set={"/covel": ">=0.2.0"},
        expect=[(P, "/covel", "host-version-unsupported")],
    ),
    Case(
        "host-range-upper",
        set={"/covel": ">=0.0.1 <0.1.0"},
        expect=[(P, "/covel", "host-version-unsupported")],
    ),
    # ---------------------------------------------------------------- package-relative paths
    Case(
        "path-missing-contract-schema",
        set={"/contracts/notes.view@1/schema": "./schemas/none.json"},
        expect=[(P, "/contracts/notes.view@1/schema", "path-missing")],
    ),
    Case(
        "path-absolute-event-schema",
        set={"/contributes/events/0/schema": "/etc/passwd"},
        expect=[(P, "/contributes/events/0/schema", "path-absolute")],
    ),
    Case(
        "path-dotdot-dataset-schema",
        set={"/contributes/datasets/notes/schema": "../notes/schemas/note.schema.json"},
        expect=[(P, "/contributes/datasets/notes/schema", "path-escapes")],
    ),
    Case(
        "path-missing-data-schema",
        set={"/contributes/data/facts/schema": "schemas/facts.json"},
        expect=[(P, "/contributes/data/facts/schema", "path-missing")],
    ),
    Case(
        "path-missing-action-kind-schema",
        set={
            "/contributes/actionKinds": [
                {"name": "cast", "schema": "./cast.json", "display": {"label": "Cast"}}
            ]
        },
        expect=[(P, "/contributes/actionKinds/0/schema", "path-missing")],
    ),
    Case(
        "path-missing-payload-schema",
        set={"/runtime/io/payloadSchema": "./payload.json"},
        expect=[(P, "/runtime/io/payloadSchema", "path-missing")],
    ),
    Case(
        "path-missing-output-schema",
        set={"/runtime/io/output": {"schema": "./out.json"}},
        expect=[(P, "/runtime/io/output/schema", "path-missing")],
    ),
    Case(
        "path-missing-accepts",
        set={"/runtime/io/inputs/narrative/accepts": "./narrative.schema.json"},
        expect=[(P, "/runtime/io/inputs/narrative/accepts", "path-missing")],
    ),
    Case(
        "path-missing-handler",
        set={"/runtime": {"schedule": {"stage": "post-turn"}, "function": {"handler": "./fn.js"}}},
        expect=[(P, "/runtime/function/handler", "path-missing")],
    ),
    Case(
        "path-missing-guard",
        set={"/runtime/guard": "./guard.js"},
        expect=[(P, "/runtime/guard", "path-missing")],
    ),
    Case(
        "path-missing-entry",
        set={"/entry": "./server/main.js"},
        expect=[(P, "/entry", "path-missing")],
    ),
    Case("path-folder-entry", set={"/entry": "./server"}, expect=[(P, "/entry", "path-missing")]),
    Case(
        "path-missing-ui",
        set={"/contributes/ui/view": ["./ui/missing.json"]},
        expect=[(P, "/contributes/ui/view/0", "path-missing")],
    ),
    Case(
        "path-missing-authoring-example",
        set={
            "/contributes/data/facts/authoring": {
                "title": "Facts",
                "example": "./examples/facts.json",
            }
        },
        expect=[(P, "/contributes/data/facts/authoring/example", "path-missing")],
    ),
    Case(
        "path-missing-projection-handler",
        set={
            "/contributes/worldProjections": {
                "p": {
                    "from": "https://example.com/s",
                    "handler": "./project.js",
                    "outputs": {"o": {"namespace": "facts", "key": "id"}},
                }
            }
        },
        expect=[(P, "/contributes/worldProjections/p/handler", "path-missing")],
    ),
    # ---------------------------------------------------------------- runtimes
    Case(
        "function-with-agent",
        set={"/runtime/function": {}},
        files={"handler.js": "export default () => ({})"},
        expect=[(P, "/runtime/agent", "function-with-agent")],
    ),
    Case(
        "handler-missing",
        set={"/runtime": {"schedule": {"stage": "post-turn"}, "function": {}}},
        expect=[(P, "/runtime/function/handler", "handler-missing")],
    ),
    Case(
        "finish-with-and-completion",
        set={"/runtime/agent/completion": {"require": "explicit"}},
        expect=[(P, "/runtime/agent/completion", "finish-with-and-completion")],
    ),
    Case(
        "detached-wrong-stage",
        set={"/runtime/schedule": {"stage": "narrative", "detached": True}},
        expect=[(P, "/runtime/schedule/detached", "detached-stage")],
    ),
    Case(
        "settle-wait-too-long",
        set={"/runtime/schedule/detached": {"settle": True, "maxSettleWaitMs": 120001}},
        expect=[(P, "/runtime/schedule/detached/maxSettleWaitMs", "settle-wait-too-long")],
    ),
    Case(
        "settle-wait-without-settle",
        set={"/runtime/schedule/detached": {"maxSettleWaitMs": 5000}},
        expect=[(P, "/runtime/schedule/detached/maxSettleWaitMs", "settle-wait-without-settle")],
    ),
    Case(
        "subagent-only-stage",
        set={"/runtime/schedule/subagentOnly": True},
        expect=[(P, "/runtime/schedule/stage", "subagent-only-conflict")],
    ),
    Case(
        "subagent-only-trigger",
        set={
            "/runtime/schedule": {
                "subagentOnly": True,
                "trigger": {"type": "event", "topic": "note.saved"},
            }
        },
        expect=[(P, "/runtime/schedule/trigger/type", "subagent-only-conflict")],
    ),
    Case(
        "subagent-only-needs-after-background",
        set={
            "/runtime/schedule": {
                "subagentOnly": True,
                "needs": [{"contract": "narrative-engine@2"}],
                "after": [{"contract": "narrative-engine@2"}],
                "background": True,
            }
        },
        expect=[
            (P, "/runtime/schedule/needs", "subagent-only-conflict"),
            (P, "/runtime/schedule/after", "subagent-only-conflict"),
            (P, "/runtime/schedule/background", "subagent-only-conflict"),
        ],
    ),
    Case(
        "subagent-only-record-as-guard",
        set={
            "/runtime/schedule": {"subagentOnly": True},
            "/runtime/io/output": {"schema": "./schemas/note.schema.json", "recordAs": "last"},
            "/runtime/guard": "./guard.js",
        },
        files={"guard.js": "export default () => true"},
        expect=[
            (P, "/runtime/io/output/recordAs", "subagent-only-conflict"),
            (P, "/runtime/guard", "subagent-only-conflict"),
        ],
    ),
    Case(
        "subagent-only-story",
        set={
            "/runtime/schedule": {"subagentOnly": True},
            "/runtime/io/visibility": "story",
            "/runtime/io/inputs/narrative/required": False,
        },
        expect=[(P, "/runtime/io/visibility", "subagent-only-conflict")],
    ),
    Case(
        "subagent-only-function",
        set={"/runtime": {"schedule": {"subagentOnly": True}, "function": {}}},
        files={"handler.js": "export default () => ({})"},
        expect=[(P, "/runtime/function", "subagent-only-not-agent")],
    ),
    Case(
        "concealed-story",
        set={
            "/runtime/io/visibility": "story",
            "/runtime/io/concealed": True,
            "/runtime/io/inputs/narrative/required": False,
        },
        expect=[(P, "/runtime/io/concealed", "concealed-story")],
    ),
    Case(
        "story-contract-input-required",
        set={"/runtime/io/visibility": "story"},
        expect=[(P, "/runtime/io/inputs/narrative/required", "story-contract-input-required")],
    ),
    Case(
        "committed-input-needs-record-as",
        set={
            "/runtime/io/inputs/narrative": {
                "from": {"contract": "narrative-engine@2"},
                "scope": "committed",
            }
        },
        expect=[(P, "/runtime/io/inputs/narrative/recordAs", "committed-input-needs-record-as")],
    ),
    Case(
        "committed-input-select",
        set={
            "/runtime/io/inputs/narrative/scope": "committed",
            "/runtime/io/inputs/narrative/recordAs": "narrative",
        },
        expect=[(P, "/runtime/io/inputs/narrative/select", "committed-input-select")],
    ),
    Case(
        "select-not-pointer",
        set={"/runtime/io/inputs/narrative/select": "narrativeOutput"},
        expect=[(P, "/runtime/io/inputs/narrative/select", "select-not-pointer")],
    ),
    Case(
        "kernel-input-extra-field",
        set={
            "/runtime/io/inputs/turn": {
                "from": {"kernel": "turn-digest@1"},
                "select": "/playerMessage",
            }
        },
        expect=[(P, "/runtime/io/inputs/turn/select", "kernel-input-extra-field")],
    ),
    Case(
        "record-as-needs-schema",
        set={"/runtime/io/output": {"recordAs": "last"}},
        expect=[(P, "/runtime/io/output/schema", "record-as-needs-schema")],
    ),
    Case(
        "runtime-ref-unknown-object",
        set={"/runtime/schedule/after": [{"runtime": "notes/missing"}]},
        expect=[(P, "/runtime/schedule/after/0/runtime", "runtime-ref-unknown")],
    ),
    Case(
        "runtime-ref-unknown-string",
        set={"/runtime/schedule/needs": ["ghost"]},
        expect=[(P, "/runtime/schedule/needs/0", "runtime-ref-unknown")],
    ),
    Case(
        "runtime-ref-unknown-input",
        set={"/runtime/io/inputs/other": {"from": {"runtime": "other-package/x"}}},
        expect=[(P, "/runtime/io/inputs/other/from/runtime", "runtime-ref-unknown")],
    ),
    Case(
        "runtime-self-cycle",
        set={"/runtime/schedule/after": [{"runtime": "notes"}]},
        expect=[(P, "/runtime/schedule/after/0/runtime", "runtime-cycle")],
    ),
    Case(
        "runtime-cycle",
        drop=["/runtime", "/contributes/tools", "/contributes/actions", "/contributes/commands"],
        runtimes={
            "a": {
                "schedule": {"stage": "post-turn", "needs": [{"runtime": "notes/b"}]},
                "agent": {},
            },
            "b": {"schedule": {"stage": "post-turn", "after": ["notes/a"]}, "agent": {}},
        },
        expect=[("runtimes/b/RUNTIME.md", "/schedule/after/0", "runtime-cycle")],
    ),
    Case(
        "needs-session-scope",
        set={"/runtime/schedule/needs": [{"contract": "narrative-engine@2", "scope": "session"}]},
        expect=[(P, "/runtime/schedule/needs/0/scope", "needs-session-scope")],
    ),
    Case(
        "tool-undeclared-agent",
        set={"/runtime/agent/tools/plugin": ["save-note", "erase-note"]},
        expect=[(P, "/runtime/agent/tools/plugin/1", "tool-undeclared")],
    ),
    Case(
        "tool-undeclared-function",
        set={
            "/runtime": {
                "schedule": {"stage": "post-turn"},
                "function": {"tools": {"plugin": ["erase-note"]}},
            }
        },
        files={"handler.js": "export default () => ({})"},
        expect=[(P, "/runtime/function/tools/plugin/0", "tool-undeclared")],
    ),
    Case(
        "trigger-topic-missing",
        set={"/runtime/schedule": {"trigger": {"type": "event"}}},
        expect=[(P, "/runtime/schedule/trigger/topic", "trigger-topic-missing")],
    ),
    Case(
        "auto-trigger-needs-stage",
        set={"/runtime/schedule": {"trigger": {"type": "auto"}}},
        expect=[(P, "/runtime/schedule/stage", "auto-trigger-needs-stage")],
    ),
    Case(
        "auto-trigger-default-needs-stage",
        drop=["/runtime/schedule"],
        expect=[(P, "/runtime/schedule/stage", "auto-trigger-needs-stage")],
    ),
    Case(
        "every-not-auto",
        set={"/runtime/schedule": {"trigger": {"type": "manual"}, "every": 2}},
        expect=[(P, "/runtime/schedule/every", "every-not-auto")],
    ),
    Case(
        "every-subagent-only",
        set={"/runtime/schedule": {"subagentOnly": True, "every": 2}},
        expect=[(P, "/runtime/schedule/every", "every-not-auto")],
    ),
    Case(
        "background-not-auto",
        set={"/runtime/schedule/background": True},
        expect=[(P, "/runtime/schedule/background", "background-not-auto")],
    ),
    Case(
        "stream-needs-story",
        set={"/runtime/agent/loop": {"stream": True}},
        expect=[(P, "/runtime/agent/loop/stream", "stream-needs-story")],
    ),
    Case(
        "steering-needs-story",
        set={"/runtime/agent/loop": {"steering": True}},
        expect=[(P, "/runtime/agent/loop/steering", "steering-needs-story")],
    ),
    Case(
        "truncation-accept-needs-stream",
        set={"/runtime/agent/loop": {"truncation": "accept"}},
        expect=[(P, "/runtime/agent/loop/truncation", "truncation-accept-needs-stream")],
    ),
    Case(
        "deadline-reserve-too-large",
        set={"/runtime/agent/loop": {"timeoutMs": 1000, "finalizer": {"deadlineReserveMs": 1000}}},
        expect=[
            (P, "/runtime/agent/loop/finalizer/deadlineReserveMs", "deadline-reserve-too-large")
        ],
    ),
    Case(
        "duplicate-effect",
        set={"/runtime/effects": {"reads": ["state:*", "narrative:*", "state:*"]}},
        expect=[(P, "/runtime/effects/reads/2", "duplicate-effect")],
    ),
    Case(
        "runtime-both-forms",
        runtimes={"extra": RT_B},
        expect=[(P, "/runtime", "runtime-both-forms")],
    ),
    Case(
        "runtime-file-missing",
        drop=["/runtime"],
        runtimes={"a": RT_A},
        files={"runtimes/b/notes.txt": "no manifest here"},
        expect=[("runtimes/b/RUNTIME.md", "", "runtime-file-missing")],
    ),
    Case(
        "runtime-id-syntax",
        drop=["/runtime"],
        runtimes={"Big_One": RT_A},
        expect=[("runtimes/Big_One/RUNTIME.md", "", "runtime-id-syntax")],
    ),
    Case(
        "runtime-file-rule",
        drop=["/runtime"],
        runtimes={"a": {"schedule": {"stage": "setup", "detached": True}, "agent": {}}},
        expect=[("runtimes/a/RUNTIME.md", "/schedule/detached", "detached-stage")],
    ),
    Case(
        "locale-unknown-field",
        files={"PLUGIN.zh-CN.md": "---\ndescription: 笔记\nversion: 2.0.0\n---\n记笔记。\n"},
        expect=[("PLUGIN.zh-CN.md", "/version", "unknown-field")],
    ),
    Case(
        "locale-entry-unknown",
        files={
            "PLUGIN.de.md": "---\ncontributes:\n  settings:\n    - {key: style, options: [{value: short, label: Kurz}, {value: tiny, label: Winzig}]}\n    - {key: colour, label: Farbe}\n  commands:\n    - {name: note, arguments: [{name: filter}, {name: word, description: W}]}\n  data: {ghosts: {authoring: {title: Geister}}}\n---\n"
        },
        expect=[
            ("PLUGIN.de.md", "/contributes/commands/0/arguments/1/name", "locale-entry-unknown"),
            ("PLUGIN.de.md", "/contributes/settings/0/options/1/value", "locale-entry-unknown"),
            ("PLUGIN.de.md", "/contributes/settings/1/key", "locale-entry-unknown"),
            ("PLUGIN.de.md", "/contributes/data/ghosts", "locale-entry-unknown"),
        ],
    ),
    Case(
        "runtime-locale-unknown-field",
        drop=["/runtime"],
        runtimes={"a": RT_A},
        files={"runtimes/a/RUNTIME.fr.md": "---\nschedule: {stage: audit}\n---\nPrompt.\n"},
        expect=[("runtimes/a/RUNTIME.fr.md", "/schedule", "unknown-field")],
    ),
]


def build(tmp_path: Path, case: Case) -> Path:
    import copy

    data = copy.deepcopy(BASE)
    for pointer in case.drop:
        drop(data, pointer)
    for pointer, value in case.set.items():
        put(data, pointer, value)
    files: dict[str, str | bytes] = {k: v for k, v in BASE_FILES.items() if k not in case.no_files}
    files.update(case.files)
    return write_package(tmp_path / case.name, data, files=files, runtimes=case.runtimes)


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_each_invalid_package_reports_exactly_its_fault(tmp_path: Path, case: Case) -> None:
    result = load_package(build(tmp_path, case))
    assert codes(result) == case.expect, [str(e) for e in result.errors]
    assert result.manifest is None and not result.ok
    for issue in result.errors:
        assert issue.message and issue.code in issue.__str__()


def raised_codes(*modules: object) -> set[str]:
    """The codes passed to ctx.error(...) in the given modules' source."""
    import ast
    import inspect

    found: set[str] = set()
    for module in modules:
        tree = ast.parse(inspect.getsource(module))
        for node in ast.walk(tree):
            if (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Attribute)
                and node.func.attr == "error"
                and len(node.args) >= 3
                and isinstance(node.args[2], ast.Constant)
            ):
                found.add(node.args[2].value)
            elif isinstance(node, ast.JoinedStr):
                continue
    return found


def test_the_corpus_covers_every_rule_code() -> None:
    """Every code the rules raise has a case here, or a named test elsewhere."""
    import catalogue.manifest.context as context
    import catalogue.manifest.loader as loader
    import catalogue.manifest.rules as rules

    covered = {code for case in CASES for _, _, code in case.expect}
    elsewhere = {
        "package-not-found",  # test_loader.py
        "plugin-md-missing",  # test_loader.py
        "file-unreadable",  # test_paths.py
        "file-too-large",  # test_frontmatter.py
        "frontmatter-not-mapping",  # test_frontmatter.py
        "not-utf8",  # test_frontmatter.py
        "origin-invalid",  # test_rules_extra.py
        "url-invalid",  # test_rules_extra.py
        "path-invalid",  # test_paths.py
        "locale-section-unknown",  # test_loader.py
        "locale-messages-invalid",  # test_locale_messages.py
        "older-format",  # test_locale_messages.py
        "locale-placeholders-differ",  # test_locale_messages.py
        "host-version-invalid",  # test_rules_extra.py
    }
    raised = raised_codes(rules, loader, context)
    assert raised, "the source scan found no codes"
    missing = raised - covered - elsewhere
    assert not missing, sorted(missing)
