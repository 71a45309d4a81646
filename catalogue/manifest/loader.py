"""load_package: read one package folder, validate it completely and build its Manifest.

Never raises on bad input and never runs plugin code. Every problem becomes an Issue, and all
of them are collected in one pass. See docs/loader.md for the rules and their codes.
"""

from __future__ import annotations

import hashlib
import os
import re
import stat
import threading
import time
from collections import OrderedDict
from collections.abc import Mapping
from pathlib import Path
from types import MappingProxyType
from typing import Any

from catalogue.manifest import package_files, rules, schema, schema_files
from catalogue.manifest.context import (
    MAX_FILE_BYTES,
    PLUGIN_FILE,
    RUNTIMES_DIR,
    Context,
    RuntimeDoc,
)
from catalogue.manifest.fingerprint import code_fingerprint
from catalogue.manifest.frontmatter import YAML_CODES, Parsed, split_markdown
from catalogue.manifest.locale_files import (
    check_locale_file,
    merge_texts,
    read_message_sections,
    read_messages,
)
from catalogue.manifest.normalise import normalise_package, normalise_runtime
from catalogue.manifest.older_format import detect_older_format
from catalogue.manifest.types import Issue, LoadResult, Manifest, RuntimeManifest, freeze

HOST_VERSION = "0.1.0"
README_FILE = "README.md"
MAX_README_BYTES = 256 * 1024
RUNTIME_FILE = "RUNTIME.md"
LOCALES_DIR = "locales"
LOCALE = r"[a-z]{2,3}(?:-[A-Za-z0-9]{2,8})*"
_PLUGIN_VARIANT = re.compile(rf"^PLUGIN\.({LOCALE})\.md$")
_RUNTIME_VARIANT = re.compile(rf"^RUNTIME\.({LOCALE})\.md$")
_LOCALE_FILE = re.compile(rf"^({LOCALE})\.(?:ya?ml|json)$")
_HASH_SKIP = {"node_modules", ".git"}
# Schema findings that a more specific rule reports at the same place (or just below it).
_VALUE_CODES = {
    "pattern-mismatch",
    "out-of-range",
    "too-many-items",
    "duplicate-items",
    "invalid-format",
    "invalid-key",
    "too-short",
}


def load_package(
    path: str | os.PathLike[str], *, host_version: str = HOST_VERSION, content_hash: str = ""
) -> LoadResult:
    """Validate the package folder at path. Always returns a LoadResult.

    content_hash: the caller's package_hash of the same folder (the sync hashed it to learn
    that it changed), so the files are not read twice; computed here when not given.
    """
    root = Path(os.path.abspath(path))
    folder = root.name
    loader = _Loader(root, host_version)
    try:
        manifest = loader.run()
    except Exception as exc:  # noqa: BLE001 - a loader bug must still give a verdict
        if not loader.merged:
            loader.ctx.errors[:0] = [*loader.reader_issues, *loader.schema_issues]
        loader.ctx.errors.append(
            Issue(
                loader.current_file,
                "",
                "internal-error",
                f"the loader failed: {type(exc).__name__}: {exc}",
            )
        )
        manifest = None
    digests: dict[str, str] | None = None
    if not content_hash:
        try:
            content_hash, digests = _hash_pass(root) if root.is_dir() else ("", {})
        except OSError:
            content_hash = ""
    else:
        digests = _remembered_digests(content_hash)
    ctx = loader.ctx
    raw = loader.raw
    written_id = raw.get("id") if isinstance(raw, dict) else None
    return LoadResult(
        path=str(root),
        package_id=written_id if isinstance(written_id, str) and written_id else folder,
        manifest=manifest if not ctx.errors else None,
        errors=tuple(ctx.errors),
        warnings=tuple(ctx.warnings),
        raw=freeze(raw) if isinstance(raw, dict) else None,
        content_hash=content_hash,
        files=_file_digests(root, loader.inventory, digests),
        raw_runtimes=tuple(
            (rt.id, freeze(rt.data)) for rt in ctx.runtimes if rt.file != PLUGIN_FILE
        ),
        readme=read_readme(root),
    )


def rules_version() -> str:
    """The fingerprint of this loader and its schemas: a package judged under another one is
    judged again, even when its files are unchanged."""
    here = Path(__file__).resolve().parent
    return code_fingerprint(here, here.parent / "schemas")


