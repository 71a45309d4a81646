"""One locales/<locale>.yaml|json file: read as safely as frontmatter, each section checked.

A section per manifest file (PLUGIN.md, runtimes/<id>/RUNTIME.md) holds that file's translated
text; `messages` holds the text of UI specs and code (docs/loader.md "Translations").
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path
from typing import Any

from catalogue.manifest import package_files, rules, schema
from catalogue.manifest.context import MAX_FILE_BYTES, PLUGIN_FILE, Context
from catalogue.manifest.frontmatter import parse_yaml
from catalogue.manifest.types import Issue
from core.pointer import join

# Covel's section of a locale file for the text of UI specs and code: English text -> translation.
MESSAGES_SECTION = "messages"


def check_locale_file(
    ctx: Context,
    root: Path,
    relative: str,
    *,
    reader_issues: list[Issue],
    schema_issues: list[Issue],
) -> dict | None:
    """locales/<locale>.yaml|json: translated text per manifest file, parsed as safely as
    frontmatter. Returns the parsed mapping (the loader keeps its text), None when unusable."""
    full = os.path.join(root, *relative.split("/"))
    real = os.path.realpath(full)
    if not real.startswith(ctx.real_root + os.sep):
        ctx.error(
            relative,
            "",
            "path-escapes",
            f"{relative} leads outside the package through a symbolic link",
        )
        return None
    try:
        with open(full, "rb") as handle:
            raw = handle.read(MAX_FILE_BYTES + 1)
    except OSError as exc:
        ctx.error(
            relative, "", "file-unreadable", f"{relative} cannot be read: {exc.strerror or exc}"
        )
        return None
    if len(raw) > MAX_FILE_BYTES:
        ctx.error(
            relative, "", "file-too-large", f"{relative} is larger than {MAX_FILE_BYTES} bytes"
        )
        return None
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        ctx.error(relative, "", "not-utf8", f"the file is not valid UTF-8 (byte {exc.start})")
        return None
    issues: list[Issue] = []
    # JSON is YAML, so one safe parser reads both.
    data = parse_yaml(text.removeprefix("\ufeff"), relative, issues)
    reader_issues.extend(issues)
    if data is None:
        return None
    if not isinstance(data, dict):
        ctx.error(relative, "", "frontmatter-not-mapping", "a locale file must be a mapping")
        return None
    # One section per manifest file, holding that file's translated text.
    runtime_files = {rt.file for rt in ctx.runtimes if rt.file != PLUGIN_FILE}
    for section, texts in data.items():
        where = join("", section)
        if section == PLUGIN_FILE:
            schema_issues.extend(schema.validate("locale", texts, file=relative, base=where))
            rules.check_locale(ctx, texts, file=relative, base=where)
        elif section == MESSAGES_SECTION:
            rules.check_locale_messages(ctx, texts, file=relative, base=where)
        elif section in runtime_files:
            schema_issues.extend(
                schema.validate("runtime-locale", texts, file=relative, base=where)
            )
        else:
            ctx.error(
                relative,
                where,
                "locale-section-unknown",
                f"{section!r} is not a manifest file of this package (PLUGIN.md or runtimes/<id>/RUNTIME.md) "
                "nor the messages section",
            )
    return data


# locales/<locale>.messages.json: the code's texts (not a manifest file: the verdict ignores it).
_MESSAGES_FILE = re.compile(r"^([a-z]{2,3}(?:-[A-Za-z0-9]{2,8})*)\.messages\.json$")


def read_messages(locales_dir: Path) -> dict[str, dict[str, str] | None]:
    """{locale: {source text: translation}} of locales/<locale>.messages.json, read once by
    the loader for the sessions that show them (Manifest.messages). Not part of the verdict: a
    file that is not a JSON object of texts translates nothing (None)."""
    found: dict[str, dict[str, str] | None] = {}
    for entry in sorted(locales_dir.iterdir()) if locales_dir.is_dir() else ():
        match = _MESSAGES_FILE.match(entry.name)
        if not match:
            continue
        try:
            raw = package_files.read_bytes(entry, limit=MAX_FILE_BYTES) if entry.is_file() else b""
            data = json.loads(raw.decode("utf-8")) if raw else None
        except (OSError, ValueError, package_files.FileRefused):
            found[match.group(1)] = None
            continue
        if isinstance(data, dict):
            found[match.group(1)] = {str(k): v for k, v in data.items() if isinstance(v, str)}
    return found


def read_message_sections(locales_dir: Path, parsed: dict[str, Any]) -> list[dict[str, Any]]:
    """The `messages:` section of each locales/*.yaml|yml, as [{file, messages}] in name order,
    for the host's ctx.messages (Manifest.message_sections; pluginhost/node/messages.mjs leaves
    out a file not named after a known language).

    parsed holds what check_locale_file read, by file name (None: refused, and the package with
    it), so those files are not read twice;
    another .yaml file (a name the loader does not take for a locale, such as zh_CN.yaml) is
    read here, once. A symbolic link, a file over the limit or one that cannot be read or
    parsed translates nothing; only string entries count.
    """
    found: list[dict[str, Any]] = []
    for entry in sorted(locales_dir.iterdir()) if locales_dir.is_dir() else ():
        if entry.suffix not in (".yaml", ".yml") or entry.is_symlink() or not entry.is_file():
            continue
        try:
            if entry.stat().st_size > MAX_FILE_BYTES:
                continue
            if entry.name in parsed:
                data = parsed[entry.name]
            else:
                raw = package_files.read_bytes(entry, limit=MAX_FILE_BYTES)
                data = parse_yaml(raw.decode("utf-8"), entry.name, [])
        except (OSError, UnicodeDecodeError, package_files.FileRefused):
            continue
        section = data.get(MESSAGES_SECTION) if isinstance(data, dict) else None
        if isinstance(section, dict):
            texts = {str(k): v for k, v in section.items() if isinstance(v, str)}
            found.append({"file": entry.name, "messages": texts})
    return found


def merge_texts(*layers: dict[str, dict[str, str]]) -> dict[str, dict[str, str]]:
    """The catalogue's text per locale, later layers winning (a PLUGIN.<locale>.md says it over
    its locale file)."""
    found: dict[str, dict[str, str]] = {}
    for texts in layers:
        for locale, fields in texts.items():
            found.setdefault(locale, {}).update(fields)
    return found
