"""The strict loader of a source plugin folder: plugin.toml parsed, checked and normalised.

Never imports Django and never runs the plugin's binary. Every problem is an Issue value with
a JSON pointer into plugin.toml, all collected in one pass.

One piece, past 800 lines: it is that one pass, through one _Checker that collects every Issue,
in the order of plugin.toml (the type of every key, then the id, source, codec, jobs and ui
rules); split, each part would need the checker and the facts the earlier checks gathered.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import tomllib
import unicodedata
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import date, datetime, time
from pathlib import Path
from types import MappingProxyType
from typing import Any

import jsonschema

from catalogue.manifest.fingerprint import code_fingerprint
from catalogue.manifest.types import Issue, freeze
from core import pointer
from sources.manifest import schema
from sources.manifest.codec import (
    Codec,
    TemplateError,
    go_regex_compile,
    parse_label,
    parse_template,
)
from sources.manifest.durations import DurationError, parse_duration

MANIFEST = "plugin.toml"
SUPPORTED_PROTOCOLS = (1,)
ID_PATTERN = re.compile(r"[a-z0-9_-]{1,32}")
# Files the content hash ignores: caches that change without the plugin changing.
_IGNORED_DIRS = {"__pycache__", ".git", ".pytest_cache"}


@dataclass(frozen=True)
class JobSpec:
    """One [[source.jobs]] with its durations in nanoseconds (None: not written)."""

    name: str
    every_ns: int
    every_from: str
    timeout_ns: int | None
    retry_ns: int | None


@dataclass(frozen=True)
class SourceManifest:
    """A valid plugin.toml, normalised: every key of every table present, defaults applied."""

    id: str
    path: str
    data: Mapping[str, Any]
    jobs: tuple[JobSpec, ...] = ()

    @property
    def source(self) -> Mapping[str, Any]:
        return self.data.get("source", MappingProxyType({}))

    @property
    def name(self) -> str:
        return self.source.get("name", self.id)

    @property
    def view_ids(self) -> tuple[str, ...]:
        return tuple(v["id"] for v in self.source.get("ui", {}).get("views", ()))

    def codec(self) -> Codec:
        return Codec(self.source["codec"])


@dataclass(frozen=True)
class SourceLoadResult:
    path: str
    plugin_id: str
    manifest: SourceManifest | None
    errors: tuple[Issue, ...]
    warnings: tuple[Issue, ...]
    raw: Mapping[str, Any] | None = None
    content_hash: str = ""

    @property
    def ok(self) -> bool:
        return not self.errors and self.manifest is not None


def rules_version() -> str:
    """The fingerprint of this loader: a plugin judged under another one is judged again."""
    return code_fingerprint(Path(__file__).resolve().parent)


def content_hash(folder: Path) -> str:
    """sha256 over the folder's files (relative names and bytes), in a stable order."""
    digest = hashlib.sha256()
    if not folder.is_dir():
        return ""
    for root, dirs, files in os.walk(folder):
        dirs[:] = sorted(d for d in dirs if d not in _IGNORED_DIRS)
        for name in dirs:
            # Folders count even when empty: ui.web must exist.
            digest.update(Path(root, name).relative_to(folder).as_posix().encode() + b"/\0")
        for name in sorted(files):
            file = Path(root, name)
            rel = file.relative_to(folder).as_posix()
            digest.update(rel.encode() + b"\0")
            try:
                digest.update(file.read_bytes())
            except OSError:
                digest.update(b"<unreadable>")
            digest.update(b"\0")
            # The executable bit decides whether the binary runs, so it is part of the content.
            digest.update(b"x" if os.access(file, os.X_OK) else b"-")
    return digest.hexdigest()


def binary_path(folder: Path, plugin_id: str) -> Path:
    """The plugin's binary: the file named after its id at the folder's root."""
    return folder / plugin_id


def _type_name(value: Any) -> str:
    if isinstance(value, bool):
        return "a bool"
    if isinstance(value, int):
        return "an integer"
    if isinstance(value, float):
        return "a float"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list):
        return "an array"
    if isinstance(value, dict):
        return "a table"
    if isinstance(value, datetime | date | time):
        return "a date or time"
    return f"a {type(value).__name__}"


