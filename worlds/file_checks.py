"""What the readers of a world folder's files share. Plain Python, no Django.

world.yaml, characters/characters.json, data/lorebook.yaml and data/world.data.yaml are each
read by their own module; the rules they have in common live here, written once: the verdict
with its errors and warnings, reading and parsing a file (size, UTF-8, syntax), unknown keys,
record IDs and short texts. Every problem is an Issue (file, JSON pointer built with
core.pointer.join, code, message), collected all at once.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ruamel.yaml import YAML
from ruamel.yaml.error import MarkedYAMLError, YAMLError

from catalogue.manifest.types import Issue
from core.pointer import join

# World, character and lore entry IDs: the package ID rule.
ID_RE = re.compile(r"^[a-z0-9]+(?:-[a-z0-9]+)*$")
ID_HINT = "lowercase letters, digits and hyphens"
# The files are hand-written text; anything bigger is a mistake, not a world.
FILE_MAX_BYTES = 1_000_000

# A reporter: error(path, code, message) or warning(path, code, message).
Report = Callable[[str, str, str], None]
# What load_file, load_json and load_yaml return when the file could not be parsed (already reported).
UNREAD = object()


@dataclass(kw_only=True)
class Verdict:
    """The errors and warnings of reading one file; a reader's verdict adds what it read."""

    errors: list[Issue] = field(default_factory=list)
    warnings: list[Issue] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.errors

    def reporters(self, file: str) -> tuple[Report, Report]:
        """error() and warning() functions that add an Issue about `file` to this verdict."""

        def error(path: str, code: str, message: str) -> None:
            self.errors.append(Issue(file, path, code, message))

        def warning(path: str, code: str, message: str) -> None:
            self.warnings.append(Issue(file, path, code, message))

        return error, warning


def read_bytes(file: Path, shown_as: str, error: Report, *, required: bool) -> bytes | None:
    """The file's bytes, or None when it is absent (an error only if required) or unreadable."""
    try:
        return file.read_bytes()
    except FileNotFoundError:
        if required:
            error("", "missing-file", f"{shown_as} does not exist")
        return None
    except OSError as exc:
        error("", "unreadable", f"cannot read {shown_as}: {exc.strerror}")
        return None


def load_file(
    folder: Path, relative: str, error: Report, *, parse: Callable[[bytes, Report], Any]
) -> Any:
    """An optional file of the folder parsed (parse: load_json or load_yaml), or UNREAD when it
    is absent or could not be read (reported)."""
    raw_bytes = read_bytes(folder / relative, relative, error, required=False)
    return UNREAD if raw_bytes is None else parse(raw_bytes, error)


def _decode(raw_bytes: bytes, error: Report) -> str | None:
    if len(raw_bytes) > FILE_MAX_BYTES:
        error("", "too-large", f"is {len(raw_bytes)} bytes; at most {FILE_MAX_BYTES} are read")
        return None
    try:
        return raw_bytes.decode("utf-8")
    except UnicodeDecodeError:
        error("", "not-utf8", "is not UTF-8 text")
        return None


def _refuse_constant(name: str) -> Any:
    # Python's json accepts NaN and Infinity; JSON, PostgreSQL and the runtimes do not.
    raise ValueError(f"{name} is not a JSON value")


def load_json(raw_bytes: bytes, error: Report) -> Any:
    """The parsed JSON document, or UNREAD when it is too large, not UTF-8 or not JSON."""
    text = _decode(raw_bytes, error)
    if text is None:
        return UNREAD
    try:
        return json.loads(text, parse_constant=_refuse_constant)
    except json.JSONDecodeError as exc:
        error(
            "",
            "json-syntax",
            f"is not valid JSON at line {exc.lineno}, column {exc.colno}: {exc.msg}",
        )
    except ValueError as exc:
        error("", "json-syntax", f"is not valid JSON: {exc}")
    return UNREAD


