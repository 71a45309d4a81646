"""Writes of the catalogue: turning loader verdicts into index rows, and syncing plugin folders.

A package flows one way: files on disk -> loader -> LoadResult -> the rows written here.
"""

from __future__ import annotations

import fcntl
import gc
import logging
import os
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from django.conf import settings
from django.db import transaction
from django.db.models import BooleanField, ExpressionWrapper, ProtectedError, Q, RestrictedError
from django.utils import timezone

from catalogue import callouts
from catalogue.locales import search_words
from catalogue.manifest.loader import package_stats, rules_version
from catalogue.manifest.types import Issue, LoadResult, thaw
from catalogue.models import (
    Command,
    CommandArgument,
    Contract,
    ExternalLink,
    HttpPermission,
    Package,
    PackageContract,
    PackageTag,
    PackageVersion,
    Runtime,
    Setting,
    SettingOption,
)
from catalogue.rows import Rows, json_safe, no_nul, package_id_of, rows_from

log = logging.getLogger(__name__)

# Folders inside a package that are never part of its content (VCS data, editor caches).
_SKIPPED_NAMES = {".git", ".hg", ".svn", "node_modules", "__pycache__", ".DS_Store"}


# --- Hashing ------------------------------------------------------------------------------


def package_content_hash(*, path: Path) -> str:
    """The loader's own content hash (names and bytes, no parse), so an unchanged package
    costs a few small reads and the stored hash always equals LoadResult.content_hash."""
    from catalogue.manifest.loader import package_hash

    return package_hash(Path(path))


def _contract_rows(contract_ids: set[str]) -> dict[str, Contract]:
    existing = {c.contract_id: c for c in Contract.objects.filter(contract_id__in=contract_ids)}
    missing = [Contract(contract_id=c) for c in contract_ids - existing.keys()]
    if missing:
        Contract.objects.bulk_create(missing, ignore_conflicts=True)
        existing = {c.contract_id: c for c in Contract.objects.filter(contract_id__in=contract_ids)}
    return existing


@transaction.atomic
def _keep_replaced_version(*, package_id: str, version: str) -> None:
    """Before a row takes a new version, keep the old one's manifest, hash and dates."""
    old = (
        Package.objects.filter(package_id=package_id)
        .only("pk", "version", "content_hash", "manifest", "indexed_at", "created_at", "state")
        .first()
    )
    if old is None or old.version == version or old.state != Package.State.LOADED:
        return
    PackageVersion.objects.get_or_create(
        package=old,
        version=old.version,
        content_hash=old.content_hash,
        defaults={
            "manifest": old.manifest,
            "first_seen_at": old.indexed_at or old.created_at,
            "replaced_at": timezone.now(),
        },
    )


def _package_fields(
    *,
    result: LoadResult,
    source: str,
    content_hash: str,
    host_version: str,
    shadowed: list[dict[str, str]] | None,
    file_stats: list[list[Any]] | None,
) -> Rows:
    """The rows of one loader verdict, with every column of the package row in rows.fields."""
    rows = rows_from(result)
    # Read by the loader with the locale files it checked; never read again here.
    translations = thaw(result.manifest.translations) if result.ok else {}
    rows.fields["translations"] = json_safe(translations)
    if translations:
        # Found by their names in every language, CJK included (substring match, no spaces).
        extra = " ".join(search_words(translations)).casefold()
        rows.fields["search_text"] = f"{rows.fields['search_text']} {no_nul(extra)}"
    trust = Package.Trust.BUNDLED if source == Package.Source.BUNDLED else Package.Trust.COMMUNITY
    rows.fields.update(
        {
            "source": source,
            "trust": trust,
            "source_dir": str(result.path)[:1000],
            "content_hash": content_hash,
            "file_stats": file_stats or [],
            "host_version": host_version,
            "rules_version": rules_version(),
            "shadowed": shadowed or [],
            "indexed_at": timezone.now(),
        }
    )
    return rows