class _Checker:
    def __init__(self, folder: Path, config_keys: Collection[str] | None = None) -> None:
        self.folder = folder
        self.config_keys = config_keys
        self.errors: list[Issue] = []
        self.warnings: list[Issue] = []
        self.durations: dict[str, int] = {}  # pointer -> nanoseconds, for the rules
        self.invalid: set[str] = set()  # pointers of written values already reported

    def error(self, path: str, code: str, message: str) -> None:
        self.errors.append(Issue(MANIFEST, path, code, message))

    def warn(self, path: str, code: str, message: str) -> None:
        self.warnings.append(Issue(MANIFEST, path, code, message))

    # -- structure ---------------------------------------------------------------------------
    def table(self, value: Any, spec: schema.Table, path: str, where: str) -> dict[str, Any]:
        """Check one table against its spec; returns it normalised (defaults filled in)."""
        label = where or "the top level"
        if not isinstance(value, dict):
            self.error(path, "type", f"{label} must be a table, not {_type_name(value)}")
            return {}
        out: dict[str, Any] = {}
        for key, item in value.items():
            child = f"{where}.{key}" if where else key
            if key not in spec:
                allowed = ", ".join(spec)
                self.error(
                    pointer.join(path, key),
                    "unknown-key",
                    f"unknown key {key!r} in {label}; the keys of {label} are: {allowed}",
                )
                continue
            kind, _ = spec[key]
            checked = self.value(item, kind, pointer.join(path, key), child, key)
            if checked is not _INVALID:
                out[key] = checked
            else:
                self.invalid.add(pointer.join(path, key))
        for key, (kind, required) in spec.items():
            if key in value:
                continue
            if required:
                child = f"{where}.{key}" if where else key
                self.error(pointer.join(path, key), "required", f"{child} is required")
            else:
                default = _default(kind)
                if default is not _NO_DEFAULT:
                    out[key] = default
        return out

    def value(self, value: Any, kind: Kind, path: str, where: str, key: str) -> Any:
        if kind == "string":
            if not isinstance(value, str):
                return self._wrong(path, where, "a string", value)
            return value
        if kind == "bool":
            if not isinstance(value, bool):
                return self._wrong(path, where, "a bool (true or false)", value)
            return value
        if kind == "int":
            if isinstance(value, bool) or not isinstance(value, int):
                return self._wrong(path, where, "an integer", value)
            return value
        if kind == "strings":
            if not isinstance(value, list):
                return self._wrong(path, where, "an array of strings", value)
            ok = True
            for i, item in enumerate(value):
                if not isinstance(item, str):
                    self._wrong(pointer.join(path, i), f"{where}[{i}]", "a string", item)
                    ok = False
            return list(value) if ok else _INVALID
        if kind == "strings_table":
            if not isinstance(value, dict):
                return self._wrong(path, where, "a table of strings", value)
            ok = True
            for name, item in value.items():
                if not isinstance(item, str):
                    self._wrong(pointer.join(path, name), f"{where}.{name}", "a string", item)
                    ok = False
            return dict(value) if ok else _INVALID
        if kind == "duration":
            if not isinstance(value, str):
                return self._wrong(path, where, 'a Go duration string such as "5m"', value)
            if value == "":
                return value  # empty: the spec's "empty is ..." reading; required keys check it
            try:
                self.durations[path] = parse_duration(value)
            except DurationError as exc:
                self.error(path, "duration", f"{where} is not a Go duration: {exc}")
                return _INVALID
            return value
        if kind == "regex":
            if not isinstance(value, str):
                return self._wrong(path, where, "a string (a Go regular expression)", value)
            if value:
                try:
                    go_regex_compile(value)
                except ValueError as exc:
                    self.error(
                        path, "regex", f"{where} is not a valid Go (RE2) regular expression: {exc}"
                    )
                    return _INVALID
            return value
        tag, arg = kind
        if tag == "enum":
            if not isinstance(value, str):
                return self._wrong(path, where, "a string", value)
            empty_ok = (_last_table(path), key) in schema.EMPTY_ALLOWED
            if value not in arg and not (value == "" and empty_ok):
                self.error(
                    path, "enum", f"{where} is {value!r}; it must be one of {', '.join(arg)}"
                )
                return _INVALID
            return value
        if tag == "enums":
            if not isinstance(value, list):
                return self._wrong(
                    path, where, f"an array of strings among {', '.join(arg)}", value
                )
            ok = True
            seen: set[str] = set()
            for i, item in enumerate(value):
                if not isinstance(item, str):
                    self._wrong(pointer.join(path, i), f"{where}[{i}]", "a string", item)
                    ok = False
                elif item not in arg:
                    self.error(
                        pointer.join(path, i),
                        "enum",
                        f"{where}[{i}] is {item!r}; it must be one of {', '.join(arg)}",
                    )
                    ok = False
                elif item in seen:
                    self.error(pointer.join(path, i), "duplicate", f"{where} lists {item!r} twice")
                    ok = False
                else:
                    seen.add(item)
            return list(value) if ok else _INVALID
        if tag == "table":
            return self.table(value, arg, path, where)
        if tag == "array":
            if not isinstance(value, list):
                return self._wrong(path, where, "an array of tables", value)
            rows = []
            identity = schema.IDENTITY.get(key)
            seen_ids: dict[str, int] = {}
            for i, item in enumerate(value):
                row = self.table(item, arg, pointer.join(path, i), f"{where}[{i}]")
                rows.append(row)
                ident = row.get(identity) if identity else None
                if isinstance(ident, str):
                    if ident in seen_ids:
                        self.error(
                            pointer.join(path, i, identity),
                            "duplicate",
                            f"{where}[{i}].{identity} {ident!r} repeats {where}[{seen_ids[ident]}]",
                        )
                    else:
                        seen_ids[ident] = i
            return rows
        raise AssertionError(f"unknown kind {kind!r}")

    def _wrong(self, path: str, where: str, wanted: str, value: Any) -> Any:
        self.error(path, "type", f"{where} must be {wanted}, not {_type_name(value)}")
        return _INVALID


