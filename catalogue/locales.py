"""A package's translations for the catalogue: its display name, description and prose body
in each locale it ships, from `locales/<locale>.yaml|yml|json` (the "PLUGIN.md" section) and
`PLUGIN.<locale>.md` (which wins where both say something). Read at index time, stored on the
Package row, and picked per request by language (docs/catalogue.md, "Languages")."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path
from typing import Any

from catalogue.manifest.frontmatter import parse_yaml, split_markdown

LOCALE = r"[a-z]{2,3}(?:-[A-Za-z0-9]{2,8})*"
_VARIANT = re.compile(rf"^PLUGIN\.({LOCALE})\.md$")
_LOCALE_FILE = re.compile(rf"^({LOCALE})\.(?:ya?ml|json)$")
MAX_BYTES = 256 * 1024
FIELDS = ("displayName", "description")


def _inside(root: Path, path: Path) -> bool:
    real = os.path.realpath(path)
    return real.startswith(os.path.realpath(root) + os.sep) and os.path.isfile(real)


def _read(root: Path, path: Path) -> bytes | None:
    if not _inside(root, path) or path.stat().st_size > MAX_BYTES:
        return None
    try:
        return path.read_bytes()
    except OSError:
        return None


def _texts(data: Any) -> dict[str, str]:
    if not isinstance(data, dict):
        return {}
    return {k: v.strip() for k in FIELDS if isinstance(v := data.get(k), str) and v.strip()}


def package_translations(folder: Path) -> dict[str, dict[str, str]]:
    """{locale: {"displayName"?, "description"?, "body"?}} for every locale with some text.
    Unreadable or malformed files give nothing (the loader reports them; this never raises)."""
    found: dict[str, dict[str, str]] = {}
    try:
        entries = sorted(folder.iterdir())
    except OSError:
        return {}
    locales_dir = folder / "locales"
    if locales_dir.is_dir():
        for entry in sorted(locales_dir.iterdir()):
            match = _LOCALE_FILE.match(entry.name)
            raw = _read(folder, entry) if match else None
            if raw is None:
                continue
            try:
                text = raw.decode("utf-8")
                data = (
                    json.loads(text)
                    if entry.suffix == ".json"
                    else parse_yaml(text, entry.name, [])
                )
            except (UnicodeDecodeError, ValueError):
                continue
            section = data.get("PLUGIN.md") if isinstance(data, dict) else None
            if texts := _texts(section):
                found.setdefault(match.group(1), {}).update(texts)
    for entry in entries:
        match = _VARIANT.match(entry.name)
        raw = _read(folder, entry) if match else None
        if raw is None:
            continue
        parsed = split_markdown(raw, entry.name, require_frontmatter=False)
        if parsed.issues:
            continue
        texts = _texts(parse_yaml_frontmatter(raw, entry.name)) if parsed.has_frontmatter else {}
        if parsed.body.strip():
            texts["body"] = parsed.body.strip()
        if texts:
            found.setdefault(match.group(1), {}).update(texts)
    return found


def parse_yaml_frontmatter(raw: bytes, file: str) -> Any:
    text = raw.decode("utf-8").removeprefix("\ufeff").replace("\r\n", "\n")
    lines = text.split("\n")
    closing = next((i for i in range(1, len(lines)) if lines[i].rstrip() == "---"), None)
    if closing is None:
        return None
    return parse_yaml("\n".join(lines[1:closing]), file, [])


def pick_locale(available: list[str], wanted: list[str]) -> str | None:
    """The best of `available` for languages in preference order: an exact tag first, then the
    same language (zh matches zh-CN and zh-CN matches zh), else None (use the manifest)."""
    lowered = {a.lower(): a for a in available}
    for tag in wanted:
        tag = tag.lower()
        if tag in lowered:
            return lowered[tag]
        base = tag.split("-")[0]
        for key, original in lowered.items():
            if key.split("-")[0] == base:
                return original
    return None


def search_words(translations: dict[str, dict[str, str]]) -> list[str]:
    """What the search should also find a package by: its names and descriptions in every locale."""
    return [t[k] for t in translations.values() for k in FIELDS if k in t]
