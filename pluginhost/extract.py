"""plugin_extract: write what the entry factory registers into contributes of the root PLUGIN.md.

The frontmatter is edited with ruamel.yaml in round-trip mode, so comments, key order, quoting
and the other fields stay as written, and the Markdown body is copied byte for byte.
"""

from __future__ import annotations

import io
import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ruamel.yaml import YAML
from ruamel.yaml.comments import CommentedMap, CommentedSeq

from catalogue.manifest.frontmatter import split_markdown

from .errors import PluginHostError
from .services import plugin_registrations_extract

LISTS = ("tools", "actions", "services", "forms", "wires", "hooks")
FRONTMATTER = re.compile(r"\A(---[ \t]*\r?\n)(.*?\r?\n)?(---[ \t]*(?:\r?\n|\Z))", re.S)
LOCALIZED = re.compile(r"^PLUGIN\.([A-Za-z]{2,3}(?:-[A-Za-z0-9]+)*)\.md$")


class ExtractError(Exception):
    """Extraction failed; nothing was written. Exit code 1."""


class ArgumentError(Exception):
    """The command was called wrongly (no such folder, no PLUGIN.md). Exit code 2."""


def _yaml() -> YAML:
    yaml = YAML()  # round-trip
    yaml.preserve_quotes = True
    yaml.width = 4096  # never re-wrap long lines the author wrote
    yaml.indent(mapping=2, sequence=4, offset=2)
    return yaml


def identity(key: str, item: Any) -> str:
    """What an entry means, whatever its spelling ("X" and {event: X} are the same hook)."""
    if key == "hooks":
        if isinstance(item, dict):
            return f"{item.get('event')}" + (
                "" if item.get("enforce", "normal") == "normal" else f" ({item.get('enforce')})"
            )
        return str(item)
    if key == "services":
        if isinstance(item, dict):
            extra = []
            if item.get("access", "read") == "write":
                extra.append("access: write")
            if item.get("modelFacing") is True:
                extra.append("modelFacing")
            return str(item.get("contract")) + (f" ({', '.join(extra)})" if extra else "")
        return str(item)
    return str(item)


def _plain(value: Any) -> Any:
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_plain(v) for v in value]
    return value


@dataclass
class KeyDrift:
    removed: list[str] = field(default_factory=list)
    added: list[str] = field(default_factory=list)
    reordered: bool = False  # same entries, other order
    # Same meaning, other spelling; "(duplicates removed)" and "(empty list removed)" are
    # changes of the whole list.
    respelled: list[str] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        return {
            "removed": self.removed,
            "added": self.added,
            "reordered": self.reordered,
            "respelled": self.respelled,
        }


@dataclass
class Report:
    extracted: dict[str, list[Any]]
    drift: dict[str, KeyDrift]
    notes: list[str]
    written: bool = False


EMPTY_REMOVED = "(empty list removed)"


def compare(
    key: str, current: list[Any], wanted: list[Any], *, written: bool = True
) -> KeyDrift | None:
    """How the declared list differs from the registrations; None when nothing is to change.

    written: the key is in contributes. An empty list there is removed ("Empty list keys are
    removed"), so it drifts even when nothing is registered. Order and spelling changes of the
    entries both sides have are reported next to additions and removals, never hidden by them.
    """
    if _plain(current) == _plain(wanted):
        return KeyDrift(respelled=[EMPTY_REMOVED]) if written and not wanted else None
    drift = KeyDrift()
    now = [identity(key, item) for item in current]
    new = [identity(key, item) for item in wanted]
    drift.removed = [name for name in dict.fromkeys(now) if name not in new]
    drift.added = [name for name in new if name not in now]
    kept_now = [name for name in dict.fromkeys(now) if name in new]
    kept_new = [name for name in new if name in now]
    drift.reordered = kept_now != kept_new
    for item in current:
        name = identity(key, item)
        if name not in new or name in drift.respelled:
            continue
        if _plain(item) != _plain(wanted[new.index(name)]):
            drift.respelled.append(name)
    if len(now) != len(set(now)):
        drift.respelled.append("(duplicates removed)")
    return drift


def _split(text: str, file: Path) -> tuple[str, str, str, str]:
    match = FRONTMATTER.match(text)
    if not match:
        raise ArgumentError(f"{file}: no YAML frontmatter between --- lines")
    return match.group(1), match.group(2) or "", match.group(3), text[match.end() :]


def _entry_of(root: Path, data: dict[str, Any]) -> str:
    entry = data.get("entry")
    if entry is None:
        if not (root / "server" / "index.js").is_file():
            raise ExtractError(
                f"{root / 'PLUGIN.md'}: no entry module (set entry, or add server/index.js); nothing to extract"
            )
        return "./server/index.js"
    if not isinstance(entry, str) or not entry:
        raise ExtractError(f"{root / 'PLUGIN.md'}:/entry must be a package-relative path")
    target = (root / entry).resolve()
    if Path(entry).is_absolute() or not target.is_relative_to(root.resolve()):
        raise ExtractError(
            f"{root / 'PLUGIN.md'}:/entry {entry!r} escapes the package folder; refusing to run it"
        )
    if not target.is_file():
        raise ExtractError(f"{root / 'PLUGIN.md'}:/entry {entry!r} does not exist")
    return entry


