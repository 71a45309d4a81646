"""data/lorebook.yaml and the character field definitions (data/world.data.yaml's
characterSchema): synced onto the World row, every problem named by file, JSON path and rule, a
broken file never replacing the last good values, and both shown escaped on the world page.

Personas (tests/conftest.py): the anonymous visitor reads world pages.
"""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest
from django.conf import settings
from django.test import Client
from worlds_testdata import HARBOR_YAML, write_world

from worlds.characters_file import CHARACTERS_FILE
from worlds.data_files import (
    LOREBOOK_FILE,
    WORLD_DATA_FILE,
    read_character_schema,
    read_lorebook,
)
from worlds.models import World
from worlds.services import world_sync

LORE = """\
- id: fog-bell
  title: The fog bell
  keys: [bell, fog]
  text: Rung by hand on foggy nights.
- id: ledger
  title: "  The port ledger  "
  text: Every favour owed.
"""
SCHEMA = """\
characterSchema:
  - id: debts
    name: Favours owed
    type: number
    min: 0
    max: 10
    default: 0
  - id: house
    type: enum
    options: [brass, copper]
"""


def write(folder: Path, relative: str, text: str | bytes) -> None:
    target = folder / relative
    target.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(text, bytes):
        target.write_bytes(text)
    else:
        target.write_text(textwrap.dedent(text), encoding="utf-8")


def harbor(worlds_root: Path, *, lore: str | None = LORE, schema: str | None = SCHEMA) -> Path:
    folder = write_world(worlds_root, "harbor", HARBOR_YAML)
    if lore is not None:
        write(folder, LOREBOOK_FILE, lore)
    if schema is not None:
        write(folder, WORLD_DATA_FILE, schema)
    return folder


def codes(result) -> list[tuple[str, str, str]]:
    return sorted((i.file, i.path, i.code) for i in result.errors)


def test_the_lorebook_and_field_definitions_are_stored_normalised(packages, worlds_root) -> None:
    harbor(worlds_root)
    [first] = world_sync(dirs=[worlds_root]).results
    [second] = world_sync(dirs=[worlds_root]).results
    assert (first.action, first.errors, second.action) == ("created", [], "unchanged")
    world = World.objects.get(world_id="harbor")
    assert world.lorebook == [
        {
            "id": "fog-bell",
            "title": "The fog bell",
            "keys": ["bell", "fog"],
            "text": "Rung by hand on foggy nights.",
        },
        # keys are optional; titles are stripped.
        {"id": "ledger", "title": "The port ledger", "keys": [], "text": "Every favour owed."},
    ]
    assert world.character_schema == [
        {
            "id": "debts",
            "name": "Favours owed",
            "type": "number",
            "description": "",
            "min": 0,
            "max": 10,
            "options": [],
            "default": 0,
        },
        # name defaults to the id; absent rules are null or empty, so readers need no guards.
        {
            "id": "house",
            "name": "house",
            "type": "enum",
            "description": "",
            "min": None,
            "max": None,
            "options": ["brass", "copper"],
            "default": None,
        },
    ]


def test_a_world_without_the_files_has_none_and_no_errors(packages, worlds_root) -> None:
    harbor(worlds_root, lore=None, schema=None)
    [result] = world_sync(dirs=[worlds_root]).results
    assert (result.action, result.errors) == ("created", [])
    assert [w for w in result.warnings if w.file != "world.yaml"] == []
    world = World.objects.get()
    assert (world.lorebook, world.character_schema) == ([], [])


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("id: x\n", [("", "not-a-list")]),
        ("- just a string\n", [("/0", "type")]),
        ("- title: T\n  text: x\n", [("/0/id", "required")]),
        ("- id: Bad_Id\n  title: T\n  text: x\n", [("/0/id", "bad-id")]),
        ("- id: a\n  text: x\n", [("/0/title", "required")]),
        ("- id: a\n  title: T\n  text: '  '\n", [("/0/text", "type")]),
        ("- id: a\n  title: T\n  text: x\n  keys: bell\n", [("/0/keys", "type")]),
        ("- id: a\n  title: T\n  text: x\n  keys: [bell, 3]\n", [("/0/keys/1", "type")]),
        ("- id: a\n  title: T\n  text: x\n  keys: [bell, bell]\n", [("/0/keys/1", "duplicate")]),
        (
            "- {id: a, title: T, text: x}\n- {id: a, title: U, text: y}\n",
            [("/1/id", "duplicate")],
        ),
        ("- id: a\n  title: T\n  text: " + "x" * 10_001 + "\n", [("/0/text", "too-long")]),
        ("- id: a\n  title: [unclosed\n", [("", "yaml-syntax")]),
    ],
)
def test_each_broken_lorebook_is_an_error_naming_file_path_and_rule(
    tmp_path: Path, text: str, expected: list[tuple[str, str]]
) -> None:
    write(tmp_path, LOREBOOK_FILE, text)
    result = read_lorebook(tmp_path)
    assert codes(result) == [(LOREBOOK_FILE, path, code) for path, code in expected]
    assert result.records == []