Kind = Any


class _Invalid:
    pass


_INVALID: Any = _Invalid()
_NO_DEFAULT: Any = object()


def _default(kind: Kind) -> Any:
    if kind in ("string", "duration", "regex"):
        return ""
    if kind == "bool":
        return False
    if kind == "int":
        return 0
    if kind == "strings":
        return []
    if kind == "strings_table":
        return {}
    tag, _ = kind
    if tag == "enum":
        return ""
    if tag in ("enums", "array"):
        return []
    return _NO_DEFAULT  # optional nested tables stay absent


def _last_table(path: str) -> str:
    """The array or table name a key sits in: "/source/ui/facets/0/match" -> "facets"."""
    for part in reversed(pointer.parse(path)[:-1]):
        if not pointer.is_array_index(part):
            return part
    return ""


# -- the rules ---------------------------------------------------------------------------------
def _rules(c: _Checker, top: dict[str, Any], raw: Mapping[str, Any]) -> None:
    plugin_id = top.get("id")
    if isinstance(plugin_id, str):
        if not ID_PATTERN.fullmatch(plugin_id):
            c.error(
                "/id",
                "id-format",
                f"id {plugin_id!r} must be 1 to 32 lowercase letters, digits, '-' or '_'",
            )
        elif plugin_id != c.folder.name:
            c.error(
                "/id",
                "id-mismatch",
                f"id {plugin_id!r} differs from the plugin's folder name {c.folder.name!r}; a plugin lives in <plugins>/<id>/",
            )
    protocol = top.get("protocol")
    if isinstance(protocol, int) and protocol not in SUPPORTED_PROTOCOLS:
        c.error(
            "/protocol",
            "protocol-unsupported",
            f"protocol {protocol} is not spoken by this host (it speaks {', '.join(map(str, SUPPORTED_PROTOCOLS))})",
        )
    kinds = top.get("kinds")
    if isinstance(kinds, list):
        if not kinds:
            c.error("/kinds", "kinds-empty", "kinds must name at least one kind the binary serves")
        for kind in kinds:
            if kind not in raw:
                c.error(
                    f"/{kind}",
                    "kind-table",
                    f"kinds lists {kind!r} but the [{kind}] table is missing",
                )
        if "source" in raw and "source" not in kinds:
            c.error("/source", "kind-table", 'a [source] table needs "source" in kinds')
    source = top.get("source")
    if isinstance(source, dict) and source:
        _source_rules(c, source)
        c.errors.extend(config_reads_issues(top, config_keys=c.config_keys))


