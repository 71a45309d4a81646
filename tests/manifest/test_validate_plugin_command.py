"""`manage.py validate_plugin`: output format, --json and exit codes (run as a real process)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from .conftest import PackageFactory, put

REPO = Path(__file__).resolve().parents[2]


def run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(REPO / "manage.py"), "validate_plugin", *args],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_a_valid_package_prints_the_success_lines(
    make_package: PackageFactory, base: dict[str, Any]
) -> None:
    root = make_package(
        base, files={"PLUGIN.zh-CN.md": "---\ndescription: 记笔记。\n---\n请记笔记。\n"}
    )
    done = run(str(root))
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == [
        f"✓ Static package validation: {root}",
        "  languages: text en, zh-CN; instructions en, zh-CN",
    ]


def test_an_invalid_package_prints_each_error_and_exits_1(
    make_package: PackageFactory, base: dict[str, Any]
) -> None:
    put(base, "/homepage", "http://example.com")
    put(base, "/kind", "library")
    put(base, "/tags/1", "ui:view")
    root = make_package(base)
    done = run(str(root))
    assert done.returncode == 1
    lines = done.stdout.splitlines()
    assert lines[0] == f"✗ {root}"
    assert sorted(lines[1:3]) == [
        "  PLUGIN.md:/homepage 'http://example.com' must be an https:// address [url-not-https]",
        '  PLUGIN.md:/kind "library" is not allowed here; use one of: "core", "plugin" [not-in-enum]',
    ]
    assert lines[3].startswith("  warning: PLUGIN.md:/tags/1 ") and lines[3].endswith(
        "[tag-derived-ignored]"
    )
    assert len(lines) == 4


def test_json_output_lists_every_package(
    tmp_path: Path, make_package: PackageFactory, base: dict[str, Any]
) -> None:
    good = make_package(base, name="good")
    put(base, "/contributes/commands/0/action", "missing")
    bad = make_package(base, name="bad")
    done = run(str(good), str(bad), "--json")
    assert done.returncode == 1
    document = json.loads(done.stdout)
    packages = document["packages"]
    assert [(p["path"], p["id"], p["ok"]) for p in packages] == [
        (str(good), "good", True),
        (str(bad), "bad", False),
    ]
    assert packages[0]["errors"] == [] and packages[0]["warnings"] == []
    assert packages[1]["errors"] == [
        {
            "file": "PLUGIN.md",
            "path": "/contributes/commands/0/action",
            "code": "command-action-undeclared",
            "message": "the command's action 'missing' is not listed in contributes.actions",
        }
    ]
    assert set(packages[0]) >= {"path", "id", "ok", "errors", "warnings"}


def test_bad_arguments_exit_2(tmp_path: Path) -> None:
    no_paths = run()
    assert no_paths.returncode == 2 and "PATH" in no_paths.stderr
    a_file = tmp_path / "file.txt"
    a_file.write_text("x")
    for wrong in (tmp_path / "nowhere", a_file):
        with pytest.raises(CommandError) as failure:
            call_command("validate_plugin", str(wrong))
        assert failure.value.returncode == 2
        assert "is not a directory" in str(failure.value)


def test_call_command_raises_with_the_exit_code(
    make_package: PackageFactory, base: dict[str, Any], capsys: pytest.CaptureFixture[str]
) -> None:
    root = make_package(base)
    call_command("validate_plugin", str(root))
    assert "✓ Static package validation" in capsys.readouterr().out
    put(base, "/kind", "library")
    bad = make_package(base, name="bad")
    with pytest.raises(CommandError) as failure:
        call_command("validate_plugin", str(bad))
    assert failure.value.returncode == 1


def test_a_source_plugin_folder_goes_to_the_source_loader(tmp_path: Path) -> None:
    """A folder with plugin.toml and no PLUGIN.md is judged by sources.manifest."""
    import sources.manifest as sources

    folder = tmp_path / "feed"
    folder.mkdir()
    (folder / "plugin.toml").write_text("not = [valid toml\n")
    expected = sources.load_source_plugin(folder)
    done = run(str(folder), "--json")
    package = json.loads(done.stdout)["packages"][0]
    assert package["kind"] == "source"
    assert package["ok"] is bool(expected.ok) is False
    assert done.returncode == 1
    assert [e["code"] for e in package["errors"]] == [e.code for e in expected.errors]


def test_the_bundled_source_plugin_passes_through_the_same_command() -> None:
    folder = REPO / "source-plugins" / "localfeed"
    assert (folder / "plugin.toml").is_file()
    done = run(str(folder))
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.splitlines()[0] == f"✓ Static package validation: {folder}"


def test_control_characters_from_a_manifest_are_escaped(
    make_package: PackageFactory, base: dict[str, Any]
) -> None:
    put(base, "/\u001b[2J\u202egnp.exe", "x")
    put(base, "/displayName", "Notes\u009b31m")
    put(base, "/kind", 5)
    root = make_package(base)
    text = run(str(root))
    assert "\x1b" not in text.stdout and "\u202e" not in text.stdout and "\x9b" not in text.stdout
    assert "PLUGIN.md:/\\x1b[2J\\u202egnp.exe unknown field" in text.stdout
    as_json = run(str(root), "--json")
    assert "\x1b" not in as_json.stdout and "\u202e" not in as_json.stdout
    errors = json.loads(as_json.stdout)["packages"][0]["errors"]
    assert {e["path"] for e in errors} == {"/\u001b[2J\u202egnp.exe", "/kind"}


def test_validate_plugin_names_each_path_that_leaves_the_package(
    make_package: PackageFactory, base: dict[str, Any]
) -> None:
    put(base, "/contributes/events/0/schema", "../elsewhere/x.json")
    put(base, "/contracts/notes.view@1/schema", "schemas/../schemas/note.schema.json")
    root = make_package(base)
    done = run(str(root))
    assert done.returncode == 1
    # Only the path that leaves is reported, with its field, its code and where it resolves.
    assert "/contributes/events/0/schema" in done.stdout
    assert "path-escapes" in done.stdout
    assert "resolves to '../elsewhere/x.json', outside the package folder" in done.stdout
    assert "/contracts/notes.view@1/schema" not in done.stdout
