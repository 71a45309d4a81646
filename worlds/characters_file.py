"""Reading a world folder's characters/characters.json. Plain Python, no Django.

The file is optional. When present it is a JSON list of character records:

    [{"id": "mira", "name": "Mira Vane", "type": "player",
      "description": "A courier.", "fields": {"age": 31}}]

Every problem comes back as an Issue (file, JSON pointer, code, message), all at once, like
world.yaml's reader. Records are returned normalised: description defaults to "" and fields to
{}, so runtimes can read them without guarding each key.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from core.pointer import join
from worlds.file_checks import (
    UNREAD,
    Report,
    Verdict,
    check_id,
    check_text,
    load_file,
    load_json,
    read_records,
    warn_unknown_keys,
)

CHARACTERS_FILE = "characters/characters.json"
CHARACTER_KEYS = ("id", "name", "type", "description", "fields")
CHARACTER_TYPES = ("player", "npc")
ID_MAX = 100
NAME_MAX = 200
DESCRIPTION_MAX = 5_000
# Enough for any hand-written cast; a bigger list is a generated mistake, not a world.
CHARACTERS_MAX = 500


@dataclass
class CharactersFile(Verdict):
    """The verdict on one world folder's characters file (no file: no characters, no errors)."""

    characters: list[dict[str, Any]] = field(default_factory=list)


def _has_non_finite(value: Any) -> bool:
    if isinstance(value, float):
        return not math.isfinite(value)  # a huge literal such as 1e999 parses as inf
    if isinstance(value, dict):
        return any(_has_non_finite(v) for v in value.values())
    if isinstance(value, list):
        return any(_has_non_finite(v) for v in value)
    return False


def read_characters(folder: Path) -> CharactersFile:
    """Parse and validate <folder>/characters/characters.json."""
    result = CharactersFile()
    error, warning = result.reporters(CHARACTERS_FILE)
    doc = load_file(folder, CHARACTERS_FILE, error, parse=load_json)
    if doc is UNREAD:
        return result
    characters = read_records(
        doc,
        _read_character,
        error,
        warning,
        not_a_list=("not-a-list", "must be a JSON list of character records"),
        limit=CHARACTERS_MAX,
        plural="characters",
    )
    if not result.errors:
        result.characters = characters
    return result


def _read_character(
    item: Any, i: int, seen: dict[str, int], error: Report, warning: Report
) -> dict[str, Any] | None:
    where = join("", i)
    if not isinstance(item, dict):
        error(where, "type", "a character must be an object with id, name and type")
        return None
    # Unknown keys are kept out of the record; flagged so a typo ("desciption") shows.
    warn_unknown_keys(item, CHARACTER_KEYS, where, warning, noun="character")

    character_id = item.get("id")
    ok = check_id(
        character_id, where + "/id", error, index=i, seen=seen, noun="character", limit=ID_MAX
    )
    name = check_text(item.get("name"), where + "/name", "name", NAME_MAX, error, required=True)
    ok = ok and name is not None

    kind = item.get("type")
    if kind is None:
        error(where + "/type", "required", "type is required (player or npc)")
        ok = False
    elif kind not in CHARACTER_TYPES:
        error(where + "/type", "not-an-option", f"type must be player or npc, not {kind!r}")
        ok = False

    # Unlike check_text(): a null description is an error and the limit counts surrounding spaces.
    description = item.get("description", "")
    if not isinstance(description, str):
        error(where + "/description", "type", "description must be a string")
        ok = False
    elif len(description) > DESCRIPTION_MAX:
        error(
            where + "/description",
            "too-long",
            f"description must be at most {DESCRIPTION_MAX} characters",
        )
        ok = False

    fields = item.get("fields", {})
    if not isinstance(fields, dict):
        error(where + "/fields", "type", "fields must be an object {name: value}")
        ok = False
    elif _has_non_finite(fields):
        error(where + "/fields", "not-finite", "fields may not hold NaN or infinite numbers")
        ok = False

    if not ok:
        return None
    return {
        "id": character_id,
        "name": name,
        "type": kind,
        "description": description.strip(),
        "fields": fields,
    }
