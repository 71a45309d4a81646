"""characters/characters.json: synced onto the World row, every problem named by file, JSON path
and rule, and a broken file never replaces the last good characters.

Personas (tests/conftest.py): Alice owns the world; the anonymous visitor reads world pages.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from django.conf import settings
from django.core.management import call_command
from django.test import Client
from worlds_testdata import HARBOR_YAML, write_world

from worlds.characters_file import CHARACTERS_FILE, read_characters
from worlds.models import World
from worlds.services import world_sync

MIRA = {
    "id": "mira",
    "name": "Mira Vane",
    "type": "player",
    "description": "A courier.",
    "fields": {"age": 31, "tags": ["quick"]},
}
OLD_TOM = {"id": "old-tom", "name": "Old Tom", "type": "npc"}


def write_characters(folder: Path, content: Any) -> None:
    target = folder / CHARACTERS_FILE
    target.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(content, bytes):
        target.write_bytes(content)
    elif isinstance(content, str):
        target.write_text(content, encoding="utf-8")
    else:
        target.write_text(json.dumps(content), encoding="utf-8")


def harbor_with(worlds_root: Path, content: Any) -> Path:
    folder = write_world(worlds_root, "harbor", HARBOR_YAML)
    write_characters(folder, content)
    return folder


def issues(result) -> list[tuple[str, str, str]]:
    return sorted((i.file, i.path, i.code) for i in result.errors)


def test_valid_characters_are_stored_normalised_and_a_second_sync_changes_nothing(
    packages, worlds_root: Path
) -> None:
    harbor_with(worlds_root, [MIRA, OLD_TOM])
    [first] = world_sync(dirs=[worlds_root]).results
    [second] = world_sync(dirs=[worlds_root]).results
    assert (first.action, first.errors) == ("created", [])
    assert second.action == "unchanged"
    world = World.objects.get(world_id="harbor")
    assert world.state == World.State.LOADED
    assert world.characters == [
        MIRA,
        # description and fields are optional in the file and always present on the row.
        {"id": "old-tom", "name": "Old Tom", "type": "npc", "description": "", "fields": {}},
    ]


def test_an_edited_characters_file_updates_the_row(packages, worlds_root: Path) -> None:
    folder = harbor_with(worlds_root, [MIRA])
    world_sync(dirs=[worlds_root])
    write_characters(folder, [MIRA, OLD_TOM])
    [result] = world_sync(dirs=[worlds_root]).results
    assert result.action == "updated"
    assert [c["id"] for c in World.objects.get().characters] == ["mira", "old-tom"]


def test_a_world_without_a_characters_file_has_no_characters_and_no_errors(
    packages, worlds_root: Path
) -> None:
    write_world(worlds_root, "harbor", HARBOR_YAML)
    [result] = world_sync(dirs=[worlds_root]).results
    assert (result.action, result.errors) == ("created", [])
    assert World.objects.get().characters == []


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        ("[{]", [("", "json-syntax")]),
        ("[" + " " * 1_000_000 + "]", [("", "too-large")]),
        (b"\xff\xfe[]", [("", "not-utf8")]),
        ('[{"id": "a", "name": "A", "type": "npc", "fields": {"x": NaN}}]', [("", "json-syntax")]),
        ({"mira": MIRA}, [("", "not-a-list")]),
        (["mira"], [("/0", "type")]),
        ([{}], [("/0/id", "required"), ("/0/name", "required"), ("/0/type", "required")]),
        ([{**MIRA, "id": "Mira Vane"}], [("/0/id", "bad-id")]),
        ([{**MIRA, "id": 7}], [("/0/id", "bad-id")]),
        ([{**MIRA, "id": "a" * 101}], [("/0/id", "too-long")]),
        ([MIRA, {**OLD_TOM, "id": "mira"}], [("/1/id", "duplicate")]),
        ([{**MIRA, "name": "  "}], [("/0/name", "type")]),
        ([{**MIRA, "name": "n" * 201}], [("/0/name", "too-long")]),
        ([{**MIRA, "type": "villain"}], [("/0/type", "not-an-option")]),
        ([{**MIRA, "description": ["a"]}], [("/0/description", "type")]),
        ([{**MIRA, "description": "d" * 5001}], [("/0/description", "too-long")]),
        ([{**MIRA, "fields": [1, 2]}], [("/0/fields", "type")]),
        (
            '[{"id": "a", "name": "A", "type": "npc", "fields": {"x": 1e999}}]',
            [("/0/fields", "not-finite")],
        ),
        ([{**OLD_TOM, "id": f"c{i}"} for i in range(501)], [("", "too-many")]),
    ],
)
def test_each_broken_characters_file_is_an_error_naming_file_path_and_rule(
    packages, worlds_root: Path, content: Any, expected: list[tuple[str, str]]
) -> None:
    harbor_with(worlds_root, content)
    [result] = world_sync(dirs=[worlds_root]).results
    assert result.action == "error"
    assert issues(result) == sorted((CHARACTERS_FILE, path, code) for path, code in expected)
    world = World.objects.get()
    assert world.state == World.State.ERROR
    assert world.characters == []
    assert {e["file"] for e in world.errors} == {CHARACTERS_FILE}


def test_every_problem_of_the_file_is_reported_at_once(tmp_path: Path) -> None:
    folder = tmp_path / "harbor"
    write_characters(
        folder,
        [MIRA, {"id": "mira", "name": 5, "type": "villain"}, {**OLD_TOM, "fields": "x"}],
    )
    parsed = read_characters(folder)
    assert sorted((i.path, i.code) for i in parsed.errors) == [
        ("/1/id", "duplicate"),
        ("/1/name", "type"),
        ("/1/type", "not-an-option"),
        ("/2/fields", "type"),
    ]
    # Nothing half-read: with any error the parsed list is empty, not the good records.
    assert parsed.characters == []
    duplicate = next(i for i in parsed.errors if i.code == "duplicate")
    assert "already used by character 0" in duplicate.message


def test_a_syntax_error_gives_the_line_and_column(tmp_path: Path) -> None:
    write_characters(tmp_path / "w", '[\n  {"id": "mira",\n   "name": }\n]')
    [issue] = read_characters(tmp_path / "w").errors
    assert issue.code == "json-syntax"
    assert "line 3, column 12" in issue.message


def test_an_unknown_key_is_a_warning_and_is_left_out_of_the_record(
    packages, worlds_root: Path
) -> None:
    harbor_with(worlds_root, [{**OLD_TOM, "desciption": "typo"}])
    [result] = world_sync(dirs=[worlds_root]).results
    assert result.action == "created"
    assert [(w.file, w.path, w.code) for w in result.warnings if w.file == CHARACTERS_FILE] == [
        (CHARACTERS_FILE, "/0/desciption", "unknown-field")
    ]
    assert "desciption" not in World.objects.get().characters[0]


def test_a_broken_file_keeps_the_last_good_characters(packages, worlds_root: Path) -> None:
    folder = harbor_with(worlds_root, [MIRA, OLD_TOM])
    world_sync(dirs=[worlds_root])
    # One good record, one bad one: the good one must not be stored on its own either.
    write_characters(folder, [{**MIRA, "name": "Mira the Second"}, {"id": "x"}])
    [result] = world_sync(dirs=[worlds_root]).results
    assert result.action == "error"
    world = World.objects.get()
    assert world.state == World.State.ERROR
    assert [c["name"] for c in world.characters] == ["Mira Vane", "Old Tom"]
    # Fixing the file loads it again.
    write_characters(folder, [{**MIRA, "name": "Mira the Second"}])
    [result] = world_sync(dirs=[worlds_root]).results
    assert result.action == "updated"
    world.refresh_from_db()
    assert world.state == World.State.LOADED
    assert [c["name"] for c in world.characters] == ["Mira the Second"]


def test_the_command_prints_character_errors_with_file_and_path(
    packages, worlds_root: Path, capsys
) -> None:
    harbor_with(worlds_root, [{**MIRA, "type": "hero"}])
    call_command("sync_worlds", str(worlds_root))
    out = capsys.readouterr().out
    assert (
        "error   harbor/characters/characters.json:/0/type type must be player or npc, "
        "not 'hero' [not-an-option]"
    ) in out


def test_the_bundled_worlds_ship_valid_characters_with_a_player_each() -> None:
    bundled = Path(settings.BASE_DIR) / "world-packages"
    folders = sorted(p for p in bundled.iterdir() if p.is_dir())
    assert len(folders) >= 2
    for folder in folders:
        parsed = read_characters(folder)
        assert parsed.ok and not parsed.warnings, (folder.name, parsed.errors, parsed.warnings)
        assert any(c["type"] == "player" for c in parsed.characters), folder.name


def test_the_world_page_and_api_show_the_characters_escaped(packages, worlds_root: Path) -> None:
    harbor_with(worlds_root, [{**MIRA, "name": "<b>Mira</b>"}, OLD_TOM])
    world_sync(dirs=[worlds_root])
    client = Client()
    page = client.get("/worlds/harbor/").content.decode()
    assert "&lt;b&gt;Mira&lt;/b&gt;" in page and "<b>Mira</b>" not in page
    assert "Old Tom" in page
    body = client.get("/api/worlds/harbor").json()
    assert [c["id"] for c in body["characters"]] == ["mira", "old-tom"]