def _names(rows: Any, key: str = "name") -> list[str]:
    return [r[key] for r in rows or () if isinstance(r, dict) and isinstance(r.get(key), str)]


def _source_rules(c: _Checker, s: dict[str, Any]) -> None:
    slot = s.get("slot")
    if isinstance(slot, str) and slot == "":
        c.error("/source/slot", "required", "source.slot must not be empty")
    codec = s.get("codec")
    if isinstance(codec, dict) and codec:
        _codec_rules(c, codec)

    facts = {r["name"]: r for r in s.get("facts", ()) if isinstance(r.get("name"), str)}
    for i, fact in enumerate(s.get("facts", ())):
        name = fact.get("name")
        if isinstance(name, str) and isinstance(slot, str) and slot:
            if not (name.startswith(slot + ".") and len(name) > len(slot) + 1):
                c.error(
                    f"/source/facts/{i}/name",
                    "fact-slot",
                    f"fact {name!r} must start with the slot {slot!r} followed by a dot, like {slot + '.state'!r}",
                )
        enum = fact.get("enum") or []
        dupes = sorted({v for v in enum if enum.count(v) > 1})
        if dupes:
            c.error(
                f"/source/facts/{i}/enum",
                "duplicate",
                f"fact {name!r} enum repeats {', '.join(dupes)}",
            )

    for i, effect in enumerate(s.get("effects", ())):
        applies = effect.get("applies")
        if effect.get("silent") and isinstance(applies, list) and "draft" not in applies:
            c.error(
                f"/source/effects/{i}/silent",
                "effect-silent",
                f"effect {effect.get('name')!r} is silent, which only a draft effect may be; "
                f"it applies to {', '.join(applies) or 'nothing'}, not draft",
            )

    deliveries = set(_names(s.get("deliveries")))
    default_delivery = s.get("default_delivery") or ""
    if default_delivery and default_delivery not in deliveries:
        c.error(
            "/source/default_delivery",
            "unknown-delivery",
            f"default_delivery {default_delivery!r} is not one of deliveries ({', '.join(sorted(deliveries)) or 'none declared'})",
        )
    for i, kind in enumerate(s.get("draft_kinds", ())):
        delivery = kind.get("delivery") or ""
        if delivery and delivery not in deliveries:
            c.error(
                f"/source/draft_kinds/{i}/delivery",
                "unknown-delivery",
                f"draft kind {kind.get('name')!r} names delivery {delivery!r}, which is not one of deliveries ({', '.join(sorted(deliveries)) or 'none declared'})",
            )
        elif not delivery and not default_delivery and isinstance(kind.get("name"), str):
            c.error(
                f"/source/draft_kinds/{i}/delivery",
                "no-delivery",
                f"draft kind {kind['name']!r} names no delivery and there is no default_delivery",
            )

    for key, wanted in (("language_fact", "string"), ("members_fact", "list")):
        value = s.get(key) or ""
        if not value:
            continue
        fact = facts.get(value)
        if fact is None:
            c.error(f"/source/{key}", "unknown-fact", f"{key} {value!r} is not one of facts")
        elif fact.get("type") != wanted:
            c.error(
                f"/source/{key}",
                "fact-type",
                f"{key} {value!r} must be a {wanted} fact; it is a {fact.get('type')} fact",
            )

    for i, predicate in enumerate(s.get("predicates", ())):
        for j, name in enumerate(predicate.get("facts") or ()):
            if name not in facts:
                c.error(
                    f"/source/predicates/{i}/facts/{j}",
                    "unknown-fact",
                    f"predicate {predicate.get('name')!r} hands fact {name!r}, which is not one of facts",
                )

    for i, mark in enumerate(s.get("marks", ())):
        name = mark.get("name")
        if isinstance(name, str):
            bad = [
                ch for ch in name if ch == "/" or ch.isspace() or unicodedata.category(ch) == "Cc"
            ]
            if not name or bad:
                why = "is empty" if not name else f"contains {bad[0]!r}"
                c.error(
                    f"/source/marks/{i}/name",
                    "mark-name",
                    f"mark name {name!r} {why}; a mark name has no slash, space or control character",
                )

    config_reads = s.get("config_reads") or []
    for i, job in enumerate(s.get("jobs", ())):
        _job_rules(c, i, job, config_reads)

    ui = s.get("ui")
    if isinstance(ui, dict):
        _ui_rules(c, ui, facts)

    for i, tool in enumerate(s.get("tools", ())):
        text = tool.get("input")
        if isinstance(text, str):
            _tool_input(c, f"/source/tools/{i}/input", tool.get("name"), text)

    for i, event in enumerate(s.get("events", ())):
        for state, verdict in (event.get("verdicts") or {}).items():
            if verdict not in schema.VERDICTS:
                c.error(
                    f"/source/events/{i}/verdicts/{pointer.escape(state)}",
                    "enum",
                    f"verdict {verdict!r} of state {state!r} must be one of {', '.join(schema.VERDICTS)}",
                )
        if event.get("verdicts") and not event.get("answers_asked_turn"):
            c.warn(
                f"/source/events/{i}/verdicts",
                "verdicts-unused",
                "verdicts are read only from an event with answers_asked_turn = true",
            )


