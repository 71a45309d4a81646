"""Reading and writing a world folder's world.yaml. Plain Python, no Django.

Reading validates the file and returns every problem as an Issue (file, JSON pointer, code,
message), like the package loader. Writing changes one plugin's presets with ruamel.yaml's
round-trip mode, so comments, key order, unknown keys and the rest of the file stay as written.
"""

from __future__ import annotations

import hashlib
import io
import os
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ruamel.yaml import YAML
from ruamel.yaml.comments import CommentedMap, CommentedSeq
from ruamel.yaml.error import CommentMark
from ruamel.yaml.tokens import CommentToken

from catalogue.manifest.rules import is_package_id
from core.pointer import join
from worlds.file_checks import (
    ID_HINT,
    ID_RE,
    UNREAD,
    Report,
    Verdict,
    check_text,
    load_yaml,
    read_bytes,
    warn_unknown_keys,
)

WORLD_FILE = "world.yaml"
KNOWN_KEYS = ("id", "name", "description", "version", "author", "plugins", "pluginSettings")
AUTHOR_KEYS = ("name", "url", "about", "links")
NAME_MAX = 200
DESCRIPTION_MAX = 5_000
ABOUT_MAX = 2_000
LINKS_MAX = 6


@dataclass
class WorldFile(Verdict):
    """The verdict on one world folder."""

    world_id: str
    path: str
    data: dict[str, Any] = field(default_factory=dict)
    content_hash: str = ""


def read_world(folder: Path) -> WorldFile:
    """Parse and validate <folder>/world.yaml; the world's id is the folder's name."""
    result = WorldFile(world_id=folder.name, path=str(folder))
    error, warning = result.reporters(WORLD_FILE)
    if not ID_RE.match(folder.name):
        error("", "bad-id", f"folder name {folder.name!r} is not a world ID ({ID_HINT})")
    shown_as = f"{folder.name}/{WORLD_FILE}"
    raw_bytes = read_bytes(folder / WORLD_FILE, shown_as, error, required=True)
    if raw_bytes is None:
        return result
    result.content_hash = hashlib.sha256(raw_bytes).hexdigest()
    doc = load_yaml(raw_bytes, error)
    if doc is UNREAD:
        return result
    if not isinstance(doc, dict):
        error("", "not-a-mapping", "must be a mapping of keys (name, description, ...)")
        return result

    # Unknown keys are kept (and preserved on write) so newer tools can add keys.
    warn_unknown_keys(doc, KNOWN_KEYS, "", warning)

    if "id" in doc and doc["id"] != folder.name:
        error("/id", "id-mismatch", f"id {doc['id']!r} must equal the folder name {folder.name!r}")

    data: dict[str, Any] = {}
    for key, limit in (("name", NAME_MAX), ("description", DESCRIPTION_MAX)):
        value = check_text(
            doc.get(key), join("", key), key, limit, error, required=True, limit_counts_spaces=True
        )
        if value is not None:
            data[key] = value
    if "version" in doc:
        if isinstance(doc["version"], str | int | float) and not isinstance(doc["version"], bool):
            data["version"] = str(doc["version"])
        else:
            error("/version", "type", "version must be a string")

    data["author"] = _read_author(doc.get("author"), error)
    data["plugins"] = _read_plugins(doc.get("plugins"), error)
    data["pluginSettings"] = _read_plugin_settings(doc.get("pluginSettings"), error)
    for plugin_id in data["pluginSettings"]:
        if plugin_id not in data["plugins"]:
            warning(
                join("", "pluginSettings", plugin_id),
                "plugin-not-listed",
                f"presets for {plugin_id!r}, which is not in plugins",
            )
    result.data = data
    return result


def _https(value: Any) -> bool:
    return isinstance(value, str) and value.startswith("https://") and len(value) > len("https://")