def _package_entries(root: Path) -> list[tuple[str, str]]:
    """(package-relative path, full path) of what the content hash covers, sorted: every file
    and every linked folder, node_modules and .git skipped, links never followed. (os.walk's
    walk, written with scandir and plain strings: an unchanged sync does this for every
    package, so it is kept to the syscalls.)"""
    found: list[tuple[str, str]] = []
    folders = [(os.fspath(root), "")]
    while folders:
        folder, prefix = folders.pop()
        try:
            entries = list(os.scandir(folder))
        except OSError:
            continue  # as os.walk: an unreadable folder is left out
        for entry in entries:
            relative = prefix + entry.name
            if entry.is_dir():
                if entry.name in _HASH_SKIP:
                    continue
                if entry.is_symlink():
                    found.append((relative, entry.path))
                else:
                    folders.append((entry.path, relative + "/"))
            else:
                found.append((relative, entry.path))
    return sorted(found)


# A file changed this close to the moment its stats were taken may change again within the
# clock's granularity without a visible difference ("racily clean", as git calls it): such
# stats are not kept, so the next sync hashes that package rather than trust them.
RACY_NS = 2_000_000_000


def package_stats(root: Path, *, now_ns: int | None = None) -> list[list[Any]]:
    """[[path, size, mtime_ns, ctime_ns, inode], ...] of the files package_hash covers, from
    lstat alone (no file is opened). Equal stats mean equal content for the sync: an edit
    changes the size or the times, a replaced file the inode, and ctime cannot be set back
    the way mtime can. [] when a file is too fresh to trust (RACY_NS) or the folder is gone."""
    limit = (time.time_ns() if now_ns is None else now_ns) - RACY_NS
    stats: list[list[Any]] = []
    try:
        for relative, full in _package_entries(root):
            info = os.lstat(full)
            if info.st_mtime_ns > limit or info.st_ctime_ns > limit:
                return []
            stats.append([relative, info.st_size, info.st_mtime_ns, info.st_ctime_ns, info.st_ino])
    except OSError:
        return []
    return stats


def package_hash(root: Path) -> str:
    """sha256 over the sorted package-relative paths and their bytes (node_modules/.git skipped).

    Symbolic links contribute their target text, never the bytes behind them, and special
    files (FIFOs, devices) only their names: hashing must not block or leave the package.
    Files are streamed; those over the loader's caps (package_files) count by size and time.
    """
    return _hash_pass(root)[0]


# The per-file hashes of the last few hash passes, by the content hash they add up to: the sync
# hashes a package to learn that it changed, then hands that hash to load_package, which takes
# these rather than read every file again. Keyed by the content hash itself, so they can only
# be the hashes of exactly the bytes that hash covers.
_DIGESTS: OrderedDict[str, dict[str, str]] = OrderedDict()
_DIGESTS_KEPT = 16
_DIGESTS_LOCK = threading.Lock()


def _remembered_digests(content_hash: str) -> dict[str, str] | None:
    with _DIGESTS_LOCK:
        return _DIGESTS.get(content_hash)


def _hash_pass(root: Path) -> tuple[str, dict[str, str]]:
    """package_hash's one read of the files: the content hash, and each regular file's own
    sha256 by package-relative path (from the same chunks; files past the caps have none)."""
    digest = hashlib.sha256()
    files: dict[str, str] = {}
    budget = package_files.MAX_PACKAGE_BYTES
    for relative, full in _package_entries(root):
        info = os.lstat(full)
        digest.update(relative.encode("utf-8", "surrogateescape") + b"\0")
        if stat.S_ISLNK(info.st_mode):
            digest.update(b"link:" + os.readlink(full).encode("utf-8", "surrogateescape"))
        elif stat.S_ISREG(info.st_mode):
            digest.update(str(info.st_size).encode() + b"\0")
            if info.st_size > package_files.MAX_PACKAGE_FILE_BYTES or budget < info.st_size:
                # Past the caps the loader refuses the package anyway: its size and time stand
                # for its bytes, so a huge file costs a stat, not a read, on every sync.
                digest.update(b"stat:%d:%d" % (info.st_mtime_ns, info.st_ino))
            else:
                budget -= info.st_size
                own = hashlib.sha256()
                try:
                    for chunk in package_files.read_chunks(full):
                        digest.update(chunk)
                        own.update(chunk)
                    files[relative] = own.hexdigest()
                except OSError:  # swapped for a FIFO or grown since the lstat: never waited on
                    digest.update(b"unreadable")
        digest.update(b"\0")
    content_hash = digest.hexdigest()
    with _DIGESTS_LOCK:
        _DIGESTS[content_hash] = files
        _DIGESTS.move_to_end(content_hash)
        while len(_DIGESTS) > _DIGESTS_KEPT:
            _DIGESTS.popitem(last=False)
    return content_hash, files