def package_index(
    *,
    result: LoadResult,
    source: str,
    content_hash: str,
    host_version: str,
    shadowed: list[dict[str, str]] | None = None,
    file_stats: list[list[Any]] | None = None,
) -> Package:
    """Store one loader verdict: upsert the package row, then rebuild its child rows in bulk."""
    rows = _package_fields(
        result=result,
        source=source,
        content_hash=content_hash,
        host_version=host_version,
        shadowed=shadowed,
        file_stats=file_stats,
    )
    _keep_replaced_version(package_id=rows.fields["package_id"], version=rows.fields["version"])
    fields = dict(rows.fields)
    package, created = Package.objects.update_or_create(
        package_id=fields.pop("package_id"), defaults=fields
    )
    # Children are cheap to rebuild and never edited in place, so replace them wholesale.
    children = (PackageTag, PackageContract, ExternalLink, Runtime, Command, Setting, *rows.simple)
    for model in children if not created else ():
        model.objects.filter(package=package).delete()
    _children_create([(package, rows)])
    return package


def packages_index_new(items: list[tuple[LoadResult, dict[str, Any]]]) -> list[Package]:
    """Store many loader verdicts of packages that have no row yet (a first sync): every
    package row in one INSERT, then each kind of child row in one INSERT for all of them.
    items: (result, the package_index keywords but result). The caller holds the transaction."""
    built = [_package_fields(result=result, **kwargs) for result, kwargs in items]
    packages = Package.objects.bulk_create([Package(**rows.fields) for rows in built])
    if any(p.pk is None for p in packages):  # a database that returns no ids from a bulk insert
        ids = dict(
            Package.objects.filter(package_id__in=[p.package_id for p in packages]).values_list(
                "package_id", "pk"
            )
        )
        for package in packages:
            package.pk = ids[package.package_id]
    _children_create(list(zip(packages, built, strict=True)))
    return packages


def _children_create(indexed: list[tuple[Package, Rows]]) -> None:
    """Every child row of the given packages, one bulk INSERT per kind."""

    def bulk(model: type, objs: list) -> list:
        return model.objects.bulk_create(objs, batch_size=500) if objs else []

    def numbered(model: type, items: Iterable[tuple[Package, Iterable[dict[str, Any]]]]) -> list:
        return [
            model(package=package, position=i, **item)
            for package, rows in items
            for i, item in enumerate(rows)
        ]

    bulk(
        PackageTag,
        numbered(
            PackageTag, ((p, [{"tag": t, "derived": d} for t, d in r.tags]) for p, r in indexed)
        ),
    )
    contracts = _contract_rows({c for _, r in indexed for c, _, _ in r.contracts})
    bulk(
        PackageContract,
        numbered(
            PackageContract,
            (
                (
                    p,
                    [
                        {"contract": contracts[c], "relation": rel, "is_default": d}
                        for c, rel, d in r.contracts
                    ],
                )
                for p, r in indexed
            ),
        ),
    )
    bulk(
        ExternalLink,
        numbered(
            ExternalLink,
            ((p, [{"kind": k, "label": lb, "url": u} for k, lb, u in r.links]) for p, r in indexed),
        ),
    )
    runtimes = bulk(Runtime, numbered(Runtime, ((p, r.runtimes) for p, r in indexed)))
    if any(r.pk is None for r in runtimes) and any(r.http for _, r in indexed):
        runtimes = list(Runtime.objects.filter(package__in=[p for p, _ in indexed]))
    by_runtime = {(r.package_id, r.runtime_id): r for r in runtimes}
    bulk(
        HttpPermission,
        numbered(
            HttpPermission,
            (
                (
                    p,
                    [
                        {
                            "runtime": by_runtime.get((p.pk, rid)) if rid else None,
                            "origin": o,
                            "methods": m,
                        }
                        for rid, o, m in r.http
                    ],
                )
                for p, r in indexed
            ),
        ),
    )
    for model in dict.fromkeys(m for _, r in indexed for m in r.simple):
        bulk(model, numbered(model, ((p, r.simple.get(model, [])) for p, r in indexed)))
    commands = bulk(
        Command, numbered(Command, ((p, [c for c, _ in r.commands]) for p, r in indexed))
    )
    arguments = [args for _, r in indexed for _, args in r.commands]
    bulk(
        CommandArgument,
        [
            CommandArgument(command=command, position=i, **arg)
            for command, args in zip(commands, arguments, strict=True)
            for i, arg in enumerate(args)
        ],
    )
    settings_rows = bulk(
        Setting, numbered(Setting, ((p, [st for st, _ in r.settings]) for p, r in indexed))
    )
    options = [opts for _, r in indexed for _, opts in r.settings]
    bulk(
        SettingOption,
        [
            SettingOption(setting=setting, position=i, **opt)
            for setting, opts in zip(settings_rows, options, strict=True)
            for i, opt in enumerate(opts)
        ],
    )


