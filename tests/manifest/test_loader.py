"""The verdict as a whole: defaults, derived tags, languages, hashes and one-pass errors."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

import pytest

from catalogue.manifest import HOST_VERSION, load_package
from catalogue.manifest.types import thaw

from .conftest import PackageFactory, codes, put

P = "PLUGIN.md"


def minimal(**extra: Any) -> dict[str, Any]:
    return {"description": "Minimal.", **extra}


def test_defaults_of_a_minimal_package(make_package: PackageFactory) -> None:
    result = load_package(make_package(minimal(), base_files=False))
    assert result.ok, result.errors
    manifest = result.manifest
    assert manifest is not None
    assert manifest.id == "notes" and result.package_id == "notes"
    assert manifest.kind == "plugin"
    assert manifest.version == "0.0.0"
    assert manifest.entry is None
    assert manifest.runtimes == ()  # a package without runtime is allowed
    assert manifest.tags == ()
    assert manifest.provides == ()
    assert manifest.languages == {"text": ("en",), "instructions": ("en",)}


def test_the_default_entry_is_server_index_js_when_present(make_package: PackageFactory) -> None:
    root = make_package(
        minimal(contributes={"tools": ["t"]}), base_files=False, files={"server/index.js": "x"}
    )
    manifest = load_package(root).manifest
    assert manifest is not None and manifest.entry == "./server/index.js"


def test_runtime_defaults(make_package: PackageFactory) -> None:
    runtime = {
        "schedule": {"stage": "post-turn", "detached": {"settle": True}},
        "io": {
            "inputs": {
                "n": {"from": {"contract": "narrative-engine@2"}},
                "t": {"from": {"kernel": "turn-digest@1"}},
            },
            "selfData": [{"namespace": "facts", "as": "<facts>"}],
        },
        "agent": {},
    }
    fm = minimal(
        contributes={
            "tools": ["a", "b"],
            "data": {"facts": {"schema": "./s.json"}},
            "events": [{"topic": "x.y", "schema": "./s.json", "description": "d"}],
        },
        runtime=runtime,
    )
    result = load_package(
        make_package(fm, base_files=False, files={"s.json": "{}", "server/index.js": "x"})
    )
    assert result.ok, result.errors
    manifest = result.manifest
    assert manifest is not None
    rt = manifest.runtimes[0]
    assert (rt.id, rt.qualified_id, rt.file, rt.kind) == ("notes", "notes", P, "agent")
    assert rt.trigger == "auto" and rt.visibility == "system" and rt.stage == "post-turn"
    assert thaw(rt.detached) == {"settle": True, "maxSettleWaitMs": 60000}
    assert thaw(rt.data["io"]["inputs"]) == {
        "n": {
            "from": {"contract": "narrative-engine@2", "cardinality": "one"},
            "scope": "turn",
            "required": True,
        },
        "t": {"from": {"kernel": "turn-digest@1"}},
    }
    assert thaw(rt.data["io"]["selfData"]) == [
        {"namespace": "facts", "as": "<facts>", "format": "summary", "maxEntries": 50}
    ]
    assert rt.data["agent"]["model"] == "plugin"
    # A single runtime gets every contributed tool.
    assert rt.data["agent"]["tools"]["plugin"] == ("a", "b")
    assert manifest.contributes["events"][0]["advertise"] is True
    assert manifest.contributes["data"]["facts"]["version"] == 1
    assert thaw(manifest.data["runtime"]) == thaw(rt.data)


def test_function_runtime_defaults_to_handler_js(make_package: PackageFactory) -> None:
    fm = minimal(runtime={"schedule": {"stage": "post-turn"}, "function": {}})
    result = load_package(make_package(fm, base_files=False, files={"handler.js": "x"}))
    assert result.ok, result.errors
    rt = result.manifest.runtimes[0]  # type: ignore[union-attr]
    assert rt.kind == "function" and rt.data["function"]["handler"] == "./handler.js"
    assert "agent" not in rt.data


def test_a_single_function_runtime_gets_every_contributed_tool(
    make_package: PackageFactory,
) -> None:
    """function.tools.plugin defaults like agent.tools.plugin: the spec gives both the same rule."""
    files = {"handler.js": "x", "server/index.js": "x"}
    contributes = {"tools": ["a", "b"]}

    def function_of(function: dict[str, Any], name: str, **extra: Any) -> Any:
        fm = minimal(
            contributes=contributes,
            runtime={"schedule": {"stage": "post-turn"}, "function": function},
            **extra,
        )
        result = load_package(make_package(fm, name=name, base_files=False, files=files))
        assert result.ok, [str(e) for e in result.errors]
        return thaw(result.manifest.runtimes[0].data["function"])  # type: ignore[union-attr]

    assert function_of({}, "bare")["tools"] == {"plugin": ["a", "b"]}
    builtin = function_of({"tools": {"builtin": ["get-character"]}}, "builtin")
    assert builtin["tools"] == {"builtin": ["get-character"], "plugin": ["a", "b"]}
    # A written list, even an empty one, is kept as written.
    assert function_of({"tools": {"plugin": []}}, "none")["tools"] == {"plugin": []}
    assert function_of({"tools": {"plugin": ["b"]}}, "some")["tools"] == {"plugin": ["b"]}


def test_runtimes_of_a_package_with_several_get_no_default_tools(
    make_package: PackageFactory,
) -> None:
    runtime = {"schedule": {"stage": "post-turn"}, "function": {}}
    root = make_package(
        minimal(contributes={"tools": ["a"]}),
        base_files=False,
        files={
            "server/index.js": "x",
            "runtimes/one/handler.js": "x",
            "runtimes/two/handler.js": "x",
        },
        runtimes={"one": runtime, "two": {**runtime, "schedule": {"stage": "audit"}}},
    )
    result = load_package(root)
    assert result.ok, [str(e) for e in result.errors]
    for rt in result.manifest.runtimes:  # type: ignore[union-attr]
        assert "tools" not in rt.data["function"]


def test_provides_is_normalised_and_includes_runtime_outputs(make_package: PackageFactory) -> None:
    fm = minimal(
        provides=["ext.notes@1", {"contract": "notes.engine@2", "default": True}],
        runtime={
            "schedule": {"stage": "post-turn"},
            "io": {"output": {"contract": "notes.engine@2"}},
            "agent": {},
        },
    )
    fm2 = minimal(
        runtime={
            "schedule": {"stage": "post-turn"},
            "io": {"output": {"contract": "notes.out@1"}},
            "agent": {},
        }
    )
    first = load_package(make_package(fm, base_files=False)).manifest
    second = load_package(make_package(fm2, name="other", base_files=False)).manifest
    assert first is not None and second is not None
    assert thaw(first.provides) == [
        {"contract": "ext.notes@1", "default": False},
        {"contract": "notes.engine@2", "default": True},
    ]
    assert thaw(second.provides) == [{"contract": "notes.out@1", "default": False}]


def test_tags_are_derived_sorted_and_written_ui_cost_tags_ignored(
    make_package: PackageFactory,
) -> None:
    fm = minimal(
        tags=["mode:dialogue", "ui:view", "cost:free", "data:characters", "mode:dialogue"],
        contributes={
            "ui": {
                "view": ["./u.json"],
                "message": ["./u.json"],
                "segment": ["./u.json"],
                "right": [],
            }
        },
    )
    runtimes = {
        "talk": {"schedule": {"trigger": {"type": "manual"}}, "agent": {}},
        "count": {"schedule": {"stage": "audit"}, "function": {"handler": "./h.js"}},
        "helper": {"schedule": {"subagentOnly": True}, "agent": {}},
    }
    result = load_package(
        make_package(
            fm,
            base_files=False,
            runtimes=runtimes,
            files={"u.json": "{}", "runtimes/count/h.js": "x"},
        )
    )
    assert result.ok, result.errors
    assert result.manifest is not None
    assert result.manifest.tags == (
        "cost:function",
        "cost:llm",
        "data:characters",
        "mode:dialogue",
        "ui:manual-action",
        "ui:message-block",
        "ui:segment",
        "ui:view",
    )
    assert [(w.path, w.code) for w in result.warnings] == [
        ("/tags/1", "tag-derived-ignored"),
        ("/tags/2", "tag-derived-ignored"),
    ]
    ids = [(rt.id, rt.qualified_id, rt.file) for rt in result.manifest.runtimes]
    assert ids == [
        ("count", "notes/count", "runtimes/count/RUNTIME.md"),
        ("helper", "notes/helper", "runtimes/helper/RUNTIME.md"),
        ("talk", "notes/talk", "runtimes/talk/RUNTIME.md"),
    ]
    assert result.manifest.runtime("notes/helper").trigger == "manual"  # type: ignore[union-attr]
    assert result.manifest.runtimes[2].prompt == "Prompt of talk.\n"


def test_a_package_with_three_faults_reports_all_three(
    make_package: PackageFactory, base: dict[str, Any]
) -> None:
    put(base, "/kind", "library")  # schema
    put(base, "/homepage", "http://example.com")  # rule
    put(base, "/runtime/schedule/detached", True)
    put(base, "/runtime/schedule/stage", "pre-turn")  # runtime rule
    result = load_package(make_package(base))
    assert sorted(codes(result)) == [
        (P, "/homepage", "url-not-https"),
        (P, "/kind", "not-in-enum"),
        (P, "/runtime/schedule/detached", "detached-stage"),
    ]


def test_raw_frontmatter_is_kept_for_an_invalid_package(make_package: PackageFactory) -> None:
    result = load_package(
        make_package(
            {"description": "Broken", "displayName": "Broken One", "kind": 5}, base_files=False
        )
    )
    assert not result.ok and result.manifest is None
    assert result.raw is not None and result.raw["displayName"] == "Broken One"
    assert result.package_id == "notes"


def test_languages_come_from_locale_variants(
    make_package: PackageFactory, base: dict[str, Any]
) -> None:
    del base["runtime"]
    root = make_package(
        base,
        runtimes={"a": {"schedule": {"stage": "post-turn"}, "agent": {}}},
        files={
            "PLUGIN.zh-CN.md": "---\ndescription: 记笔记。\n---\n",
            "runtimes/a/RUNTIME.fr.md": "---\ndescription: Notes.\n---\nPrenez des notes.\n",
            "locales/de.yaml": "PLUGIN.md:\n  description: Notizen.\n",
            "locales/lock.json": "{}",
        },
    )
    result = load_package(root)
    assert result.ok, result.errors
    assert result.manifest is not None
    assert result.manifest.languages == {
        "text": ("en", "de", "fr", "zh-CN"),
        "instructions": ("en", "fr"),
    }
    assert set(result.manifest.locales) == {"zh-CN", "fr", "de"}


def test_a_bad_locale_file_is_reported(make_package: PackageFactory, base: dict[str, Any]) -> None:
    root = make_package(
        base, files={"locales/de.yaml": "PLUGIN.md: &x {description: a}\nagain: *x\n"}
    )
    assert codes(load_package(root)) == [("locales/de.yaml", "/again", "yaml-alias")]


def test_locale_file_sections_are_checked(
    make_package: PackageFactory, base: dict[str, Any]
) -> None:
    root = make_package(
        base,
        files={
            "locales/de.yaml": "PLUGIN.md:\n  description: Notizen.\n  version: 2.0.0\nREADME.md:\n  title: x\n"
        },
    )
    assert codes(load_package(root)) == [
        ("locales/de.yaml", "/PLUGIN.md/version", "unknown-field"),
        ("locales/de.yaml", "/README.md", "locale-section-unknown"),
    ]


def test_the_content_hash_tracks_names_and_bytes(
    make_package: PackageFactory, base: dict[str, Any]
) -> None:
    root = make_package(base)
    first = load_package(root).content_hash
    assert len(first) == 64 and first == load_package(root).content_hash
    (root / "node_modules").mkdir()
    (root / "node_modules" / "x.js").write_text("ignored")
    assert load_package(root).content_hash == first
    (root / "ui" / "panel.json").write_text('{"a": 1}')
    second = load_package(root).content_hash
    assert second != first
    (root / "ui" / "panel.json").rename(root / "ui" / "panel2.json")
    (root / "ui" / "panel.json").write_text('{"a": 1}')
    (root / "ui" / "panel2.json").unlink()
    assert load_package(root).content_hash == second


def test_the_manifest_is_deeply_immutable(
    make_package: PackageFactory, base: dict[str, Any]
) -> None:
    manifest = load_package(make_package(base)).manifest
    assert manifest is not None
    with pytest.raises(TypeError):
        manifest.data["version"] = "9"  # type: ignore[index]
    with pytest.raises(dataclasses.FrozenInstanceError):
        manifest.id = "x"  # type: ignore[misc]
    assert isinstance(manifest.data["contributes"]["tools"], tuple)
    json.dumps(thaw(manifest.data))  # plain JSON once thawed


def test_host_version_is_a_parameter(make_package: PackageFactory, base: dict[str, Any]) -> None:
    put(base, "/covel", ">=0.2.0")
    root = make_package(base)
    assert HOST_VERSION == "0.1.0"
    result = load_package(root)
    assert result.errors[0].message == "notes needs Covel >=0.2.0; this host runs 0.1.0"
    assert load_package(root, host_version="0.2.0-rc.1").ok  # the pre-release suffix is ignored


def test_a_missing_folder_and_a_missing_plugin_md(tmp_path: Path) -> None:
    assert codes(load_package(tmp_path / "nowhere")) == [("", "", "package-not-found")]
    (tmp_path / "empty").mkdir()
    assert codes(load_package(tmp_path / "empty")) == [(P, "", "plugin-md-missing")]


def test_an_unexpected_failure_becomes_an_internal_error(
    make_package: PackageFactory, base: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    import catalogue.manifest.rules as rules

    def explode(*args: Any, **kwargs: Any) -> None:
        raise RuntimeError("boom")

    monkeypatch.setattr(rules, "check_runtime", explode)
    result = load_package(make_package(base))
    assert codes(result) == [(P, "", "internal-error")]
    assert "RuntimeError: boom" in result.errors[0].message
    assert result.manifest is None


def test_the_loader_never_imports_django(
    make_package: PackageFactory, base: dict[str, Any]
) -> None:
    import subprocess
    import sys

    root = make_package(base)
    script = (
        "import sys; from catalogue.manifest import load_package; "
        f"assert load_package({str(root)!r}).ok; "
        "print(sorted(m for m in sys.modules if m.split('.')[0] == 'django'))"
    )
    repo = Path(__file__).resolve().parents[2]
    done = subprocess.run(
        [sys.executable, "-c", script], cwd=repo, capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"