def test_bytes_that_are_not_utf8_are_refused(tmp_path: Path) -> None:
    write(tmp_path, LOREBOOK_FILE, b"- id: a\n  title: \xff\n")
    assert codes(read_lorebook(tmp_path)) == [(LOREBOOK_FILE, "", "not-utf8")]


@pytest.mark.parametrize(
    ("attribute", "expected"),
    [
        ("{type: number}", [("/characterSchema/0/id", "required")]),
        ("{id: 9lives, type: number}", [("/characterSchema/0/id", "bad-id")]),
        ("{id: a}", [("/characterSchema/0/type", "required")]),
        ("{id: a, type: integer}", [("/characterSchema/0/type", "not-an-option")]),
        ("{id: a, type: enum}", [("/characterSchema/0/options", "required")]),
        ("{id: a, type: enum, options: [x, x]}", [("/characterSchema/0/options/1", "duplicate")]),
        ("{id: a, type: string, options: [x]}", [("/characterSchema/0/options", "not-for-type")]),
        ("{id: a, type: string, min: 1}", [("/characterSchema/0/min", "not-for-type")]),
        ("{id: a, type: number, min: true}", [("/characterSchema/0/min", "type")]),
        ("{id: a, type: number, max: .inf}", [("/characterSchema/0/max", "not-finite")]),
        ("{id: a, type: number, min: 5, max: 1}", [("/characterSchema/0/max", "below-min")]),
        (
            "{id: a, type: number, max: 3, default: 4}",
            [("/characterSchema/0/default", "above-max")],
        ),
        ("{id: a, type: boolean, default: 1}", [("/characterSchema/0/default", "type")]),
        (
            "{id: a, type: enum, options: [x], default: y}",
            [("/characterSchema/0/default", "not-an-option")],
        ),
        # An unquoted date is a YAML date, which JSON (and so the runtimes) cannot carry.
        ("{id: a, type: array, default: [2024-01-01]}", [("/characterSchema/0/default", "type")]),
        ("{id: a, type: map, default: {x: .nan}}", [("/characterSchema/0/default", "not-finite")]),
    ],
)
def test_each_broken_field_definition_is_an_error_naming_file_path_and_rule(
    tmp_path: Path, attribute: str, expected: list[tuple[str, str]]
) -> None:
    write(tmp_path, WORLD_DATA_FILE, f"characterSchema:\n  - {attribute}\n")
    result = read_character_schema(tmp_path)
    assert codes(result) == [(WORLD_DATA_FILE, path, code) for path, code in expected]
    assert result.records == []


def test_duplicate_attributes_and_a_schema_that_is_not_a_list_are_refused(tmp_path: Path) -> None:
    write(
        tmp_path,
        WORLD_DATA_FILE,
        "characterSchema:\n  - {id: a, type: string}\n  - {id: a, type: map}\n",
    )
    assert codes(read_character_schema(tmp_path)) == [
        (WORLD_DATA_FILE, "/characterSchema/1/id", "duplicate")
    ]
    write(tmp_path, WORLD_DATA_FILE, "characterSchema: {id: a}\n")
    assert codes(read_character_schema(tmp_path)) == [(WORLD_DATA_FILE, "/characterSchema", "type")]


def test_unknown_keys_are_warnings_and_left_out(tmp_path: Path) -> None:
    write(tmp_path, LOREBOOK_FILE, "- {id: a, titel: T, title: T, text: x}\n")
    write(
        tmp_path,
        WORLD_DATA_FILE,
        "sources: {}\ncharacterSchema:\n  - {id: a, type: string, unit: kg}\n",
    )
    lore, schema = read_lorebook(tmp_path), read_character_schema(tmp_path)
    assert (lore.errors, schema.errors) == ([], [])
    assert [(w.path, w.code) for w in lore.warnings] == [("/0/titel", "unknown-field")]
    assert [(w.path, w.code) for w in schema.warnings] == [
        ("/sources", "unknown-field"),
        ("/characterSchema/0/unit", "unknown-field"),
    ]
    assert "titel" not in lore.records[0] and "unit" not in schema.records[0]


