"""Package-relative paths stay inside the package, also through symbolic links."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from catalogue.manifest import load_package

from .conftest import PackageFactory, codes, put

P = "PLUGIN.md"


def test_a_symlink_leading_outside_the_package_is_refused(
    tmp_path: Path, make_package: PackageFactory, base: dict[str, Any]
) -> None:
    secret = tmp_path / "outside" / "secret.json"
    secret.parent.mkdir()
    secret.write_text("{}")
    put(base, "/contracts/notes.view@1/schema", "./schemas/link.json")
    root = make_package(base)
    os.symlink(secret, root / "schemas" / "link.json")
    result = load_package(root)
    assert codes(result) == [(P, "/contracts/notes.view@1/schema", "path-escapes")]
    assert "symbolic link" in result.errors[0].message


def test_a_symlinked_folder_leading_outside_is_refused(
    tmp_path: Path, make_package: PackageFactory, base: dict[str, Any]
) -> None:
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    (outside / "panel.json").write_text("{}")
    put(base, "/contributes/ui/right/0", "./linked/panel.json")
    root = make_package(base)
    os.symlink(outside, root / "linked", target_is_directory=True)
    assert codes(load_package(root)) == [(P, "/contributes/ui/right/0", "path-escapes")]


def test_a_symlink_inside_the_package_is_fine(
    make_package: PackageFactory, base: dict[str, Any]
) -> None:
    put(base, "/contracts/notes.view@1/schema", "./schemas/alias.json")
    root = make_package(base)
    os.symlink(root / "schemas" / "note.schema.json", root / "schemas" / "alias.json")
    assert load_package(root).ok


def test_a_symlinked_plugin_md_leading_outside_is_refused(tmp_path: Path) -> None:
    outside = tmp_path / "real.md"
    outside.write_text("---\ndescription: x\n---\n")
    root = tmp_path / "notes"
    root.mkdir()
    os.symlink(outside, root / P)
    assert codes(load_package(root)) == [(P, "", "path-escapes")]


def test_a_dangling_default_server_entry_is_not_assumed(
    make_package: PackageFactory, base: dict[str, Any]
) -> None:
    root = make_package(base)
    (root / "server" / "index.js").unlink()
    os.symlink(root / "server" / "gone.js", root / "server" / "index.js")
    assert codes(load_package(root)) == [(P, "/contributes/tools", "entry-missing")]


@pytest.mark.parametrize(
    ("value", "code"),
    [
        ("/etc/passwd", "path-absolute"),
        ("C:/Windows/win.ini", "path-absolute"),
        ("~/secret.json", "path-absolute"),
        ("https://example.com/schema.json", "path-absolute"),
        ("schemas/../../notes/x.json", "path-escapes"),
        ("..\\x.json", "path-escapes"),
        ("", "path-invalid"),
        ("./", "path-invalid"),
        ("./schemas", "path-missing"),
        ("./schemas/nope.json", "path-missing"),
    ],
)
def test_each_bad_path_form_has_its_code(
    make_package: PackageFactory, base: dict[str, Any], value: str, code: str
) -> None:
    put(base, "/contributes/events/0/schema", value)
    result = load_package(make_package(base))
    assert codes(result) == [(P, "/contributes/events/0/schema", code)]


def test_runtime_handlers_resolve_next_to_their_manifest(
    make_package: PackageFactory, base: dict[str, Any]
) -> None:
    del base["runtime"]
    runtime = {"schedule": {"stage": "post-turn"}, "function": {}}
    root = make_package(
        base,
        runtimes={
            "count": runtime,
            "tally": {**runtime, "function": {"handler": "./lib/tally.js"}},
        },
        files={
            "runtimes/count/handler.js": "export default () => ({})",
            "runtimes/tally/lib/tally.js": "x",
        },
    )
    result = load_package(root)
    assert result.ok, result.errors
    assert result.manifest is not None
    handlers = {rt.id: rt.data["function"]["handler"] for rt in result.manifest.runtimes}
    assert handlers == {
        "count": "./runtimes/count/handler.js",
        "tally": "./runtimes/tally/lib/tally.js",
    }


def test_a_handler_js_at_the_root_does_not_serve_a_runtime_folder(
    make_package: PackageFactory, base: dict[str, Any]
) -> None:
    del base["runtime"]
    root = make_package(
        base,
        runtimes={"count": {"schedule": {"stage": "post-turn"}, "function": {}}},
        files={"handler.js": "export default () => ({})"},
    )
    assert codes(load_package(root)) == [
        ("runtimes/count/RUNTIME.md", "/function/handler", "handler-missing")
    ]


def test_an_unreadable_runtime_manifest_is_reported(
    make_package: PackageFactory, base: dict[str, Any]
) -> None:
    del base["runtime"]
    root = make_package(base)
    (root / "runtimes" / "odd" / "RUNTIME.md").mkdir(parents=True)
    assert codes(load_package(root)) == [("runtimes/odd/RUNTIME.md", "", "file-unreadable")]


def test_dotdot_that_stays_inside_the_package_is_accepted_and_normalised(
    make_package: PackageFactory, base: dict[str, Any]
) -> None:
    # Covel's rule: a path is refused only if it leaves the package after normalising. A
    # runtime in runtimes/plot/ may name ../../schemas/x.json, as Covel's packages do.
    del base["runtime"]
    put(base, "/contributes/events/0/schema", "schemas/../schemas/note.schema.json")
    plot = {
        "schedule": {"stage": "post-turn"},
        "io": {"output": {"schema": "../../schemas/note.schema.json"}},
        "function": {"handler": "../../lib/plot.js"},
    }
    root = make_package(base, runtimes={"plot": plot}, files={"lib/plot.js": "x"})
    result = load_package(root)
    assert result.ok, result.errors
    assert result.manifest is not None
    [runtime] = result.manifest.runtimes
    # Normalised package-relative, so no reader ever joins the package folder with "..".
    assert runtime.data["function"]["handler"] == "./lib/plot.js"
    assert runtime.data["io"]["output"]["schema"] == "./schemas/note.schema.json"


def test_a_path_that_leaves_says_where_it_resolves(
    make_package: PackageFactory, base: dict[str, Any]
) -> None:
    del base["runtime"]
    leaving = {
        "schedule": {"stage": "post-turn"},
        "function": {"handler": "../../../outside.js"},
    }
    root = make_package(base, runtimes={"plot": leaving})
    result = load_package(root)
    assert codes(result) == [("runtimes/plot/RUNTIME.md", "/function/handler", "path-escapes")]
    message = result.errors[0].message
    assert "'../../../outside.js' leaves the package" in message
    assert "from runtimes/plot/ it resolves to '../outside.js'" in message