def _codec_rules(c: _Checker, codec: dict[str, Any]) -> None:
    keys = codec.get("keys")
    key_fields: list[frozenset[str]] = []
    urls: list[tuple[int, str, frozenset[str]]] = []
    used: set[str] = set()
    if isinstance(keys, list) and not keys:
        c.error("/source/codec/keys", "required", "source.codec.keys needs at least one template")
    for group in ("keys", "urls"):
        for i, text in enumerate(codec.get(group) or ()):
            try:
                template = parse_template(text)
            except TemplateError as exc:
                c.error(
                    f"/source/codec/{group}/{i}", "template", f"codec.{group}[{i}] {text!r}: {exc}"
                )
                continue
            fields = frozenset(template.fields)
            used.update(fields)
            if group == "keys":
                key_fields.append(fields)
                continue
            urls.append((i, text, fields))
            if not text.startswith(("http://", "https://")):
                c.error(
                    f"/source/codec/urls/{i}",
                    "template",
                    f"codec.urls[{i}] {text!r} must be an http:// or https:// address",
                )
    # A URL template is the address of every key that has its fields, so it may use fewer
    # fields than a key; one whose fields no key template has is the address of nothing.
    for i, text, fields in urls:
        if key_fields and not any(fields <= key for key in key_fields):
            c.error(
                f"/source/codec/urls/{i}",
                "url-key",
                f"codec.urls[{i}] {text!r} has fields {', '.join(sorted(fields))}; no key template "
                "has all of them, so it is no key's address",
            )
    for name, pattern in (codec.get("fields") or {}).items():
        path = f"/source/codec/fields/{pointer.escape(name)}"
        try:
            go_regex_compile(pattern)
        except ValueError as exc:
            c.error(
                path,
                "regex",
                f"codec.fields.{name} is not a valid Go (RE2) regular expression: {exc}",
            )
            continue
        if pattern == "":
            c.error(
                path, "regex", f"codec.fields.{name} is empty; it would match only the empty value"
            )
        if name not in used:
            c.warn(path, "unused-field", f"codec.fields.{name} is in no key or URL template")
    label = codec.get("label") or ""
    if label:
        try:
            parse_label(label)  # filled in, never read back: the key rules do not apply
        except TemplateError as exc:
            c.error("/source/codec/label", "template", f"codec.label {label!r}: {exc}")
    if not c.errors:
        # Each part compiled alone; the whole templates must compile too (a pattern with a
        # named group of a field's name would clash with that field's own group).
        try:
            Codec(codec)
        except (ValueError, TemplateError) as exc:
            c.error(
                "/source/codec",
                "regex",
                f"the codec's templates do not compile with their field patterns: {exc}",
            )