def _file_digests(
    root: Path, inventory: package_files.Inventory | None, digests: dict[str, str] | None
) -> tuple[tuple[str, str | None], ...]:
    """(path, sha256) of each file of the package inventory. The inventory is the hub's view of
    a package as hostile input (links inside the package followed, .hg/.svn left out, special
    and oversized files refused), the content hash the sync's (links as their target text): two
    lists, one read. A link's bytes are its target's, hashed under the target's path; only a
    file the hash pass did not cover (a link into node_modules/, the caller's hash no longer
    remembered) is read here."""
    if inventory is None:
        if not root.is_dir():
            return ()
        inventory = package_files.package_inventory(root)
    digests = digests or {}
    real_root = os.path.realpath(root)
    found: list[tuple[str, str | None]] = []
    for item in inventory.files:
        key = item.relative
        if item.real != os.path.join(root, *item.relative.split("/")):  # a link inside
            key = Path(os.path.relpath(item.real, real_root)).as_posix()
        sha = digests.get(key)
        if sha is None:
            try:
                sha = package_files.file_sha256(item.real)
            except OSError:  # FileRefused included: gone, swapped or grown since the walk
                sha = None
        found.append((item.relative, sha))
    return tuple(found)


def read_readme(root: Path) -> str:
    """README.md at the package root as text, for the catalogue's page: a regular file inside
    the package of at most MAX_README_BYTES (a link out of it, a FIFO or a bigger file is "")."""
    full = os.path.join(root, README_FILE)
    real_root = os.path.realpath(root)
    real = os.path.realpath(full)
    if not real.startswith(real_root + os.sep) or not os.path.isfile(full):
        return ""
    try:
        raw = package_files.read_bytes(real, limit=MAX_README_BYTES)
    except OSError:
        return ""
    return raw.decode("utf-8", errors="replace")