def _read_author(value: Any, error: Report) -> dict[str, Any] | None:
    if value is None:
        return None
    if not isinstance(value, dict):
        error("/author", "type", "author must be a mapping (name, url, about, links)")
        return None
    author: dict[str, Any] = {}
    for key in value:
        if key not in AUTHOR_KEYS:
            error(join("", "author", str(key)), "unknown-field", f"unknown author key {key!r}")
    name = value.get("name")
    if not isinstance(name, str) or not name.strip():
        error("/author/name", "required", "author.name is required and must be a non-empty string")
    else:
        author["name"] = name.strip()
    if "url" in value:
        if _https(value["url"]):
            author["url"] = value["url"]
        else:
            error("/author/url", "https-only", "author.url must be an https:// address")
    if "about" in value:
        about = value["about"]
        if not isinstance(about, str):
            error("/author/about", "type", "author.about must be a string")
        elif len(about) > ABOUT_MAX:
            error(
                "/author/about", "too-long", f"author.about must be at most {ABOUT_MAX} characters"
            )
        else:
            author["about"] = about.strip()
    links = value.get("links")
    if links is not None:
        if not isinstance(links, list):
            error("/author/links", "type", "author.links must be a list")
        else:
            if len(links) > LINKS_MAX:
                error(
                    "/author/links",
                    "too-many",
                    f"author.links has {len(links)} entries; at most {LINKS_MAX}",
                )
            author["links"] = []
            for i, link in enumerate(links[:LINKS_MAX]):
                where = join("", "author", "links", i)
                if not isinstance(link, dict):
                    error(where, "type", "a link must be a mapping with label and url")
                    continue
                label, url = link.get("label"), link.get("url")
                ok = True
                if not isinstance(label, str) or not label.strip():
                    error(where + "/label", "required", "link label is required")
                    ok = False
                if not _https(url):
                    error(where + "/url", "https-only", "link url must be an https:// address")
                    ok = False
                for key in link:
                    if key not in ("label", "url"):
                        error(join(where, str(key)), "unknown-field", f"unknown link key {key!r}")
                if ok:
                    author["links"].append({"label": label.strip(), "url": url})
    return author


def _read_plugins(value: Any, error: Report) -> list[str]:
    if value is None:
        return []
    if not isinstance(value, list):
        error("/plugins", "type", "plugins must be a list of package IDs")
        return []
    plugins: list[str] = []
    for i, item in enumerate(value):
        if not isinstance(item, str) or not is_package_id(item):
            error(join("", "plugins", i), "bad-id", f"{item!r} is not a package ID")
        elif item in plugins:
            error(join("", "plugins", i), "duplicate", f"{item!r} is listed twice")
        else:
            plugins.append(item)
    return plugins


def _read_plugin_settings(value: Any, error: Report) -> dict[str, dict[str, Any]]:
    if value is None:
        return {}
    if not isinstance(value, dict):
        error(
            "/pluginSettings", "type", "pluginSettings must be a mapping {pluginId: {key: value}}"
        )
        return {}
    presets: dict[str, dict[str, Any]] = {}
    for plugin_id, values in value.items():
        where = join("", "pluginSettings", str(plugin_id))
        if not isinstance(plugin_id, str) or not is_package_id(plugin_id):
            error(where, "bad-id", f"{plugin_id!r} is not a package ID")
            continue
        if values is None:
            presets[plugin_id] = {}
            continue
        if not isinstance(values, dict):
            error(where, "type", f"pluginSettings.{plugin_id} must be a mapping {{key: value}}")
            continue
        clean: dict[str, Any] = {}
        for key, item in values.items():
            item_where = join(where, str(key))
            if not isinstance(key, str):
                error(item_where, "type", f"setting key {key!r} must be a string")
            elif item is None or isinstance(item, list | dict):
                error(item_where, "type", "a preset must be a string, number or boolean")
            else:
                clean[key] = item
        presets[plugin_id] = clean
    return presets


def _round_trip_yaml() -> YAML:
    yaml = YAML(typ="rt")
    yaml.preserve_quotes = True
    # Our world files use 2-space mappings and "  - item" lists; never re-wrap long lines.
    yaml.indent(mapping=2, sequence=4, offset=2)
    yaml.width = 4096
    return yaml