def config_reads_issues(
    manifest: Mapping[str, Any], *, config_keys: Collection[str] | None
) -> list[Issue]:
    """The errors of source.config_reads in a manifest (normalised, or raw as a sync stored it).

    Each entry is a configuration key outside the plugin's own table (the table named after its
    id, which Ingest always receives) and, when config_keys is given, one of them. Without
    config_keys (the loader alone knows no configuration) only the own-table rule applies.
    """
    source = manifest.get("source")
    reads = source.get("config_reads") if isinstance(source, Mapping) else None
    if not isinstance(reads, list | tuple) or not all(isinstance(r, str) for r in reads):
        return []  # wrong types are reported where the types are checked
    plugin_id = manifest.get("id")
    issues = []
    for i, key in enumerate(reads):
        path = f"/source/config_reads/{i}"
        if key == "":
            issues.append(
                Issue(MANIFEST, path, "config-key", f"config_reads[{i}] is empty; name a key")
            )
        elif (
            isinstance(plugin_id, str)
            and plugin_id
            and (key == plugin_id or key.startswith(plugin_id + "."))
        ):
            issues.append(
                Issue(
                    MANIFEST,
                    path,
                    "config-own-table",
                    f"config_reads[{i}] {key!r} is in the plugin's own table {plugin_id!r}, which "
                    "Ingest always receives; config_reads lists the keys outside it",
                )
            )
        elif config_keys is not None and key not in config_keys:
            # The configuration's other keys are not listed: the message shows on public pages.
            issues.append(
                Issue(
                    MANIFEST,
                    path,
                    "config-key",
                    f"config_reads[{i}] {key!r} is not a key of the configuration",
                )
            )
    return issues


def _job_rules(c: _Checker, i: int, job: dict[str, Any], config_reads: list[str]) -> None:
    base = f"/source/jobs/{i}"
    name = job.get("name")
    if name == "":
        c.error(f"{base}/name", "required", "a job needs a name, which Ingest receives")
    if job.get("every") == "":
        c.error(f"{base}/every", "required", "jobs.every is required")
    for key in ("every", "timeout", "retry"):
        ns = c.durations.get(f"{base}/{key}")
        if ns is not None and ns <= 0:
            c.error(
                f"{base}/{key}",
                "duration-positive",
                f"jobs[{i}].{key} must be more than zero, not {job[key]!r}",
            )
    every_from = job.get("every_from") or ""
    if every_from and not any(
        every_from == r or every_from.startswith(r + ".") for r in config_reads
    ):
        c.error(
            f"{base}/every_from",
            "every-from",
            f"every_from {every_from!r} must be one of config_reads or under one ({', '.join(config_reads) or 'none declared'})",
        )
    every = c.durations.get(f"{base}/every")
    retry = c.durations.get(f"{base}/retry")
    if every and retry and every > 0 and retry > every:
        c.warn(
            f"{base}/retry",
            "retry-over-every",
            f"retry {job['retry']!r} is longer than every {job['every']!r}; waits are capped at every",
        )