class _Loader:
    def __init__(self, root: Path, host_version: str) -> None:
        self.root = root
        self.host_version = host_version
        self.current_file = PLUGIN_FILE
        self.raw: Any = None
        self.inventory: package_files.Inventory | None = None  # its walk, kept for LoadResult
        real_root = os.path.realpath(root)
        self.ctx = Context(root=root, real_root=real_root, package_id=root.name, data={})
        self.schema_issues: list[Issue] = []
        # Findings of the YAML reader; they come first in the verdict.
        self.reader_issues: list[Issue] = []
        self.merged = False
        self.locales: list[str] = []
        self.instruction_locales: list[str] = []
        # The catalogue's text per locale (locale files, then PLUGIN.<locale>.md) and each
        # locales/ file as parsed here: what build() carries on the Manifest from them.
        self.texts_from_files: dict[str, dict[str, str]] = {}
        self.texts_from_variants: dict[str, dict[str, str]] = {}
        self.locale_data: dict[str, Any] = {}

    # ------------------------------------------------------------ reading files

    def read(self, relative: str, *, require_frontmatter: bool = True) -> Parsed | None:
        """Read and split one manifest file; None (with an error) when it cannot be read."""
        self.current_file = relative
        full = os.path.join(self.root, *relative.split("/"))
        real = os.path.realpath(full)
        ctx = self.ctx
        if not (real == ctx.real_root or real.startswith(ctx.real_root + os.sep)):
            ctx.error(
                relative,
                "",
                "path-escapes",
                f"{relative} leads outside the package through a symbolic link",
            )
            return None
        if not os.path.isfile(full):
            ctx.error(relative, "", "file-unreadable", f"{relative} is not a regular file")
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
        parsed = split_markdown(raw, relative, require_frontmatter=require_frontmatter)
        self.reader_issues.extend(parsed.issues)
        return parsed

    def mapping(self, parsed: Parsed, relative: str) -> dict[str, Any] | None:
        if parsed.data is None:
            return {} if parsed.has_frontmatter and not parsed.issues else None
        if not isinstance(parsed.data, dict):
            self.ctx.error(
                relative,
                "",
                "frontmatter-not-mapping",
                f"the frontmatter must be a mapping of fields, not {schema.json_type(parsed.data)}",
            )
            return None
        return parsed.data

    # ------------------------------------------------------------ the pass

    def run(self) -> Manifest | None:
        ctx = self.ctx
        root = self.root
        if not root.is_dir():
            ctx.error("", "", "package-not-found", f"{root} is not a folder")
            return None
        if not (root / PLUGIN_FILE).exists() and not (root / PLUGIN_FILE).is_symlink():
            ctx.error(
                PLUGIN_FILE, "", "plugin-md-missing", "the package has no PLUGIN.md at its root"
            )
            return None
        self.inventory = package_files.package_inventory(root)
        hostile = [
            issue for issue in self.inventory.issues if issue.code in package_files.REFUSING_CODES
        ]
        if hostile:
            # FIFOs, devices, links out of the package, files over the caps: refused before any
            # other file is opened, so no later read can block on one or leave the package.
            ctx.errors.extend(hostile)
            return None
        parsed = self.read(PLUGIN_FILE)
        data = self.mapping(parsed, PLUGIN_FILE) if parsed else None
        self.raw = data
        ctx.data = data if isinstance(data, dict) else {}
        written_id = ctx.data.get("id")
        if isinstance(written_id, str) and written_id:
            ctx.package_id = written_id
        if data is not None:
            self.schema_issues.extend(schema.validate("plugin", data, file=PLUGIN_FILE))
        self.current_file = PLUGIN_FILE
        self.collect_runtimes(parsed)
        self.collect_locales()
        self.current_file = PLUGIN_FILE
        if data is not None:
            rules.check_package(ctx, folder=root.name, host_version=self.host_version)
        for rt in ctx.runtimes:
            self.current_file = rt.file
            rules.check_runtime(ctx, rt)
        self.current_file = PLUGIN_FILE
        rules.check_graph(ctx)
        detect_older_format(ctx, root)
        schema_files.check_schema_files(ctx)
        self.merge_schema_issues()
        self.drop_echoes_of_refused_values()
        if ctx.errors or data is None:
            return None
        return self.build(parsed)

    def collect_runtimes(self, parsed: Parsed | None) -> None:
        ctx = self.ctx
        package_id = ctx.package_id
        inline = ctx.data.get("runtime")
        runtimes_dir = self.root / RUNTIMES_DIR
        folders = (
            sorted(
                p.name for p in runtimes_dir.iterdir() if p.is_dir() and not p.name.startswith(".")
            )
            if runtimes_dir.is_dir()
            else []
        )
        if "runtime" in ctx.data and folders:
            ctx.error(
                PLUGIN_FILE,
                "/runtime",
                "runtime-both-forms",
                "a package has either an inline runtime in PLUGIN.md or runtimes/<id>/RUNTIME.md files, not both",
            )
        if isinstance(inline, dict):
            ctx.runtimes.append(
                RuntimeDoc(
                    id=package_id,
                    qualified_id=package_id,
                    file=PLUGIN_FILE,
                    base="/runtime",
                    data=inline,
                    body=parsed.body if parsed else "",
                    rel_dir="",
                )
            )
        for name in folders:
            relative = f"{RUNTIMES_DIR}/{name}/{RUNTIME_FILE}"
            self.current_file = relative
            if not rules.RUNTIME_ID.fullmatch(name) or len(name) > rules.MAX_RUNTIME_ID_LENGTH:
                ctx.error(
                    relative,
                    "",
                    "runtime-id-syntax",
                    f"the runtime folder name {name!r} is not a valid runtime ID: lowercase letters, digits and single hyphens, at most {rules.MAX_RUNTIME_ID_LENGTH} characters",
                )
            if not os.path.lexists(os.path.join(self.root, RUNTIMES_DIR, name, RUNTIME_FILE)):
                ctx.error(
                    relative, "", "runtime-file-missing", f"runtimes/{name}/ has no {RUNTIME_FILE}"
                )
                continue
            runtime_parsed = self.read(relative)
            if runtime_parsed is None:
                continue
            runtime_data = self.mapping(runtime_parsed, relative)
            if runtime_data is None:
                continue
            self.schema_issues.extend(schema.validate("runtime", runtime_data, file=relative))
            ctx.runtimes.append(
                RuntimeDoc(
                    id=name,
                    qualified_id=f"{package_id}/{name}",
                    file=relative,
                    base="",
                    data=runtime_data,
                    body=runtime_parsed.body,
                    rel_dir=f"{RUNTIMES_DIR}/{name}",
                )
            )
            self.scan_variants(f"{RUNTIMES_DIR}/{name}", _RUNTIME_VARIANT, "runtime-locale")

    def collect_locales(self) -> None:
        self.scan_variants("", _PLUGIN_VARIANT, "locale")
        locales_dir = self.root / LOCALES_DIR
        if locales_dir.is_dir():
            for entry in sorted(locales_dir.iterdir()):
                match = _LOCALE_FILE.match(entry.name)
                if not match or not entry.is_file():
                    continue
                self.current_file = relative = f"{LOCALES_DIR}/{entry.name}"
                data = self.locale_data[entry.name] = check_locale_file(
                    self.ctx,
                    self.root,
                    relative,
                    reader_issues=self.reader_issues,
                    schema_issues=self.schema_issues,
                )
                if texts := _catalogue_texts((data or {}).get(PLUGIN_FILE)):
                    self.texts_from_files.setdefault(match.group(1), {}).update(texts)
                self.add_locale(match.group(1), instructions=False)

    def scan_variants(self, rel_dir: str, pattern: re.Pattern[str], kind: str) -> None:
        folder = self.root / rel_dir if rel_dir else self.root
        for entry in sorted(folder.iterdir()):
            match = pattern.match(entry.name)
            if not match:
                continue
            relative = f"{rel_dir}/{entry.name}" if rel_dir else entry.name
            parsed = self.read(relative, require_frontmatter=False)
            if parsed is None:
                continue
            data = self.mapping(parsed, relative) if parsed.has_frontmatter else None
            if data:
                self.schema_issues.extend(schema.validate(kind, data, file=relative))
                if kind == "locale":
                    rules.check_locale(self.ctx, data, file=relative)
            if kind == "locale":
                texts = _catalogue_texts(data)
                if parsed.body.strip():
                    texts["body"] = parsed.body.strip()
                if texts:
                    self.texts_from_variants.setdefault(match.group(1), {}).update(texts)
            self.add_locale(match.group(1), instructions=bool(parsed.body.strip()))

    def add_locale(self, locale: str, *, instructions: bool) -> None:
        if locale not in self.locales:
            self.locales.append(locale)
        if instructions and locale not in self.instruction_locales:
            self.instruction_locales.append(locale)

    def merge_schema_issues(self) -> None:
        ctx = self.ctx
        rule_paths = {(i.file, i.path) for i in ctx.errors}
        kept = []
        for issue in self.schema_issues:
            if issue.code in _VALUE_CODES and any(
                file == issue.file and (path == issue.path or path.startswith(issue.path + "/"))
                for file, path in rule_paths
            ):
                continue  # the rule's message is the more precise one
            kept.append(issue)
        ctx.errors[:0] = [*self.reader_issues, *kept]
        self.merged = True

    def drop_echoes_of_refused_values(self) -> None:
        """A value the YAML reader refused is read as null; do not report that null again."""
        ctx = self.ctx
        refused = {(i.file, i.path) for i in ctx.errors if i.code in YAML_CODES and i.path}
        if not refused:
            return
        ctx.errors[:] = [
            i
            for i in ctx.errors
            if i.code in YAML_CODES
            or not any(
                i.file == f and (i.path == p or i.path.startswith(p + "/")) for f, p in refused
            )
        ]

    # ------------------------------------------------------------ the result

    def build(self, parsed: Parsed | None) -> Manifest:
        ctx = self.ctx
        single = len(ctx.runtimes) == 1
        normalised = [normalise_runtime(ctx, rt, single=single) for rt in ctx.runtimes]
        data = normalise_package(ctx, normalised)
        runtimes = tuple(
            RuntimeManifest(
                id=rt.id,
                qualified_id=rt.qualified_id,
                file=rt.file,
                prompt=rt.body,
                data=freeze(norm),
            )
            for rt, norm in zip(ctx.runtimes, normalised, strict=True)
        )
        text = ["en", *sorted(loc for loc in self.locales if loc != "en")]
        has_prompt = bool(ctx.runtimes) or bool(parsed and parsed.body.strip())
        instructions = (["en"] if has_prompt else []) + sorted(
            loc for loc in self.instruction_locales if loc != "en"
        )
        return Manifest(
            id=ctx.package_id,
            path=str(self.root),
            data=freeze(data),
            body=parsed.body if parsed else "",
            runtimes=runtimes,
            locales=tuple(self.locales),
            languages=MappingProxyType({"text": tuple(text), "instructions": tuple(instructions)}),
            translations=freeze(merge_texts(self.texts_from_files, self.texts_from_variants)),
            messages=freeze(read_messages(self.root / LOCALES_DIR)),
            message_sections=freeze(
                read_message_sections(self.root / LOCALES_DIR, self.locale_data)
            ),
        )


def _catalogue_texts(data: Any) -> dict[str, str]:
    """The name and description a locale gives the catalogue (non-empty strings, stripped)."""
    if not isinstance(data, Mapping):
        return {}
    return {
        k: v.strip()
        for k in ("displayName", "description")
        if isinstance(v := data.get(k), str) and v.strip()
    }