# --- Sync -----------------------------------------------------------------------------------


@dataclass(frozen=True)
class PluginFolder:
    path: Path
    source: str  # Package.Source


@dataclass
class SyncSummary:
    indexed: list[str] = field(default_factory=list)
    unchanged: list[str] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)
    invalid: list[tuple[str, list[dict[str, str]]]] = field(default_factory=list)
    duplicates: list[tuple[str, str, str]] = field(
        default_factory=list
    )  # id, ignored dir, kept dir

    def line(self) -> str:
        return (
            f"indexed {len(self.indexed)}, unchanged {len(self.unchanged)}, "
            f"removed {len(self.removed)}, invalid {len(self.invalid)}"
        )


def plugin_folders() -> list[PluginFolder]:
    """The configured folders in precedence order: bundled, then user, then community."""
    folders = [
        PluginFolder(Path(settings.COVEL_BUNDLED_PLUGINS_DIR), Package.Source.BUNDLED),
        PluginFolder(Path(settings.COVEL_USER_PLUGINS_DIR), Package.Source.USER),
    ]
    folders += [
        PluginFolder(Path(p), Package.Source.COMMUNITY)
        for p in settings.COVEL_COMMUNITY_PLUGIN_DIRS
    ]
    return folders


def package_candidates(*, folders: list[PluginFolder]) -> list[tuple[Path, str]]:
    """Every package folder (a non-hidden sub-directory) of the configured folders, in order."""
    seen: set[Path] = set()
    found: list[tuple[Path, str]] = []
    for folder in folders:
        if not folder.path.is_dir():
            continue
        # scandir's entries know their type without a stat, and only a link needs resolving:
        # an unchanged sync of 10,000 packages walks here first.
        parent = folder.path.resolve()
        with os.scandir(folder.path) as entries:
            children = sorted(entries, key=lambda e: e.name)
        for entry in children:
            if (
                entry.name.startswith((".", "_"))
                or entry.name in _SKIPPED_NAMES
                or not entry.is_dir()
            ):
                continue
            child = Path(entry.path)
            resolved = child.resolve() if entry.is_symlink() else parent / entry.name
            if resolved in seen:  # the same folder configured twice
                continue
            seen.add(resolved)
            found.append((child.absolute(), folder.source))
    return found


def _load_package(path: Path, host_version: str, content_hash: str = "") -> LoadResult:
    from catalogue.manifest.loader import load_package

    return load_package(path, host_version=host_version, content_hash=content_hash)


def _load(path: Path, host_version: str, content_hash: str = "") -> LoadResult:
    try:
        return _load_package(path, host_version, content_hash)
    except Exception as exc:  # a loader bug on one package must not stop the others
        log.exception("the loader failed on %s", path)
        return LoadResult(
            path=str(path),
            package_id=path.name,
            manifest=None,
            errors=(Issue("PLUGIN.md", "", "loader-failure", f"the loader failed: {exc}"),),
            warnings=(),
        )


def _request_approval(package: Package, loaded: LoadResult | None = None) -> None:
    # approvals sits above the catalogue (it reads the catalogue's rows), so the sync reaches it
    # through the slot approvals registers (catalogue/callouts.py), never an import. Not caught:
    # it runs in the package's own transaction, so a failure (or a sync killed here) leaves the
    # previous row, never a changed package without its approval request. loaded: what the
    # loader read, so approvals reads no file again.
    callouts.approval_request_sync.get()(package=package, loaded=loaded)


def _request_approvals(packages: list[Package], loaded: dict[str, LoadResult]) -> None:
    # The same for a batch of new packages, set-based: a constant number of queries for the
    # batch, not a few for each package. loaded: package id -> what the loader read.
    callouts.approval_requests_sync.get()(packages=packages, loaded=loaded)