def test_a_character_field_that_does_not_fit_its_definition_is_a_warning(
    packages, worlds_root
) -> None:
    folder = harbor(worlds_root)
    write(
        folder,
        CHARACTERS_FILE,
        '[{"id": "mira", "name": "Mira", "type": "player",'
        ' "fields": {"debts": 11, "house": "iron", "mood": "grim"}}]',
    )
    [result] = world_sync(dirs=[worlds_root]).results
    assert result.action == "created"  # warnings only: the world loads
    assert sorted((w.file, w.path, w.code) for w in result.warnings if w.file != "world.yaml") == [
        (CHARACTERS_FILE, "/0/fields/debts", "field-above-max"),
        (CHARACTERS_FILE, "/0/fields/house", "field-not-an-option"),
    ]


def test_a_broken_file_keeps_every_last_good_value_and_marks_the_world(
    packages, worlds_root
) -> None:
    folder = harbor(worlds_root)
    world_sync(dirs=[worlds_root])
    good = World.objects.get()
    write(folder, LOREBOOK_FILE, "- {id: fog-bell, title: Changed, text: new}\n- {id: x}\n")
    [result] = world_sync(dirs=[worlds_root]).results
    assert result.action == "error"
    assert codes(result) == [
        (LOREBOOK_FILE, "/1/text", "required"),
        (LOREBOOK_FILE, "/1/title", "required"),
    ]
    world = World.objects.get()
    assert world.state == World.State.ERROR
    # Even the entry that was fine in the broken file is not half-written.
    assert world.lorebook == good.lorebook and world.character_schema == good.character_schema

    write(folder, LOREBOOK_FILE, LORE)
    write(folder, WORLD_DATA_FILE, "characterSchema:\n  - {id: a, type: colour}\n")
    [result] = world_sync(dirs=[worlds_root]).results
    assert codes(result) == [(WORLD_DATA_FILE, "/characterSchema/0/type", "not-an-option")]
    world = World.objects.get()
    assert (world.state, world.character_schema) == (World.State.ERROR, good.character_schema)
    assert world.errors == [
        {
            "file": WORLD_DATA_FILE,
            "path": "/characterSchema/0/type",
            "code": "not-an-option",
            "message": world.errors[0]["message"],
        }
    ]


def test_the_bundled_worlds_ship_a_lorebook_and_field_definitions() -> None:
    bundled = Path(settings.BASE_DIR) / "world-packages"
    folders = sorted(p for p in bundled.iterdir() if p.is_dir())
    assert folders
    for folder in folders:
        lore, schema = read_lorebook(folder), read_character_schema(folder)
        assert (lore.errors, lore.warnings, schema.errors, schema.warnings) == ([], [], [], [])
        assert len(lore.records) >= 2 and len(schema.records) >= 2, folder.name


def test_the_bundled_characters_fit_their_field_definitions(packages) -> None:
    from worlds.characters_file import read_characters
    from worlds.data_files import character_field_warnings

    for folder in sorted((Path(settings.BASE_DIR) / "world-packages").iterdir()):
        if folder.is_dir():
            cast, schema = read_characters(folder), read_character_schema(folder)
            assert character_field_warnings(cast.characters, schema.records) == [], folder.name


def test_the_world_page_and_api_show_them_escaped(packages, worlds_root) -> None:
    harbor(
        worlds_root,
        lore="- id: x\n  title: <b>Bold</b>\n  keys: ['<i>k</i>']\n  text: <script>alert(1)</script>\n",
        schema="characterSchema:\n  - {id: a, name: '<em>A</em>', type: enum, options: ['<u>o</u>']}\n",
    )
    world_sync(dirs=[worlds_root])
    page = Client().get("/worlds/harbor/").content.decode()
    for raw, escaped in [
        ("<b>Bold</b>", "&lt;b&gt;Bold&lt;/b&gt;"),
        ("<i>k</i>", "&lt;i&gt;k&lt;/i&gt;"),
        ("<script>alert(1)</script>", "&lt;script&gt;alert(1)&lt;/script&gt;"),
        ("<em>A</em>", "&lt;em&gt;A&lt;/em&gt;"),
        ("<u>o</u>", "&lt;u&gt;o&lt;/u&gt;"),
    ]:
        assert raw not in page and escaped in page
    assert "<h2>Lorebook</h2>" in page and "<h2>Character fields</h2>" in page
    body = Client().get("/api/worlds/harbor").json()
    assert body["lorebook"][0]["title"] == "<b>Bold</b>"
    assert body["character_schema"][0]["options"] == ["<u>o</u>"]
