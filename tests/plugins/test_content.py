"""Static content of the bundled packages: their JSON Schemas, authoring examples, UI specs and
offline runtime cases. The loader checks that these files exist; this checks what is in them.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path

import jsonschema
import pytest

from catalogue.manifest.loader import load_package
from catalogue.manifest.types import Manifest, RuntimeManifest, thaw

PLUGINS_DIR = Path(__file__).resolve().parents[2] / "plugins"
SCHEMA_FILES = sorted(PLUGINS_DIR.glob("*/schemas/*.json"))
UI_FILES = sorted(PLUGINS_DIR.glob("*/ui/*.json"))
# Builtin tools a scripted model may call besides the package's own.
BUILTIN_TOOLS = {"runtime-done", "load-tools"}


def manifests() -> list[Manifest]:
    out = []
    for folder in sorted(p for p in PLUGINS_DIR.iterdir() if p.is_dir()):
        manifest = load_package(str(folder), host_version="0.1.0").manifest
        assert manifest is not None, folder.name
        out.append(manifest)
    return out


MANIFESTS = manifests()


def _rel(path: Path) -> str:
    return str(path.relative_to(PLUGINS_DIR))


@pytest.mark.parametrize("path", SCHEMA_FILES, ids=_rel)
def test_each_schema_is_a_valid_draft_2020_12_schema(path: Path) -> None:
    schema = json.loads(path.read_text(encoding="utf-8"))
    assert schema.get("$schema") == "https://json-schema.org/draft/2020-12/schema"
    jsonschema.Draft202012Validator.check_schema(schema)
    assert schema.get("type") in ("object", "integer"), "records are objects, or plain counters"
    if schema["type"] == "object":
        assert schema.get("additionalProperties") is False, "say which fields a record may have"


def authoring_examples() -> list[tuple[str, str, Path, Path]]:
    found = []
    for manifest in MANIFESTS:
        for name, namespace in (manifest.contributes.get("data") or {}).items():
            example = (namespace.get("authoring") or {}).get("example")
            if example:
                root = Path(manifest.path)
                found.append((manifest.id, name, root / namespace["schema"], root / example))
    return found


def test_there_are_authoring_examples() -> None:
    assert len(authoring_examples()) >= 3


@pytest.mark.parametrize(
    "package,namespace,schema_path,example_path",
    authoring_examples(),
    ids=lambda v: v if isinstance(v, str) else "",
)
def test_each_authoring_example_matches_its_namespace_schema(
    package: str, namespace: str, schema_path: Path, example_path: Path
) -> None:
    schema = json.loads(schema_path.read_text(encoding="utf-8"))
    example = json.loads(example_path.read_text(encoding="utf-8"))
    # The example is a source value: a list of records, each one checked by the namespace schema.
    assert isinstance(example, list) and example, (
        f"{package}: {example_path.name} should list records"
    )
    ids = [record.get("id") for record in example]
    assert len(set(ids)) == len(ids), f"{package}: duplicate ids in {example_path.name}"
    for record in example:
        jsonschema.validate(record, schema)


@pytest.mark.parametrize("path", UI_FILES, ids=_rel)
def test_each_ui_spec_is_json_with_an_id_and_a_view(path: Path) -> None:
    spec = json.loads(path.read_text(encoding="utf-8"))
    assert isinstance(spec.get("id"), str) and spec["id"]
    assert isinstance(spec.get("view"), Mapping) and spec["view"].get("component")


# ---------------------------------------------------------------- runtime cases


def agent_packages() -> list[Manifest]:
    return [m for m in MANIFESTS if any(r.kind == "agent" for r in m.runtimes)]


def tools_of(manifest: Manifest, runtime: RuntimeManifest) -> set[str]:
    """The tool names a scripted model may call in this agent runtime."""
    agent = thaw(runtime.data.get("agent") or {})
    tools = agent.get("tools") or {}
    contributed = list(manifest.contributes.get("tools") or ())
    names = set(tools.get("plugin", contributed if len(manifest.runtimes) == 1 else []))
    names |= set(tools.get("builtin") or ())
    datasets = thaw(manifest.contributes.get("datasets") or {})
    for item in tools.get("datasets") or ():
        name, chosen = (item, None) if isinstance(item, str) else (item["dataset"], item["tools"])
        ops = datasets[name].get("ops", [])
        offered = (
            ["get", "list"]
            + (["upsert"] if "set" in ops else [])
            + (["update"] if set(ops) - {"set"} else [])
        )
        names |= {f"{name}-{t}" for t in (chosen or datasets[name].get("tools") or offered)}
    for item in tools.get("services") or ():
        contract = item if isinstance(item, str) else item["contract"]
        alias = None if isinstance(item, str) else item.get("as")
        names.add(alias or contract.split("@", 1)[0].replace(".", "-"))
    return names | BUILTIN_TOOLS


def test_every_package_with_an_agent_runtime_is_listed() -> None:
    assert {m.id for m in agent_packages()} >= {"notebook", "chronicle", "satchel", "rapport"}


@pytest.mark.parametrize("manifest", agent_packages(), ids=lambda m: m.id)
def test_its_runtime_cases_script_each_agent_runtime(manifest: Manifest) -> None:
    path = Path(manifest.path) / "tests" / "runtime-cases.json"
    assert path.is_file(), f"{manifest.id} has an agent runtime but no tests/runtime-cases.json"
    cases = json.loads(path.read_text(encoding="utf-8"))["cases"]
    names = [c["name"] for c in cases]
    assert len(set(names)) == len(names)
    covered = set()
    statuses = set()
    for case in cases:
        runtime = manifest.runtime(case["runtimeId"])
        assert runtime is not None and runtime.kind == "agent", (manifest.id, case["name"])
        covered.add(runtime.qualified_id)
        allowed = tools_of(manifest, runtime)
        assert case["message"] and case["llmResponses"]
        for response in case["llmResponses"]:
            assert response["finishReason"] in ("tool_calls", "stop")
            for call in response.get("toolCalls") or ():
                assert call["name"] in allowed, (
                    f"{case['name']}: {call['name']} is not a tool of {runtime.qualified_id}"
                )
                assert isinstance(json.loads(call["arguments"]), dict)
        for expected in case["expect"]["runtimeResults"]:
            assert manifest.runtime(expected["runtimeId"]) is not None
            statuses.add(expected["status"])
        owned = set(manifest.contributes.get("data") or {}) | set(
            manifest.contributes.get("datasets") or {}
        )
        for row in case["expect"].get("pluginData", ()):
            assert row["namespace"] in owned, (
                f"{case['name']}: {row['namespace']} is not a namespace of {manifest.id}"
            )
    agents = {r.qualified_id for r in manifest.runtimes if r.kind == "agent"}
    assert covered == agents, f"{manifest.id}: no case for {sorted(agents - covered)}"
    assert "success" in statuses, f"{manifest.id}: no passing case"


def test_the_tool_list_helper_sees_dataset_and_service_tools() -> None:
    satchel = next(m for m in MANIFESTS if m.id == "satchel")
    names = tools_of(satchel, satchel.runtimes[0])
    assert {
        "items-get",
        "items-list",
        "items-upsert",
        "items-update",
        "wallet-get",
        "change-items",
        "adjust-gold",
    } <= names
    assert "wallet-upsert" not in names