def _localized_notes(root: Path) -> list[str]:
    notes = []
    for path in sorted(root.iterdir()):
        if not LOCALIZED.match(path.name):
            continue
        parsed = split_markdown(path.read_bytes(), path.name)
        contributes = parsed.data.get("contributes") if isinstance(parsed.data, dict) else None
        if not isinstance(contributes, dict):
            continue
        keys = [k for k in (*LISTS, "extensions", "commands") if k in contributes]
        if keys:
            notes.append(
                f"{path.name} declares contributes.{', contributes.'.join(keys)}; localized files are not edited, update them by hand"
            )
    return notes


def extract(root: Path, *, check: bool) -> Report:
    """Extract, compare and (unless check) write. Raises ArgumentError or ExtractError."""
    if not root.is_dir():
        raise ArgumentError(f"{root}: not a package folder")
    manifest_path = root / "PLUGIN.md"
    if not manifest_path.is_file():
        raise ArgumentError(f"{root}: no PLUGIN.md")
    raw = manifest_path.read_bytes()
    # The safe parser refuses executable tags, aliases and duplicate keys before we run anything.
    parsed = split_markdown(raw, "PLUGIN.md")
    if parsed.issues:
        raise ExtractError(
            "; ".join(
                f"{manifest_path}:{issue.path} {issue.message} [{issue.code}]"
                for issue in parsed.issues
            )
        )
    data = parsed.data if isinstance(parsed.data, dict) else {}
    entry = _entry_of(root, data)
    package = str(data.get("id") or root.name)
    try:
        extracted = plugin_registrations_extract(root=root, entry=entry, package=package)
    except PluginHostError as exc:
        raise ExtractError(f"{manifest_path}: {exc}") from exc

    contributes = data.get("contributes") if isinstance(data.get("contributes"), dict) else {}
    drift: dict[str, KeyDrift] = {}
    for key in LISTS:
        found = compare(
            key, list(contributes.get(key) or []), extracted[key], written=key in contributes
        )
        if found:
            drift[key] = found

    notes = _localized_notes(root)
    declared_ext = [
        e if isinstance(e, str) else f"{e.get('point')}/{e.get('id')}"
        for e in contributes.get("extensions") or []
    ]
    missing_ext = [e for e in extracted["extensions"] if e not in declared_ext]
    extra_ext = [e for e in declared_ext if e not in extracted["extensions"]]
    if missing_ext or extra_ext:
        notes.append(
            "contributes.extensions is not rewritten (it can carry declaration-only options): "
            + "; ".join(
                part
                for part in (
                    f"provided but not declared: {', '.join(missing_ext)}" if missing_ext else "",
                    f"declared but not provided: {', '.join(extra_ext)}" if extra_ext else "",
                )
                if part
            )
        )
    commands = contributes.get("commands") or []
    if commands:
        actions = set(extracted["actions"])
        orphans = [
            c.get("name")
            for c in commands
            if isinstance(c, dict) and c.get("action") not in actions
        ]
        note = f"contributes.commands ({len(commands)}) is maintained by hand: there is no entry registration for commands"
        if orphans:
            note += f"; commands whose action is not registered: {', '.join(map(str, orphans))}"
        notes.append(note)

    report = Report(extracted=extracted, drift=drift, notes=notes)
    if drift and not check:
        _write(manifest_path, raw.decode("utf-8"), extracted, drift)
        report.written = True
    return report


PLAIN = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9@._/-]*$")
FLOW_LINE = re.compile(r"^(?P<head>\s*[^#]*?\])(?P<comment>\s+#.*)?$")


