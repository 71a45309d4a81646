"""Reading a world folder's lorebook and character field definitions. Plain Python, no Django.

Both files are optional and sit at paths the spec reserves for the kernel:

- data/lorebook.yaml: a list of lore entries {id, title, keys, text};
- data/world.data.yaml: the world's data; of it the hub reads `characterSchema`, the list of
  character field definitions (attributes) that plugins' `character-attribute` references name.

Every problem comes back as an Issue (file, JSON pointer, code, message), all at once, like
characters.json's reader. Records are returned normalised (every key present), so runtimes can
read them without guarding each key.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from catalogue.manifest.types import Issue
from core.pointer import join
from worlds.characters_file import CHARACTERS_FILE
from worlds.file_checks import (
    UNREAD,
    Report,
    Verdict,
    check_id,
    check_text,
    distinct_texts,
    load_file,
    load_yaml,
    read_records,
    warn_unknown_keys,
)

LOREBOOK_FILE = "data/lorebook.yaml"
WORLD_DATA_FILE = "data/world.data.yaml"

ENTRY_KEYS = ("id", "title", "keys", "text")
ENTRY_ID_MAX = 100
TITLE_MAX = 200
KEY_MAX = 100
KEYS_MAX = 50
TEXT_MAX = 10_000
# A hand-written lorebook; a bigger one is a generated mistake, not a world.
ENTRIES_MAX = 1_000

WORLD_DATA_KEYS = ("characterSchema",)
ATTRIBUTE_KEYS = ("id", "name", "type", "description", "min", "max", "options", "default")
# The value types the manifest spec lets a character-attribute reference ask for.
ATTRIBUTE_TYPES = ("string", "number", "boolean", "enum", "array", "object", "map")
# Attribute ids are the keys of a character record's `fields` ({"debts": 3}).
ATTRIBUTE_ID_RE = re.compile(r"^[A-Za-z][A-Za-z0-9_-]*$")
ATTRIBUTE_ID_MAX = 64
ATTRIBUTE_NAME_MAX = 200
ATTRIBUTE_DESCRIPTION_MAX = 2_000
OPTIONS_MAX = 100
OPTION_MAX = 200
ATTRIBUTES_MAX = 200


@dataclass
class DataFile(Verdict):
    """The verdict on one optional data file (no file: no records, no errors)."""

    records: list[dict[str, Any]] = field(default_factory=list)


# ------------------------------------------------------------------ data/lorebook.yaml


def read_lorebook(folder: Path) -> DataFile:
    """Parse and validate <folder>/data/lorebook.yaml: a list of {id, title, keys, text}."""
    result = DataFile()
    error, warning = result.reporters(LOREBOOK_FILE)
    doc = load_file(folder, LOREBOOK_FILE, error, parse=load_yaml)
    if doc is UNREAD or doc is None:  # absent, unreadable, or an empty file
        return result
    entries = read_records(
        doc,
        _read_entry,
        error,
        warning,
        not_a_list=("not-a-list", "must be a YAML list of lore entries (id, title, keys, text)"),
        limit=ENTRIES_MAX,
        plural="entries",
    )
    if not result.errors:
        result.records = entries
    return result


def _read_entry(
    item: Any, i: int, seen: dict[str, int], error: Report, warning: Report
) -> dict[str, Any] | None:
    where = join("", i)
    if not isinstance(item, dict):
        error(where, "type", "a lore entry must be a mapping with id, title and text")
        return None
    # Unknown keys are left out of the entry; flagged so a typo ("titel") shows.
    warn_unknown_keys(item, ENTRY_KEYS, where, warning, noun="entry")
    entry_id = item.get("id")
    ok = check_id(
        entry_id, where + "/id", error, index=i, seen=seen, noun="entry", limit=ENTRY_ID_MAX
    )
    title = check_text(
        item.get("title"), where + "/title", "title", TITLE_MAX, error, required=True
    )
    body = check_text(item.get("text"), where + "/text", "text", TEXT_MAX, error, required=True)
    ok = ok and title is not None and body is not None

    keys: list[str] = []
    raw_keys = item.get("keys", [])
    if not isinstance(raw_keys, list):
        error(where + "/keys", "type", "keys must be a list of strings")
        ok = False
    elif len(raw_keys) > KEYS_MAX:
        error(where + "/keys", "too-many", f"keys has {len(raw_keys)} entries; at most {KEYS_MAX}")
        ok = False
    else:
        keys, all_fit = distinct_texts(raw_keys, where + "/keys", "key", KEY_MAX, error)
        ok = ok and all_fit
    if not ok:
        return None
    return {"id": entry_id, "title": title, "keys": keys, "text": body}


# ------------------------------------------------------------------ characterSchema


def read_character_schema(folder: Path) -> DataFile:
    """Parse <folder>/data/world.data.yaml and validate its `characterSchema` (a list)."""
    result = DataFile()
    error, warning = result.reporters(WORLD_DATA_FILE)
    doc = load_file(folder, WORLD_DATA_FILE, error, parse=load_yaml)
    if doc is UNREAD or doc is None:
        return result
    if not isinstance(doc, dict):
        error("", "not-a-mapping", "must be a mapping of keys (characterSchema, ...)")
        return result
    warn_unknown_keys(doc, WORLD_DATA_KEYS, "", warning)
    schema = doc.get("characterSchema")
    if schema is None:
        return result
    attributes = read_records(
        schema,
        _read_attribute,
        error,
        warning,
        not_a_list=("type", "characterSchema must be a list of attributes"),
        limit=ATTRIBUTES_MAX,
        plural="attributes",
        where="/characterSchema",
        name="characterSchema",
    )
    if not result.errors:
        result.records = attributes
    return result


def _is_number(value: Any) -> bool:
    # Booleans are never numbers, even though Python treats True as 1.
    return isinstance(value, int | float) and not isinstance(value, bool)


def _read_attribute(
    item: Any, i: int, seen: dict[str, int], error: Report, warning: Report
) -> dict[str, Any] | None:
    where = join("", "characterSchema", i)
    if not isinstance(item, dict):
        error(where, "type", "an attribute must be a mapping with id and type")
        return None
    warn_unknown_keys(item, ATTRIBUTE_KEYS, where, warning, noun="attribute")
    attribute_id = item.get("id")
    ok = check_id(
        attribute_id,
        where + "/id",
        error,
        index=i,
        seen=seen,
        noun="attribute",
        limit=ATTRIBUTE_ID_MAX,
        pattern=ATTRIBUTE_ID_RE,
        hint="a letter, then letters, digits, _ or -",
    )

    kind = item.get("type")
    if kind is None:
        error(where + "/type", "required", "type is required")
        ok = False
    elif kind not in ATTRIBUTE_TYPES:
        error(
            where + "/type",
            "not-an-option",
            f"type must be one of {', '.join(ATTRIBUTE_TYPES)}, not {kind!r}",
        )
        ok = False
        kind = None

    name = check_text(
        item.get("name"), where + "/name", "name", ATTRIBUTE_NAME_MAX, error, required=False
    )
    if item.get("name") is not None and name is None:
        ok = False
    description = check_text(
        item.get("description"),
        where + "/description",
        "description",
        ATTRIBUTE_DESCRIPTION_MAX,
        error,
        required=False,
    )
    if item.get("description") is not None and description is None:
        ok = False

    bounds: dict[str, float | int | None] = {"min": None, "max": None}
    for key in ("min", "max"):
        if key not in item:
            continue
        value = item[key]
        if kind is not None and kind != "number":
            error(where + "/" + key, "not-for-type", f"{key} applies to number attributes only")
            ok = False
        elif not _is_number(value):
            error(where + "/" + key, "type", f"{key} must be a number")
            ok = False
        elif not math.isfinite(value):
            error(where + "/" + key, "not-finite", f"{key} must be a finite number")
            ok = False
        else:
            bounds[key] = value
    low, high = bounds["min"], bounds["max"]
    if low is not None and high is not None and low > high:
        error(where + "/max", "below-min", f"max {high} is below min {low}")
        ok = False

    options: list[str] = []
    if "options" in item:
        raw = item["options"]
        if kind is not None and kind != "enum":
            error(where + "/options", "not-for-type", "options apply to enum attributes only")
            ok = False
        elif not isinstance(raw, list) or not raw:
            error(where + "/options", "type", "options must be a non-empty list of strings")
            ok = False
        elif len(raw) > OPTIONS_MAX:
            error(where + "/options", "too-many", f"options has {len(raw)}; at most {OPTIONS_MAX}")
            ok = False
        else:
            options, all_fit = distinct_texts(raw, where + "/options", "option", OPTION_MAX, error)
            ok = ok and all_fit
    elif kind == "enum":
        error(where + "/options", "required", "an enum attribute needs options")
        ok = False

    default = item.get("default")
    if default is not None and kind is not None:
        problem = _default_problem(kind, default, low, high, options) or _json_problem(default)
        if problem is not None:
            error(where + "/default", problem[0], problem[1])
            ok = False

    if not ok:
        return None
    return {
        "id": attribute_id,
        "name": name or attribute_id,
        "type": kind,
        "description": description or "",
        "min": low,
        "max": high,
        "options": options,
        "default": default,
    }


def _default_problem(
    kind: str, value: Any, low: Any, high: Any, options: list[str]
) -> tuple[str, str] | None:
    """(code, message) when a default does not fit its attribute, else None."""
    if kind == "number":
        if not _is_number(value):
            return "type", "default must be a number"
        if not math.isfinite(value):
            return "not-finite", "default must be a finite number"
        if low is not None and value < low:
            return "below-min", f"default {value} is below min {low}"
        if high is not None and value > high:
            return "above-max", f"default {value} is above max {high}"
        return None
    if kind == "string":
        return None if isinstance(value, str) else ("type", "default must be a string")
    if kind == "boolean":
        return None if isinstance(value, bool) else ("type", "default must be true or false")
    if kind == "enum":
        if value in options:
            return None
        return "not-an-option", f"default {value!r} is not one of the options"
    if kind == "array":
        return None if isinstance(value, list) else ("type", "default must be a list")
    if not isinstance(value, dict):  # object and map
        return "type", "default must be a mapping"
    return None


def _json_problem(value: Any) -> tuple[str, str] | None:
    """YAML has values JSON (and so the runtimes) lacks: dates, non-string keys, .nan, .inf."""
    if isinstance(value, float) and not math.isfinite(value):
        return "not-finite", "default may not hold NaN or infinite numbers"
    if isinstance(value, list):
        return next((p for p in map(_json_problem, value) if p), None)
    if isinstance(value, dict):
        if any(not isinstance(k, str) for k in value):
            return "type", "default may only use string keys"
        return next((p for p in map(_json_problem, value.values()) if p), None)
    if value is None or isinstance(value, str | int | float | bool):
        return None
    return "type", f"default may not hold a {type(value).__name__} (quote it to make a string)"


def character_field_warnings(
    characters: list[dict[str, Any]], schema: list[dict[str, Any]]
) -> list[Issue]:
    """Character fields that do not fit their definition (warnings: the records still load).

    Only fields the schema defines are checked; others are the world's own business.
    """
    by_id = {a["id"]: a for a in schema}
    issues = []
    for i, character in enumerate(characters):
        for key, value in (character.get("fields") or {}).items():
            attribute = by_id.get(key)
            if attribute is None or value is None:
                continue
            problem = _default_problem(
                attribute["type"], value, attribute["min"], attribute["max"], attribute["options"]
            )
            if problem is not None:
                code, message = problem
                issues.append(
                    Issue(
                        CHARACTERS_FILE,
                        join("", i, "fields", key),
                        f"field-{code}",
                        f"{character.get('id')}.{key}: " + message.replace("default", "value", 1),
                    )
                )
    return issues