class PresetConflict(ValueError):
    """A key a save changes was also changed by hand in world.yaml since the hub last read it."""

    def __init__(
        self, package_id: str, keys: dict[str, tuple[Any, Any]], on_disk: dict[str, Any]
    ) -> None:
        self.package_id = package_id
        # key -> (what the hub had, what the file says now), MISSING_PRESET where unset
        self.keys = keys
        self.on_disk = on_disk  # the package's presets in the file now (the readable ones)
        super().__init__(
            f"{WORLD_FILE}: pluginSettings.{package_id} was edited by hand since the hub read it "
            f"({', '.join(sorted(keys))})"
        )


MISSING_PRESET = object()  # a key that is not set, for PresetConflict.keys


def _same_preset(a: Any, b: Any) -> bool:
    # true and 1 compare equal in Python; a preset's type is part of its value.
    return a is b or (isinstance(a, bool) == isinstance(b, bool) and a == b)


def write_plugin_settings(folder: Path, *, package_id: str, values: Mapping[str, Any]) -> str:
    """Replace pluginSettings.<package_id> in <folder>/world.yaml with `values`; return the new hash.

    Keys already in the file keep their place (and their comments); new keys go last; keys not
    in `values` are removed; an empty preset removes the plugin's entry. Everything else in the
    file is left as it was. The file is replaced atomically.
    """
    file = folder / WORLD_FILE
    yaml = _round_trip_yaml()
    doc = _load_document(yaml, file)
    _set_presets(doc, package_id, values)
    return _dump(yaml, doc, file)


def merge_plugin_settings(
    folder: Path, *, package_id: str, base: Mapping[str, Any], changes: Mapping[str, Any]
) -> tuple[dict[str, Any], str, str]:
    """Apply changes ({key: value}, None resets) to the presets world.yaml holds now.

    `base` is what the hub last knew of this package's presets (what a settings page showed).
    Keys the save does not name keep what the file says, hand edits included. A key the save
    names that the file changed since `base` (to something other than the saved value) raises
    PresetConflict and writes nothing. Returns (the file's presets for the package after the
    save, hash of the file before, hash after).
    """
    file = folder / WORLD_FILE
    yaml = _round_trip_yaml()
    before = file.read_bytes()
    doc = _load_document(yaml, file, text=before.decode("utf-8"))
    presets = doc.get("pluginSettings")
    current = presets.get(package_id) if isinstance(presets, CommentedMap) else None
    on_disk: dict[Any, Any] = dict(current) if isinstance(current, Mapping) else {}
    conflicts: dict[str, tuple[Any, Any]] = {}
    for key, value in changes.items():
        had = base.get(key, MISSING_PRESET)
        has = on_disk.get(key, MISSING_PRESET)
        wanted = MISSING_PRESET if value is None else value
        if not _same_preset(had, has) and not _same_preset(has, wanted):
            conflicts[key] = (had, has)
    if conflicts:
        raise PresetConflict(package_id, conflicts, _readable(on_disk))
    merged = dict(on_disk)
    for key, value in changes.items():
        if value is None:
            merged.pop(key, None)
        else:
            merged[key] = value
    _set_presets(doc, package_id, merged)
    after = _dump(yaml, doc, file)
    return _readable(merged), hashlib.sha256(before).hexdigest(), after


def _readable(presets: Mapping[Any, Any]) -> dict[str, Any]:
    """The presets read_world would accept (string keys, scalar values), as plain values."""
    return {
        str(k): v
        for k, v in presets.items()
        if isinstance(k, str) and v is not None and not isinstance(v, list | dict)
    }


def _load_document(yaml: YAML, file: Path, *, text: str | None = None) -> CommentedMap:
    doc = yaml.load(file.read_text(encoding="utf-8") if text is None else text)
    if not isinstance(doc, CommentedMap):
        raise ValueError(f"{WORLD_FILE}: not a mapping")
    return doc


