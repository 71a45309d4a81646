"""Reading a world folder's characters/characters.json. Plain Python, no Django.

The file is optional. When present it is a JSON list of character records:

    [{"id": "mira", "name": "Mira Vane", "type": "player",
      "description": "A courier.", "fields": {"age": 31}}]

Every problem comes back as an Issue (file, JSON pointer, code, message), all at once, like
world.yaml's reader. Records are returned normalised: description defaults to "" and fields to
{}, so runtimes can read them without guarding each key.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from catalogue.manifest.types import Issue
from worlds.world_file import ID_RE

CHARACTERS_FILE = "characters/characters.json"
CHARACTER_KEYS = ("id", "name", "type", "description", "fields")
CHARACTER_TYPES = ("player", "npc")
ID_MAX = 100
NAME_MAX = 200
DESCRIPTION_MAX = 5_000
# Enough for any hand-written cast; a bigger list is a generated mistake, not a world.
CHARACTERS_MAX = 500
FILE_MAX_BYTES = 1_000_000


@dataclass
class CharactersFile:
    """The verdict on one world folder's characters file (no file: no characters, no errors)."""

    characters: list[dict[str, Any]] = field(default_factory=list)
    errors: list[Issue] = field(default_factory=list)
    warnings: list[Issue] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.errors


def _pointer(*parts: str | int) -> str:
    return "".join("/" + str(p).replace("~", "~0").replace("/", "~1") for p in parts)


def _refuse_constant(name: str) -> Any:
    # Python's json accepts NaN and Infinity; JSON, PostgreSQL and the runtimes do not.
    raise ValueError(f"{name} is not a JSON value")


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

    def error(path: str, code: str, message: str) -> None:
        result.errors.append(Issue(CHARACTERS_FILE, path, code, message))

    def warning(path: str, code: str, message: str) -> None:
        result.warnings.append(Issue(CHARACTERS_FILE, path, code, message))

    file = folder / CHARACTERS_FILE
    try:
        raw_bytes = file.read_bytes()
    except FileNotFoundError:
        return result
    except OSError as exc:
        error("", "unreadable", f"cannot read {CHARACTERS_FILE}: {exc.strerror}")
        return result
    if len(raw_bytes) > FILE_MAX_BYTES:
        error("", "too-large", f"is {len(raw_bytes)} bytes; at most {FILE_MAX_BYTES} are read")
        return result
    try:
        doc = json.loads(raw_bytes.decode("utf-8"), parse_constant=_refuse_constant)
    except UnicodeDecodeError:
        error("", "not-utf8", "is not UTF-8 text")
        return result
    except json.JSONDecodeError as exc:
        error(
            "",
            "json-syntax",
            f"is not valid JSON at line {exc.lineno}, column {exc.colno}: {exc.msg}",
        )
        return result
    except ValueError as exc:
        error("", "json-syntax", f"is not valid JSON: {exc}")
        return result
    if not isinstance(doc, list):
        error("", "not-a-list", "must be a JSON list of character records")
        return result
    if len(doc) > CHARACTERS_MAX:
        error("", "too-many", f"has {len(doc)} characters; at most {CHARACTERS_MAX}")
        return result

    seen: dict[str, int] = {}
    characters: list[dict[str, Any]] = []
    for i, item in enumerate(doc):
        record = _read_character(item, i, seen, error, warning)
        if record is not None:
            characters.append(record)
    if not result.errors:
        result.characters = characters
    return result


def _read_character(
    item: Any, i: int, seen: dict[str, int], error: Any, warning: Any
) -> dict[str, Any] | None:
    where = _pointer(i)
    if not isinstance(item, dict):
        error(where, "type", "a character must be an object with id, name and type")
        return None
    ok = True
    for key in item:
        if key not in CHARACTER_KEYS:
            # Kept out of the record; flagged so a typo ("desciption") shows.
            warning(
                where + _pointer(key), "unknown-field", f"unknown character key {key!r} is ignored"
            )

    character_id = item.get("id")
    if character_id is None:
        error(where + "/id", "required", "id is required")
        ok = False
    elif not isinstance(character_id, str) or not ID_RE.match(character_id):
        error(
            where + "/id",
            "bad-id",
            f"{character_id!r} is not a character ID (lowercase letters, digits and hyphens)",
        )
        ok = False
    elif len(character_id) > ID_MAX:
        error(where + "/id", "too-long", f"id must be at most {ID_MAX} characters")
        ok = False
    elif character_id in seen:
        error(
            where + "/id",
            "duplicate",
            f"id {character_id!r} is already used by character {seen[character_id]}",
        )
        ok = False
    else:
        seen[character_id] = i

    name = item.get("name")
    if name is None:
        error(where + "/name", "required", "name is required")
        ok = False
    elif not isinstance(name, str) or not name.strip():
        error(where + "/name", "type", "name must be a non-empty string")
        ok = False
    elif len(name.strip()) > NAME_MAX:
        error(where + "/name", "too-long", f"name must be at most {NAME_MAX} characters")
        ok = False

    kind = item.get("type")
    if kind is None:
        error(where + "/type", "required", "type is required (player or npc)")
        ok = False
    elif kind not in CHARACTER_TYPES:
        error(where + "/type", "not-an-option", f"type must be player or npc, not {kind!r}")
        ok = False

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
        "name": name.strip(),
        "type": kind,
        "description": description.strip(),
        "fields": fields,
    }