def load_yaml(raw_bytes: bytes, error: Report) -> Any:
    """The parsed YAML document (safe types only), or UNREAD when it cannot be read."""
    text = _decode(raw_bytes, error)
    if text is None:
        return UNREAD
    try:
        return YAML(typ="safe", pure=True).load(text)
    except MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark else ""
        error("", "yaml-syntax", f"is not valid YAML{where}: {exc.problem or exc.context}")
    except YAMLError as exc:
        error("", "yaml-syntax", f"is not valid YAML: {exc}")
    return UNREAD


def _a(noun: str) -> str:
    return f"{'an' if noun[0] in 'aeiou' else 'a'} {noun}"


def warn_unknown_keys(
    mapping: dict[Any, Any], known: Iterable[str], where: str, warning: Report, *, noun: str = ""
) -> None:
    """Warn of each key not in `known`: it is left out of what is read, but a typo should show."""
    label = f"{noun} key" if noun else "key"
    for key in mapping:
        if key not in known:
            warning(join(where, str(key)), "unknown-field", f"unknown {label} {key!r} is ignored")


def check_id(
    value: Any,
    where: str,
    error: Report,
    *,
    index: int,
    seen: dict[str, int],
    noun: str,
    limit: int,
    pattern: re.Pattern[str] = ID_RE,
    hint: str = ID_HINT,
) -> bool:
    """Whether a record's id is present, well-formed, short enough and not used by an earlier
    record of the same list (`seen`: id -> index, updated here); each failure is reported."""
    if value is None:
        error(where, "required", "id is required")
    elif not isinstance(value, str) or not pattern.match(value):
        error(where, "bad-id", f"{value!r} is not {_a(noun)} ID ({hint})")
    elif len(value) > limit:
        error(where, "too-long", f"id must be at most {limit} characters")
    elif value in seen:
        error(where, "duplicate", f"id {value!r} is already used by {noun} {seen[value]}")
    else:
        seen[value] = index
        return True
    return False


def check_text(
    value: Any,
    where: str,
    name: str,
    limit: int,
    error: Report,
    *,
    required: bool,
    limit_counts_spaces: bool = False,
) -> str | None:
    """A stripped string within `limit`, or None when it is absent or does not fit (reported).

    The limit applies to the stripped text unless limit_counts_spaces (world.yaml's rule).
    """
    if value is None:
        if required:
            error(where, "required", f"{name} is required")
        return None
    if not isinstance(value, str) or (required and not value.strip()):
        error(where, "type", f"{name} must be a {'non-empty ' if required else ''}string")
        return None
    if len(value if limit_counts_spaces else value.strip()) > limit:
        error(where, "too-long", f"{name} must be at most {limit} characters")
        return None
    return value.strip()


def distinct_texts(
    values: list[Any], where: str, noun: str, limit: int, error: Report
) -> tuple[list[str], bool]:
    """The stripped strings of a list (at `where`) that fit and do not repeat, and whether all
    did (each one that did not is reported)."""
    clean_values: list[str] = []
    ok = True
    for k, value in enumerate(values):
        at = join(where, k)
        clean = check_text(value, at, _a(noun), limit, error, required=True)
        if clean is None:
            ok = False
        elif clean in clean_values:
            error(at, "duplicate", f"{noun} {clean!r} is listed twice")
            ok = False
        else:
            clean_values.append(clean)
    return clean_values, ok


def read_records(
    doc: Any,
    read_one: Callable[[Any, int, dict[str, int], Report, Report], dict[str, Any] | None],
    error: Report,
    warning: Report,
    *,
    not_a_list: tuple[str, str],
    limit: int,
    plural: str,
    where: str = "",
    name: str = "",
) -> list[dict[str, Any]]:
    """The records of a list, each read by read_one(item, index, seen ids, error, warning), those
    that fail left out; none when `doc` is not a list (not_a_list: code and message) or holds
    more than `limit` items ("[name ]has N <plural>; at most <limit>")."""
    if not isinstance(doc, list):
        error(where, *not_a_list)
        return []
    if len(doc) > limit:
        error(
            where,
            "too-many",
            f"{name + ' ' if name else ''}has {len(doc)} {plural}; at most {limit}",
        )
        return []
    seen: dict[str, int] = {}
    records = []
    for i, item in enumerate(doc):
        record = read_one(item, i, seen, error, warning)
        if record is not None:
            records.append(record)
    return records