def _ui_rules(c: _Checker, ui: dict[str, Any], facts: Mapping[str, Any]) -> None:
    view_ids = set(_names(ui.get("views"), "id"))
    for i, section in enumerate(ui.get("menubar", ())):
        view = section.get("view")
        if isinstance(view, str) and view not in view_ids:
            c.error(
                f"/source/ui/menubar/{i}/view",
                "unknown-view",
                f"menubar section {section.get('id')!r} shows view {view!r}, which is not one of ui.views",
            )
    strips = []
    for i, facet in enumerate(ui.get("facets", ())):
        base = f"/source/ui/facets/{i}"
        sort = facet.get("sort") or ""
        if facet.get("rank") and sort != "rank":
            c.error(
                f"{base}/rank",
                "facet-rank",
                f'facet {facet.get("id")!r} has rank, which needs sort = "rank"',
            )
        buckets = facet.get("buckets") or []
        if buckets and sort != "time":
            c.error(
                f"{base}/buckets",
                "facet-buckets",
                f'facet {facet.get("id")!r} has buckets, which need sort = "time"',
            )
        previous: int | None = None
        for j, bucket in enumerate(buckets):
            within = bucket.get("within") or ""
            last = j == len(buckets) - 1
            if not within and not last and f"{base}/buckets/{j}/within" not in c.invalid:
                c.error(
                    f"{base}/buckets/{j}/within",
                    "bucket-within",
                    f"bucket {bucket.get('id')!r} needs within; only the last bucket may leave it out",
                )
            ns = c.durations.get(f"{base}/buckets/{j}/within")
            if ns is not None:
                if previous is not None and ns <= previous:
                    c.error(
                        f"{base}/buckets/{j}/within",
                        "bucket-order",
                        f"bucket {bucket.get('id')!r} within {within!r} must be longer than the bucket before it (youngest first)",
                    )
                previous = ns
        if facet.get("strip"):
            strips.append(i)
        field_ = facet.get("field") or ""
        if field_ and not (
            (field_.startswith(("row.", "item.")) and field_.split(".", 1)[1]) or field_ in facts
        ):
            c.error(
                f"{base}/field",
                "facet-field",
                f"facet {facet.get('id')!r} reads {field_!r}; a facet reads row.<name>, item.<name> or a fact of facts",
            )
    for i in strips[1:]:
        c.error(
            f"/source/ui/facets/{i}/strip",
            "facet-strip",
            f"only one facet may color the strip; facets[{strips[0]}] already does",
        )
    bound: dict[tuple[str, str], int] = {}
    for i, binding in enumerate(ui.get("keys", ())):
        key = binding.get("key")
        if not isinstance(key, str):
            continue
        surfaces = [binding.get("surface")] if binding.get("surface") else list(schema.SURFACES)
        for surface in surfaces:
            if (key, surface) in bound:
                c.error(
                    f"/source/ui/keys/{i}/key",
                    "duplicate",
                    f"key {key!r} is already bound on {surface} by ui.keys[{bound[key, surface]}]",
                )
                break
            bound[key, surface] = i
    web = ui.get("web") or ""
    if web:
        _ui_web(c, web)


def _ui_web(c: _Checker, web: str) -> None:
    shown = web if len(web) <= 80 else web[:80] + "..."
    try:
        root = c.folder.resolve()
        target = (c.folder / web).resolve()
        inside = not Path(web).is_absolute() and (target == root or root in target.parents)
        is_dir = inside and target.is_dir()
    except (OSError, ValueError) as exc:  # a NUL byte, a name too long for the file system
        c.error("/source/ui/web", "ui-web", f"ui.web {shown!r} is not a usable folder name: {exc}")
        return
    if not inside:
        c.error("/source/ui/web", "ui-web", f"ui.web {shown!r} must be a folder inside the plugin")
    elif not is_dir:
        c.error("/source/ui/web", "ui-web", f"ui.web {shown!r} is not a folder of the plugin")


def _tool_input(c: _Checker, path: str, name: Any, text: str) -> None:
    try:
        value = json.loads(text)
    except json.JSONDecodeError as exc:
        c.error(path, "tool-input", f"tool {name!r} input is not JSON: {exc}")
        return
    if not isinstance(value, dict):
        c.error(
            path,
            "tool-input",
            f"tool {name!r} input must be a JSON schema object, not {_type_name(value)}",
        )
        return
    if value.get("type", "object") != "object":
        c.error(
            path,
            "tool-input",
            f'tool {name!r} input must describe an object (type "object"), not {value.get("type")!r}',
        )
        return
    try:
        jsonschema.validators.validator_for(value).check_schema(value)
    except jsonschema.SchemaError as exc:
        c.error(
            path, "tool-input", f"tool {name!r} input is not a valid JSON schema: {exc.message}"
        )


# -- entry points ------------------------------------------------------------------------------
def load_source_plugin(
    path: str | os.PathLike[str], *, config_keys: Collection[str] | None = None
) -> SourceLoadResult:
    """Load the plugin folder at path (the folder holding plugin.toml).

    config_keys: the configuration's keys, which config_reads entries must be among; None
    leaves that check out (no configuration at hand).
    """
    folder = Path(path)
    digest = content_hash(folder)
    manifest_file = folder / MANIFEST
    if not manifest_file.is_file():
        issue = Issue(MANIFEST, "", "missing-manifest", f"{folder} has no {MANIFEST}")
        return SourceLoadResult(str(folder), folder.name, None, (issue,), (), None, digest)
    try:
        raw = tomllib.loads(manifest_file.read_text(encoding="utf-8"))
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        issue = Issue(MANIFEST, "", "toml-syntax", f"{MANIFEST} is not valid TOML: {exc}")
        return SourceLoadResult(str(folder), folder.name, None, (issue,), (), None, digest)
    result = check_manifest(raw, folder=folder, config_keys=config_keys)
    return SourceLoadResult(
        path=result.path,
        plugin_id=result.plugin_id,
        manifest=result.manifest,
        errors=result.errors,
        warnings=result.warnings,
        raw=result.raw,
        content_hash=digest,
    )