def _dump(yaml: YAML, doc: CommentedMap, file: Path) -> str:
    buffer = io.StringIO()
    yaml.dump(doc, buffer)
    text = buffer.getvalue()
    _atomic_write(file, text)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def _set_presets(doc: CommentedMap, package_id: str, values: Mapping[str, Any]) -> None:
    presets = doc.get("pluginSettings")
    current = presets.get(package_id) if isinstance(presets, CommentedMap) else None
    if values and isinstance(current, CommentedMap):
        for key in [k for k in current if k not in values]:
            _delete_key(current, key)
        for key, value in values.items():
            if key in current:
                if not _same_preset(current[key], value):
                    current[key] = value  # an unchanged value keeps its spelling (quotes, 0x1F)
            else:
                _append_key(current, key, value)
    elif values:
        # Build new maps whole before appending them, so moved comments land after their last line.
        entry = CommentedMap(values.items())
        if isinstance(presets, CommentedMap):
            if package_id in presets:
                presets[package_id] = entry
            else:
                _append_key(presets, package_id, entry)
        elif "pluginSettings" in doc:  # written but empty (`pluginSettings:`)
            doc["pluginSettings"] = CommentedMap({package_id: entry})
        else:
            _append_key(doc, "pluginSettings", CommentedMap({package_id: entry}))
    elif isinstance(presets, CommentedMap) and package_id in presets:
        _delete_key(presets, package_id)


# ruamel.yaml keeps the comment lines that follow an entry on that entry (the last value of a
# file carries the file's closing comments). Deleting or appending entries must move those lines,
# or they vanish with a deleted key or end up above an appended one.


def _last_entry(node: Any) -> tuple[Any, Any] | None:
    """The (container, key) holding the comment after `node`'s last line."""
    if isinstance(node, CommentedMap) and len(node):
        key = list(node)[-1]
        return _last_entry(node[key]) or (node, key)
    if isinstance(node, CommentedSeq) and len(node):
        return _last_entry(node[-1]) or (node, len(node) - 1)
    return None


def _comment_slot(container: Any, key: Any) -> list[Any]:
    """The comment list of an entry; index 2 (maps) or 0 (lists) is the comment after it."""
    size = 4 if isinstance(container, CommentedMap) else 2
    return container.ca.items.setdefault(key, [None] * size)


def _after_index(container: Any) -> int:
    return 2 if isinstance(container, CommentedMap) else 0


def _detach_following_lines(container: Any, key: Any) -> str:
    """Remove and return the whole-line comments after an entry (its end-of-line comment stays)."""
    last = _last_entry(container[key]) or (container, key)
    slot = last[0].ca.items.get(last[1])
    index = _after_index(last[0])
    if not slot or slot[index] is None:
        return ""
    token = slot[index]
    own_line, _, following = token.value.partition("\n")
    token.value = own_line + "\n" if own_line.strip() else ""
    if not token.value:
        slot[index] = None
    return following


def _attach_following_lines(container: Any, key: Any, text: str) -> None:
    if not text:
        return
    last = _last_entry(container[key]) or (container, key)
    slot = _comment_slot(*last)
    index = _after_index(last[0])
    if slot[index] is None:
        slot[index] = CommentToken("\n" + text, CommentMark(0), None)
    else:
        value = slot[index].value
        slot[index].value = value + ("" if value.endswith("\n") else "\n") + text


def _append_key(mapping: CommentedMap, key: str, value: Any) -> None:
    previous = list(mapping)[-1] if len(mapping) else None
    moved = _detach_following_lines(mapping, previous) if previous is not None else ""
    mapping[key] = value
    _attach_following_lines(mapping, key, moved)


def _delete_key(mapping: CommentedMap, key: str) -> None:
    keys = list(mapping)
    index = keys.index(key)
    moved = _detach_following_lines(mapping, key)
    del mapping[key]
    mapping.ca.items.pop(key, None)
    if index > 0:
        _attach_following_lines(mapping, keys[index - 1], moved)


def _atomic_write(file: Path, text: str) -> None:
    """Write a temporary file beside `file`, fsync it, rename it over `file`, fsync the folder:
    after a crash the file is either the old one or the new one, whole, never a torn mix."""
    mode = file.stat().st_mode & 0o777
    fd, tmp = tempfile.mkstemp(prefix=".world-", suffix=".yaml", dir=file.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="") as handle:
            handle.write(text)
            handle.flush()
            os.fsync(handle.fileno())
        os.chmod(tmp, mode)
        os.replace(tmp, file)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise
    fsync_folder(file.parent)


def fsync_folder(folder: Path) -> None:
    """Make a rename inside folder durable (a no-op where folders cannot be opened, as on Windows)."""
    try:
        fd = os.open(folder, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
    except OSError:
        return
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