def _approval_scope_hashes() -> dict[str, str]:
    """package id -> the content hash approvals last saw (to repair an interrupted sync)."""
    return callouts.approval_seen_hashes.get()()


@contextmanager
def sync_lock() -> Iterator[None]:
    """One sync at a time on this host (the start-up sync, the staff button, a cron job):
    a second run waits, then finds everything unchanged instead of racing the first."""
    path = Path(settings.VAR_DIR) / "catalogue-sync.lock"
    with open(path, "a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


@contextmanager
def _without_cycle_collection() -> Iterator[None]:
    """Python's automatic cycle collection paused for the sync. A sync holds a row of every
    package it found (all of them in a sync of an indexed directory) and each full collection
    walks them all again: at 10,000 packages that was a tenth of a first sync's CPU, and grew
    faster than the count. Reference counting frees the rest; the sync collects each chunk's
    young cycles itself."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def packages_sync(
    *,
    folders: list[PluginFolder] | None = None,
    host_version: str | None = None,
    force: bool = False,
    progress: Callable[[int, int, str], None] | None = None,
) -> SyncSummary:
    """Index every package folder; unchanged ones (same content hash) are not parsed again.

    Precedence on a duplicate package id: the first folder wins in the order bundled, user,
    community (then by folder name), so community code can never shadow a trusted package.
    """
    with sync_lock(), _without_cycle_collection():
        return _packages_sync(
            folders=plugin_folders() if folders is None else folders,
            host_version=host_version or settings.COVEL_HOST_VERSION,
            force=force,
            progress=progress,
        )


# Candidates loaded, written and code-checked together. A first sync holds this many packages'
# loader verdicts at once, never the whole directory's: its memory stays flat whatever the
# count (a verdict is tens of KB; 100,000 of them were GBs). As many as one Node checker parses
# before it is replaced (pluginhost.codecheck.RECYCLE_AFTER), so a chunk costs no extra start.
SYNC_CHUNK = 500


@dataclass
class _SyncRun:
    """What a sync carries from one chunk to the next: a few small values a package."""

    host_version: str
    # source folder -> (row pk, package id) of every row as the sync began: the whole rows are
    # read a chunk at a time (`existing`), so a re-sync's memory does not grow with the catalogue.
    at_start: dict[str, tuple[int, str]]
    known_ids: set[str]  # the package ids of those rows
    scopes: dict[str, str]  # package id -> the content hash approvals last saw
    summary: SyncSummary = field(default_factory=SyncSummary)
    kept: set[int] = field(default_factory=set)  # rows a folder still claims
    claimed: dict[str, tuple[Path, str]] = field(default_factory=dict)  # id -> (folder, source)
    winners: dict[str, int] = field(default_factory=dict)  # id -> the row written or kept
    # id -> notes on the copies it shadows: as known so far, and as its row holds them
    shadowed: dict[str, list[dict[str, str]]] = field(default_factory=dict)
    noted: dict[str, list[dict[str, str]]] = field(default_factory=dict)
    existing: dict[str, Package] = field(default_factory=dict)  # the current chunk's rows


_Pending = tuple[str, Path, str, str, list[list[Any]], LoadResult | None, Package | None]


def _packages_sync(
    *,
    folders: list[PluginFolder],
    host_version: str,
    force: bool,
    progress: Callable[[int, int, str], None] | None,
) -> SyncSummary:
    candidates = package_candidates(folders=folders)
    at_start = {
        source_dir: (pk, package_id)
        for pk, package_id, source_dir in Package.objects.values_list(
            "pk", "package_id", "source_dir"
        )
    }
    run = _SyncRun(
        host_version=host_version,
        at_start=at_start,
        known_ids={package_id for _, package_id in at_start.values()},
        scopes=_approval_scope_hashes(),
    )
    rules = rules_version()
    for start in range(0, len(candidates), SYNC_CHUNK):
        chunk = candidates[start : start + SYNC_CHUNK]
        run.existing = _rows_of(run, chunk)
        # Passed straight on, never held here: the chunk's verdicts are gone before the next
        # chunk loads.
        _chunk_write(
            run,
            *_chunk_load(
                run,
                chunk,
                first=start + 1,
                total=len(candidates),
                force=force,
                rules=rules,
                progress=progress,
            ),
        )
        # The chunk's reference cycles (the loader's recursive helpers leave a few a package),
        # freed while they are young: this walks only what the chunk left, not every live row.
        gc.collect(0)

    # A copy found after its winner's row was written: the winner's notes, set now.
    for package_id in sorted(run.shadowed.keys() | run.noted.keys()):
        notes = run.shadowed.get(package_id, [])
        if package_id in run.winners and run.noted.get(package_id, []) != notes:
            Package.objects.filter(pk=run.winners[package_id]).update(shadowed=notes)

    summary = run.summary
    for package_id, ignored, kept_dir in summary.duplicates:
        summary.invalid.append(
            (
                package_id,
                [
                    {
                        "file": str(Path(ignored) / "PLUGIN.md"),
                        "path": "/id",
                        "code": "duplicate-package-id",
                        "message": f"{package_id} is already installed from {kept_dir}; this copy is ignored",
                    }
                ],
            )
        )

    # The rows no folder claimed, found in memory: a NOT IN over every kept row would pass one
    # parameter per package (PostgreSQL takes at most 65,535).
    gone = [(pk, package_id) for pk, package_id in at_start.values() if pk not in run.kept]
    summary.removed = sorted(package_id for _, package_id in gone)
    if summary.removed:
        try:
            with transaction.atomic():
                Package.objects.filter(pk__in=[pk for pk, _ in gone]).delete()
        except (ProtectedError, RestrictedError):  # another app still needs a removed row
            log.exception("could not remove %s", ", ".join(summary.removed))
            summary.removed = []
    return summary


def _rows_of(run: _SyncRun, chunk: list[tuple[Path, str]]) -> dict[str, Package]:
    """source folder -> the row it had as the sync began, for the chunk's folders: what telling
    an unchanged package needs (stats, hash, versions, state), and no more. Keyed by the folder
    the row had at the start, even if an earlier chunk has moved it since."""
    folder_of = {
        run.at_start[str(path)][0]: str(path) for path, _ in chunk if str(path) in run.at_start
    }
    if not folder_of:
        return {}
    return {
        folder_of[row.pk]: row
        for row in Package.objects.filter(pk__in=list(folder_of))
        .only(
            "id",
            "package_id",
            "source_dir",
            "source",
            "content_hash",
            "host_version",
            "rules_version",
            "state",
            "errors",
            "shadowed",
            "trust",
            "code_checked",
            "file_stats",
        )
        .annotate(
            # A row indexed before a column was added (body, readme NULL) lacks data its hash
            # cannot tell: treat it as changed, once.
            stale=ExpressionWrapper(
                Q(body__isnull=True) | Q(readme__isnull=True), output_field=BooleanField()
            )
        )
    }


def _chunk_load(
    run: _SyncRun,
    chunk: list[tuple[Path, str]],
    *,
    first: int,
    total: int,
    force: bool,
    rules: str,
    progress: Callable[[int, int, str], None] | None,
) -> tuple[list[_Pending], dict[int, list[list[Any]]]]:
    """Load the chunk's changed packages (an unchanged one is known by its stats or its hash)
    and apply precedence: a package id already claimed, here or in an earlier chunk, is a
    duplicate, noted on its winner."""
    pending: list[_Pending] = []
    stats_seen: dict[int, list[list[Any]]] = {}  # row pk -> fresh stats of an unchanged package
    for number, (path, source) in enumerate(chunk, start=first):
        if progress:
            progress(number, total, path.name)
        row = run.existing.get(str(path))
        known = (
            not force
            and row is not None
            and row.host_version == run.host_version
            and row.rules_version == rules
            and row.source == source
            and not row.stale
        )
        stats = package_stats(path)
        content_hash = ""
        if known and stats and stats == row.file_stats:
            unchanged = True  # every file's size and times as last seen: no byte is read
            content_hash = row.content_hash
        elif known:
            content_hash = package_content_hash(path=path)
            unchanged = row.content_hash == content_hash
            if unchanged and stats != row.file_stats:
                stats_seen[row.pk] = stats  # touched, not changed: only the stats are new
        else:
            unchanged = False
        result = None if unchanged else _load(path, run.host_version, content_hash)
        if result is not None:
            content_hash = result.content_hash or content_hash or package_content_hash(path=path)
        package_id = row.package_id if unchanged else package_id_of(result)
        if package_id in run.claimed:
            kept_dir, kept_source = run.claimed[package_id]
            run.summary.duplicates.append((package_id, str(path), str(kept_dir)))
            run.shadowed.setdefault(package_id, []).append(
                shadow_note(
                    package_id,
                    ignored=str(path),
                    ignored_source=source,
                    ignored_version=_declared_version(result),
                    kept_source=kept_source,
                )
            )
            continue
        run.claimed[package_id] = (path, source)
        pending.append(
            (package_id, path, source, content_hash, stats, result, row if unchanged else None)
        )
    return pending, stats_seen


def _chunk_write(
    run: _SyncRun, pending: list[_Pending], stats_seen: dict[int, list[list[Any]]]
) -> None:
    """Write the chunk's rows (new packages in batches), its approval requests, then its code
    checks; the summary gets its packages in folder order."""
    summary = run.summary
    checks: list[tuple[Package, Any]] = []  # (row, its Manifest or None) for the code check
    batched = _index_new_in_batches(
        [item for item in pending if item[6] is None and item[0] not in run.known_ids],
        host_version=run.host_version,
        shadowed=run.shadowed,
    )
    for package_id, path, source, content_hash, stats, result, row in pending:
        if row is not None:
            summary.unchanged.append(package_id)
            run.kept.add(row.pk)
            run.winners[package_id] = row.pk
            if row.shadowed:
                run.noted[package_id] = row.shadowed
            if row.pk in stats_seen:
                Package.objects.filter(pk=row.pk).update(file_stats=stats_seen[row.pk])
            if row.source != Package.Source.BUNDLED and run.scopes.get(package_id) != content_hash:
                # Indexed, but approvals never saw these files (a sync from before one package
                # transaction, or a crash): record what it asks for now rather than leave it
                # waiting for a review nobody was asked for.
                try:
                    with transaction.atomic():
                        _request_approval(Package.objects.get(pk=row.pk))
                except Exception:
                    log.exception("could not request approval for %s", package_id)
            if row.state == Package.State.LOADED:
                checks.append((row, None))  # the check skips a row whose verdict is current
            if row.state == Package.State.ERROR:
                summary.invalid.append((package_id, row.errors))
            continue
        package = batched.get(package_id)
        try:
            if package is None:  # not indexed with a batch of new packages
                package = _index_one(
                    result,
                    source=source,
                    content_hash=content_hash,
                    host_version=run.host_version,
                    shadowed=run.shadowed.get(package_id),
                    file_stats=stats,
                )
        except Exception as exc:  # one package's rows must never stop the others
            log.exception("could not index %s", path)
            previous = run.existing.get(str(path))
            if previous is not None:  # keep the last good card rather than drop the package
                run.kept.add(previous.pk)
            summary.invalid.append(
                (
                    package_id,
                    [
                        {
                            "file": "PLUGIN.md",
                            "path": "",
                            "code": "index-failure",
                            "message": str(exc),
                        }
                    ],
                )
            )
            continue
        run.kept.add(package.pk)
        run.winners[package_id] = package.pk
        if run.shadowed.get(package_id):  # a copy, not the list later copies are added to
            run.noted[package_id] = list(run.shadowed[package_id])
        summary.indexed.append(package_id)
        if package.state == Package.State.ERROR:
            summary.invalid.append((package_id, package.errors))
        checks.append((package, result.manifest if result is not None else None))

    _code_checks(checks)


def _index_one(result: LoadResult, **kwargs: Any) -> Package:
    # The package's rows and its approval request commit together or not at all.
    with transaction.atomic():
        package = package_index(result=result, **kwargs)
        if package.trust == Package.Trust.COMMUNITY:
            _request_approval(package, result)
    return package


# New packages indexed together: one INSERT per table for this many (a first sync of a large
# community directory), each batch with its approval requests in one transaction.
INDEX_BATCH = 250


def _index_new_in_batches(
    items: list[tuple[str, Path, str, str, list[list[Any]], Any, Any]],
    *,
    host_version: str,
    shadowed: dict[str, list[dict[str, str]]],
) -> dict[str, Package]:
    """package id -> its new row, for the packages a batch indexed. A batch that fails is
    rolled back whole and its packages are left to the one-at-a-time path, which tells which
    package failed and why."""
    indexed: dict[str, Package] = {}
    for start in range(0, len(items), INDEX_BATCH):
        batch = items[start : start + INDEX_BATCH]
        try:
            with transaction.atomic():
                packages = packages_index_new(
                    [
                        (
                            result,
                            {
                                "source": source,
                                "content_hash": content_hash,
                                "host_version": host_version,
                                "shadowed": shadowed.get(package_id),
                                "file_stats": stats,
                            },
                        )
                        for package_id, _, source, content_hash, stats, result, _ in batch
                    ]
                )
                community = [p for p in packages if p.trust == Package.Trust.COMMUNITY]
                if community:
                    _request_approvals(community, {item[0]: item[5] for item in batch})
        except Exception:
            log.exception("a batch of %d new packages failed; indexing them one by one", len(batch))
            continue
        indexed.update((p.package_id, p) for p in packages)
    return indexed


def _code_checks(checks: list[tuple[Package, Any]]) -> None:
    """Does each indexed package's code load? The plugin host sits above the catalogue, so the
    sync reaches its check through the slot pluginhost registers (catalogue/callouts.py)."""
    if checks:
        callouts.package_code_checks.get()(checks)


_SOURCE_WORDS = {
    Package.Source.BUNDLED: "bundled with the hub",
    Package.Source.USER: "in the user folder",
    Package.Source.COMMUNITY: "in a community folder",
}


def _declared_version(result: LoadResult | None) -> str:
    raw = result.raw if result is not None else None
    version = raw.get("version") if isinstance(raw, Mapping) else None
    return version if isinstance(version, str) else ""


def shadow_note(
    package_id: str, *, ignored: str, ignored_source: str, ignored_version: str, kept_source: str
) -> dict[str, str]:
    """Which copy of a duplicated id won and why, as the winner's card shows it.

    A user's copy of a package beside a bundled one of the same id is the case that matters:
    the player must see that their copy is not the one running, and why.
    """
    kept_words = _SOURCE_WORDS.get(kept_source, kept_source)
    ignored_words = _SOURCE_WORDS.get(ignored_source, ignored_source)
    if kept_source == ignored_source:
        reason = "community folders are read in their configured order and the first one wins"
    else:
        reason = (
            "bundled packages come first, then the user folder, then community folders, "
            "so community code never replaces a trusted package"
        )
    version = f" (version {ignored_version})" if ignored_version else ""
    return {
        "path": ignored,
        "source": ignored_source,
        "version": ignored_version,
        "winner": kept_source,
        "reason": reason,
        "message": (
            f"another copy of {package_id}{version} {ignored_words} is ignored: this copy, "
            f"{kept_words}, is the one used, because {reason}"
        ),
    }


def errors_as_text(errors: list[Mapping[str, str]]) -> list[str]:
    """The validate_plugin line format: file:path message [code]."""
    return [
        f"{e.get('file', '')}:{e.get('path', '')} {e.get('message', '')} [{e.get('code', '')}]"
        for e in errors
    ]


# --- One package at a time (the installs app) ------------------------------------------------


def package_sync_one(*, path: Path, source: str = Package.Source.COMMUNITY) -> Package:
    """Index one package folder now, as a full sync would (its approval request in the same
    transaction, then the code check), without walking the other folders. The caller checks
    that no other folder claims the id (a full sync's precedence rule)."""
    host_version = settings.COVEL_HOST_VERSION
    with sync_lock():
        stats = package_stats(path)  # before any read: a file changed meanwhile shows next time
        result = _load(path, host_version)
        with transaction.atomic():
            package = package_index(
                result=result,
                source=source,
                content_hash=result.content_hash or package_content_hash(path=path),
                host_version=host_version,
                file_stats=stats,
            )
            if package.trust == Package.Trust.COMMUNITY:
                _request_approval(package, result)
    _code_checks([(package, result.manifest)])
    return package


def package_remove(*, package_id: str) -> bool:
    """Drop a package's catalogue rows (its files are the caller's); approvals keep their
    journal (their rows point at the package with SET_NULL)."""
    deleted, _ = Package.objects.filter(package_id=package_id).delete()
    return bool(deleted)