def _scalar(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    text = str(value)
    return (
        text
        if PLAIN.match(text) and text not in {"true", "false", "null", "yes", "no", "on", "off"}
        else json.dumps(text)
    )


def _item(value: Any) -> str:
    if isinstance(value, dict):
        return "{" + ", ".join(f"{k}: {_scalar(v)}" for k, v in value.items()) + "}"
    return _scalar(value)


def _render(key: str, items: list[Any], indent: int, flow: bool) -> list[str]:
    pad = " " * indent
    if flow:
        return [f"{pad}{key}: [{', '.join(_item(i) for i in items)}]\n"]
    return [f"{pad}{key}:\n"] + [f"{pad}  - {_item(i)}\n" for i in items]


def _block_end(lines: list[str], start: int, stop: int) -> int:
    """The end of a block that runs until stop, leaving trailing blank and column-0 comment lines out."""
    end = stop
    while end > start + 1 and (not lines[end - 1].strip() or lines[end - 1].startswith("#")):
        end -= 1
    return end


def _splice(
    yaml_text: str, extracted: dict[str, list[Any]], drift: dict[str, KeyDrift]
) -> str | None:
    """Rewrite only the lines of the drifting keys, so every other byte stays as the author wrote it.

    Returns None when the layout is unusual (flow-style contributes); the caller then dumps.
    """
    document = _yaml().load(yaml_text) or CommentedMap()
    lines = yaml_text.splitlines(keepends=True)
    if lines and not lines[-1].endswith("\n"):
        lines[-1] += "\n"
    edits: list[tuple[int, int, list[str]]] = []
    contributes = document.get("contributes")
    if contributes is None:
        block = ["contributes:\n"]
        for key in drift:
            if extracted[key]:
                block += _render(
                    key, extracted[key], 2, not any(isinstance(i, dict) for i in extracted[key])
                )
        return "".join(lines + block) if len(block) > 1 else "".join(lines)
    if not isinstance(contributes, CommentedMap) or contributes.fa.flow_style():
        return None
    top_keys = list(document.keys())
    top_index = top_keys.index("contributes")
    contributes_line = document.lc.key("contributes")[0]
    after = (
        document.lc.key(top_keys[top_index + 1])[0] if top_index + 1 < len(top_keys) else len(lines)
    )
    contributes_end = _block_end(lines, contributes_line, after)
    keys = list(contributes.keys())
    indent = contributes.lc.key(keys[0])[1] if keys else 2
    removed_all = keys and all(k in drift and not extracted[k] for k in keys)
    if removed_all:
        return "".join(lines[:contributes_line] + lines[contributes_end:])
    for position, key in enumerate(keys):
        if key not in drift:
            continue
        start = contributes.lc.key(key)[0]
        stop = (
            contributes.lc.key(keys[position + 1])[0]
            if position + 1 < len(keys)
            else contributes_end
        )
        stop = _block_end(lines, start, stop)
        old = contributes[key]
        # A key written with no value takes the style of a new list: inline names, block objects.
        flow = (
            bool(old.fa.flow_style())
            if isinstance(old, CommentedSeq)
            else old is None and not any(isinstance(i, dict) for i in extracted[key])
        )
        rendered = _render(key, extracted[key], indent, flow) if extracted[key] else []
        if flow and rendered and stop == start + 1:
            match = FLOW_LINE.match(lines[start].rstrip("\n"))
            if match and match.group("comment"):
                rendered = [rendered[0].rstrip("\n") + match.group("comment") + "\n"]
        edits.append((start, stop, rendered))
    added: list[str] = []
    for key in drift:
        if key not in contributes and extracted[key]:
            added += _render(
                key, extracted[key], indent, not any(isinstance(i, dict) for i in extracted[key])
            )
    if added:
        edits.append((contributes_end, contributes_end, added))
    for start, stop, rendered in sorted(edits, key=lambda e: (e[0], e[1]), reverse=True):
        lines[start:stop] = rendered
    return "".join(lines)


def _write(
    path: Path, text: str, extracted: dict[str, list[Any]], drift: dict[str, KeyDrift]
) -> None:
    opening, yaml_text, closing, body = _split(text, path)
    spliced = _splice(yaml_text, extracted, drift)
    if spliced is not None:
        check = _yaml().load(spliced) or {}
        written = check.get("contributes") or {}
        if all(_plain(list(written.get(key) or [])) == _plain(extracted[key]) for key in drift):
            path.write_text(opening + spliced + closing + body, encoding="utf-8")
            return
    # Unusual layout: let ruamel's round-trip dump do it (comments and order survive).
    yaml = _yaml()
    document = yaml.load(yaml_text) or CommentedMap()
    contributes = document.setdefault("contributes", CommentedMap())
    for key in drift:
        if extracted[key]:
            contributes[key] = extracted[key]
        elif key in contributes:
            del contributes[key]
    if not contributes:
        del document["contributes"]
    out = io.StringIO()
    yaml.dump(document, out)
    path.write_text(opening + out.getvalue() + closing + body, encoding="utf-8")


def _order_or_spelling(drift: KeyDrift) -> list[str]:
    names = [n for n in drift.respelled if not n.startswith("(")]
    whole = [n.strip("()") for n in drift.respelled if n.startswith("(")]
    parts = ["order differs from registration order"] if drift.reordered else []
    if names:
        parts.append(f"spelling differs for {', '.join(names)}")
    return parts + whole


def render_text(report: Report, *, check: bool, file: str = "PLUGIN.md") -> str:
    lines: list[str] = []
    if not report.drift:
        lines.append("Declarations are in sync.")
    else:
        for key, drift in report.drift.items():
            if not drift.removed and not drift.added:
                continue
            lines.append(f"contributes.{key}:")
            lines += [f"  - {name}" for name in drift.removed]
            lines += [f"  + {name}" for name in drift.added]
        order_only = [
            f"contributes.{key}: " + " and ".join(_order_or_spelling(d))
            for key, d in report.drift.items()
            if d.reordered or d.respelled
        ]
        if order_only:
            lines.append("Order or spelling only:")
            lines += [f"  {line}" for line in order_only]
        if check:
            lines.append(
                f"{file} is out of sync with the entry registrations (run without --check to update it)."
            )
        else:
            lines.append(f"Updated {file}: {', '.join('contributes.' + k for k in report.drift)}.")
    for note in report.notes:
        lines.append(f"Note: {note}")
    return "\n".join(lines)