def check_manifest(
    raw: Mapping[str, Any], *, folder: Path, config_keys: Collection[str] | None = None
) -> SourceLoadResult:
    """Check parsed plugin.toml data as if it were the manifest of folder (no content hash)."""
    checker = _Checker(folder, config_keys)
    top = checker.table(dict(raw), schema.TOP, "", "")
    _rules(checker, top, raw)
    plugin_id = raw["id"] if isinstance(raw.get("id"), str) and raw["id"] else folder.name
    if not checker.errors and not os.access(binary_path(folder, plugin_id), os.X_OK):
        checker.warn(
            "",
            "binary-missing",
            f"no executable binary {plugin_id!r} in the plugin folder; its jobs cannot run",
        )
    manifest = None
    if not checker.errors:
        manifest = SourceManifest(
            id=plugin_id, path=str(folder.resolve()), data=freeze(top), jobs=_job_specs(top)
        )
    return SourceLoadResult(
        path=str(folder),
        plugin_id=plugin_id,
        manifest=manifest,
        errors=tuple(checker.errors),
        warnings=tuple(checker.warnings),
        raw=freeze(raw),
    )


def _job_specs(top: Mapping[str, Any]) -> tuple[JobSpec, ...]:
    specs = []
    for job in top.get("source", {}).get("jobs", ()):
        specs.append(
            JobSpec(
                name=job["name"],
                every_ns=parse_duration(job["every"]),
                every_from=job.get("every_from") or "",
                timeout_ns=parse_duration(job["timeout"]) if job.get("timeout") else None,
                retry_ns=parse_duration(job["retry"]) if job.get("retry") else None,
            )
        )
    return tuple(specs)


def view_id_clashes(results: Iterable[SourceLoadResult]) -> dict[str, list[Issue]]:
    """View ids must be unique across all installed source plugins.

    Returns, per plugin id, an error for each of its views whose id another plugin also
    declares (every plugin in a clash gets one: none of them is preferred). Only valid
    plugins take part: an invalid one declares nothing.
    """
    return view_id_clashes_by_views(
        {r.plugin_id: r.manifest.view_ids for r in results if r.manifest is not None}
    )


def view_id_clashes_by_views(views: Mapping[str, Sequence[str]]) -> dict[str, list[Issue]]:
    """view_id_clashes over {plugin id: its view ids, in declaration order}."""
    owners: dict[str, list[str]] = {}
    positions: dict[tuple[str, str], int] = {}
    for plugin_id, view_ids in views.items():
        for index, view_id in enumerate(view_ids):
            owners.setdefault(view_id, []).append(plugin_id)
            positions.setdefault((plugin_id, view_id), index)
    clashes: dict[str, list[Issue]] = {}
    for view_id, plugins in owners.items():
        if len(set(plugins)) < 2:
            continue
        for plugin in sorted(set(plugins)):
            others = ", ".join(sorted(p for p in set(plugins) if p != plugin))
            clashes.setdefault(plugin, []).append(
                Issue(
                    MANIFEST,
                    f"/source/ui/views/{positions[plugin, view_id]}/id",
                    "view-id-taken",
                    f"view id {view_id!r} is also declared by source plugin {others}; view ids are unique across plugins",
                )
            )
    return clashes


def with_issues(result: SourceLoadResult, errors: Sequence[Issue]) -> SourceLoadResult:
    """The result with more errors (a valid plugin becomes invalid)."""
    if not errors:
        return result
    return SourceLoadResult(
        path=result.path,
        plugin_id=result.plugin_id,
        manifest=None,
        errors=result.errors + tuple(errors),
        warnings=result.warnings,
        raw=result.raw,
        content_hash=result.content_hash,
    )
