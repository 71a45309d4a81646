"""The community directory: covel-plugins' registry format, validated by its own rules.

A directory source is a git repository or a folder holding `registry/schema.json` and
`registry/plugins/<id>.json`. Each entry is checked as the registry's validator checks it
(scripts/registry.mjs in covel-ai/covel-plugins): the small JSON Schema vocabulary of
schema.json, then the extra rules (file name = id, active entries need a license and a Covel
version, official entries live under covel-ai, https demo without credentials, a ref without
empty, . or .. segments, no en-US translation). A refused entry is listed as a problem naming
its file; the others are shown.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from django.db import transaction
from django.utils import timezone

from catalogue.manifest.rules.common import is_package_id
from installs import gitsource
from installs.archive import Entry
from installs.models import DirectoryEntry, DirectorySource
from installs.services import REFUSALS, InstallProblem, _problem

_KEYWORDS = {
    "$schema",
    "title",
    "type",
    "enum",
    "pattern",
    "minLength",
    "minItems",
    "uniqueItems",
    "items",
    "required",
    "properties",
    "additionalProperties",
    "propertyNames",
}


class EntryRefused(Exception):
    pass


def _type_of(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, (int, float)):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    return "object"


def validate(schema: dict[str, Any], value: Any, at: str) -> None:
    unknown = set(schema) - _KEYWORDS
    if unknown:
        raise EntryRefused(f"schema: unsupported keyword {sorted(unknown)[0]}")
    kind = _type_of(value)
    types = schema.get("type")
    if types is not None and kind not in (types if isinstance(types, list) else [types]):
        raise EntryRefused(f"{at}: invalid type")
    if "enum" in schema and value not in schema["enum"]:
        raise EntryRefused(f"{at}: invalid enum value")
    if isinstance(value, str):
        if len(value) < schema.get("minLength", 0):
            raise EntryRefused(f"{at}: empty string")
        if "pattern" in schema and not re.search(schema["pattern"], value):
            raise EntryRefused(f"{at}: invalid format")
    if isinstance(value, list):
        if len(value) < schema.get("minItems", 0):
            raise EntryRefused(f"{at}: too few items")
        if schema.get("uniqueItems") and len({json.dumps(v, sort_keys=True) for v in value}) != len(
            value
        ):
            raise EntryRefused(f"{at}: duplicate items")
        for index, item in enumerate(value):
            validate(schema.get("items", {}), item, f"{at}[{index}]")
    elif isinstance(value, dict):
        for key in schema.get("required", []):
            if key not in value:
                raise EntryRefused(f"{at}: missing {key}")
        properties = schema.get("properties", {})
        for key, item in value.items():
            if "propertyNames" in schema:
                validate(schema["propertyNames"], key, f"{at} key")
            if key in properties:
                validate(properties[key], item, f"{at}.{key}")
            elif schema.get("additionalProperties") is False:
                raise EntryRefused(f"{at}: unknown field {key}")
            elif isinstance(schema.get("additionalProperties"), dict):
                validate(schema["additionalProperties"], item, f"{at}.{key}")


# The hub's own floor under the directory's schema, which comes from the directory itself and
# so may say anything: the fields the hub stores and shows are strings of the column's size, and
# the id is one a package could have (it becomes a catalogue URL and a package id).
_HUB_FIELDS = {
    "name": 300,
    "description": 5000,
    "author": 300,
    "maintainer": 20,
    "category": 20,
    "status": 20,
    "repository": 500,
    "path": 500,
    "ref": 200,
}


def _hub_rules(entry: dict[str, Any], filename: str) -> None:
    entry_id = entry.get("id")
    if not isinstance(entry_id, str) or not is_package_id(entry_id) or len(entry_id) > 64:
        raise EntryRefused(f"{filename}: id: not a package id (a-z, 0-9 and -, at most 64)")
    for key, limit in _HUB_FIELDS.items():
        value = entry.get(key)
        if not isinstance(value, str):
            raise EntryRefused(f"{filename}: {key}: must be a string")
        if len(value) > limit:
            raise EntryRefused(f"{filename}: {key}: longer than {limit} characters")


def validate_entry(schema: dict[str, Any], entry: Any, filename: str) -> None:
    validate(schema, entry, filename)
    _hub_rules(entry, filename)
    if "en-US" in (entry.get("translations") or {}):
        raise EntryRefused(f"{filename}: English belongs in the base name, description and notes")
    if f"{entry['id']}.json" != filename:
        raise EntryRefused(f"{filename}: the file name must be the entry id")
    if entry["status"] == "active" and (not entry.get("license") or not entry.get("covelVersion")):
        raise EntryRefused(f"{filename}: an active entry needs a license and a Covel version")
    if entry["maintainer"] == "official" and not entry["repository"].startswith(
        "https://github.com/covel-ai/"
    ):
        raise EntryRefused(f"{filename}: official entries live in the covel-ai organization")
    if entry.get("demo"):
        demo = urlsplit(entry["demo"])
        if demo.scheme != "https" or demo.username or demo.password:
            raise EntryRefused(f"{filename}: demo must be an https address without credentials")
    if any(part in ("", ".", "..") for part in entry["ref"].split("/")):
        raise EntryRefused(f"{filename}: invalid ref")


def _files_from_folder(folder: Path) -> dict[str, bytes]:
    registry = folder / "registry"
    if not (registry / "schema.json").is_file():
        raise InstallProblem(f"{folder}: no registry/schema.json", code="bad_directory")
    files = {"registry/schema.json": (registry / "schema.json").read_bytes()}
    for path in sorted((registry / "plugins").glob("*.json")):
        if path.is_file() and not path.is_symlink():
            files[f"registry/plugins/{path.name}"] = path.read_bytes()
    return files


def _files_from_git(url: str) -> tuple[dict[str, bytes], str]:
    try:
        location = gitsource.parse_location(url)
        commit, tracking = gitsource.resolve(location)
        tree: list[Entry] = gitsource.fetch_tree(
            gitsource.Location(location.remote, location.repository, location.ref, ""),
            commit,
            ref_hint=tracking.get("ref"),
        )
    except REFUSALS as exc:
        raise _problem(exc, "fetch") from exc
    return {e.path: e.content for e in tree if e.path.startswith("registry/")}, commit


def directory_sync(*, source: DirectorySource) -> DirectorySource:
    """Read the directory again and replace its entries (all at once)."""
    commit = ""
    if source.kind == DirectorySource.Kind.FOLDER:
        files = _files_from_folder(Path(source.location))
    else:
        files, commit = _files_from_git(source.location)
    try:
        schema = json.loads(files["registry/schema.json"])
    except (KeyError, ValueError) as exc:
        raise InstallProblem(
            f"registry/schema.json: missing or not JSON ({exc})", code="bad_directory"
        ) from exc
    entries, problems, seen = [], [], set()
    for name, raw in sorted(files.items()):
        if not re.fullmatch(r"registry/plugins/[^/]+\.json", name):
            continue
        filename = name.rsplit("/", 1)[-1]
        try:
            entry = json.loads(raw)
            if not isinstance(entry, dict):
                raise EntryRefused(f"{filename}: invalid type")
            validate_entry(schema, entry, filename)
            if entry["id"] in seen:
                raise EntryRefused(f"{filename}: duplicate id {entry['id']}")
        except (EntryRefused, ValueError) as exc:
            problems.append({"file": name, "message": str(exc)})
            continue
        seen.add(entry["id"])
        entries.append(entry)
    with transaction.atomic():
        source.entries.all().delete()
        DirectoryEntry.objects.bulk_create(
            DirectoryEntry(
                source=source,
                entry_id=e["id"],
                name=e["name"],
                description=e["description"],
                author=e["author"],
                maintainer=e["maintainer"],
                category=e["category"],
                status=e["status"],
                repository=e["repository"],
                path=e["path"],
                ref=e["ref"],
                data=e,
                search_text=" ".join(
                    [e["id"], e["name"], e["description"], e["author"], e["category"]]
                    + [
                        t.get("name", "") + " " + t.get("description", "")
                        for t in (e.get("translations") or {}).values()
                    ]
                ).casefold(),
            )
            for e in entries
        )
        source.problems = problems
        source.commit = commit
        source.synced_at = timezone.now()
        source.save(update_fields=["problems", "commit", "synced_at"])
    return source


def directory_source_set(*, kind: str, location: str) -> DirectorySource:
    """Point the hub at a directory (one source; a new one replaces the old) and read it."""
    if kind not in DirectorySource.Kind.values:
        raise InstallProblem(
            f"kind must be one of {', '.join(DirectorySource.Kind.values)}", code="invalid"
        )
    if kind == DirectorySource.Kind.GIT:
        try:
            gitsource.parse_location(location)
        except REFUSALS as exc:
            raise _problem(exc, "fetch") from exc
    elif not Path(location).is_dir():
        raise InstallProblem(f"{location}: not a folder on the hub", code="invalid")
    with transaction.atomic():
        DirectorySource.objects.all().delete()
        source = DirectorySource.objects.create(kind=kind, location=location)
    return directory_sync(source=source)
