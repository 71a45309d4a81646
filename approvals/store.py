"""Approved code is pinned: the host runs a community package from a verified copy of the files
staff approved, never from the package folder.

    var/approved/<sha256 of the approved file set>/<the approved files, and nothing else>

A copy is written once (into a temporary folder that is renamed into place, so a half-written
copy is never used), each file streamed and hashed while it is copied; a byte that differs from
the approved hash aborts the copy. The folder is named by the set, so it never changes: an edit
on disk cannot reach the host. Which copy runs is decided above the store
(approvals/code_roots.py), which also compares the folder's files with the approval on every
(re)load: a changed file makes the package pending again (a new request for that package alone)
and, while staff have not decided on it, the host keeps loading the copy of the last approval
that still stands.

    var/approved-versions/<content hash of the approved version>/<package id>/

Sessions need more than the code of that version: its PLUGIN.md, runtimes, locales and UI specs
say what the code registers and how the hub reads it. So each approved version is also kept
whole, read-only, as it was when approved (every regular file, verified against the version's
content hash); sessions resolve the package from that snapshot while a newer version waits.
"""

from __future__ import annotations

import hashlib
import logging
import os
import shutil
import stat
import tempfile
import threading
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from django.conf import settings

from catalogue.manifest.package_files import FileRefused, package_inventory, read_chunks

log = logging.getLogger(__name__)

STORE_FOLDER = "approved"
VERSIONS_FOLDER = "approved-versions"
# A snapshot that could not be made (the folder no longer matches the version): when it was
# tried, so a load every 2 s does not re-hash the package each time.
_SNAPSHOT_TRIED: dict[tuple[str, str, str], float] = {}
SNAPSHOT_RETRY_SECONDS = 60.0
_LOCK = threading.Lock()


def store_root() -> Path:
    return Path(settings.VAR_DIR) / STORE_FOLDER


def versions_root() -> Path:
    return Path(settings.VAR_DIR) / VERSIONS_FOLDER


def snapshot_hash(path: str | os.PathLike[str]) -> str | None:
    """The content hash of the approved-version snapshot at path (a folder
    var/approved-versions/<hash>/<package id>), or None for any other folder."""
    folder = Path(os.path.abspath(path))
    root = Path(os.path.abspath(versions_root()))
    if folder.parent.parent != root or folder.parent.name.startswith("."):
        return None
    return folder.parent.name


def version_snapshot_dir(*, package_id: str, content_hash: str) -> Path | None:
    """The snapshot of one approved version, or None when it was never made (or pruned)."""
    folder = versions_root() / content_hash / package_id
    return folder if content_hash and folder.is_dir() else None


def version_snapshot(
    *, package_id: str, content_hash: str, source_dir: str | os.PathLike[str]
) -> Path | None:
    """Keep the approved version of a package whole: every regular file of source_dir copied
    into var/approved-versions/<content_hash>/<package id>/, if the copy's content hash is the
    approved one (the folder may have changed since). None when it does not match: then the
    version is not kept, and a change waiting for staff makes the package wait too."""
    from catalogue.manifest.loader import package_hash

    found = version_snapshot_dir(package_id=package_id, content_hash=content_hash)
    if found is not None or not content_hash:
        return found
    root = versions_root()
    attempt = (str(root), package_id, content_hash)
    tried = _SNAPSHOT_TRIED.get(attempt)
    if tried is not None and time.monotonic() - tried < SNAPSHOT_RETRY_SECONDS:
        return None
    root.mkdir(parents=True, exist_ok=True)
    temporary = Path(tempfile.mkdtemp(prefix=".incoming-", dir=root))
    try:
        folder = temporary / package_id
        folder.mkdir()
        inventory = package_inventory(source_dir)
        for item in inventory.files:
            target = folder.joinpath(*item.relative.split("/"))
            target.parent.mkdir(parents=True, exist_ok=True)
            with open(target, "wb") as out:
                for chunk in read_chunks(item.real):
                    out.write(chunk)
        if inventory.issues or package_hash(folder) != content_hash:
            log.warning(
                "version %s of %s is not kept: its folder no longer holds the approved files",
                content_hash[:12],
                package_id,
            )
            _SNAPSHOT_TRIED[attempt] = time.monotonic()
            shutil.rmtree(temporary, ignore_errors=True)
            return None
        _read_only(temporary)
        # Named by the version's hash, then by the id (two packages may hold the same files).
        (root / content_hash).mkdir(exist_ok=True)
        try:
            os.rename(folder, root / content_hash / package_id)
        except OSError:
            if version_snapshot_dir(package_id=package_id, content_hash=content_hash) is None:
                raise  # not another worker that got there first
        _remove(temporary)
    except (FileRefused, OSError) as exc:
        log.warning("version %s of %s is not kept: %s", content_hash[:12], package_id, exc)
        _SNAPSHOT_TRIED[attempt] = time.monotonic()
        _remove(temporary)
        return None
    except BaseException:
        _remove(temporary)
        raise
    return version_snapshot_dir(package_id=package_id, content_hash=content_hash)


def keep_approved_version(request: Any, *, source_dir: str | os.PathLike[str]) -> None:
    """After an approval (a staff one or a carry-over): keep that version whole, and for a staff
    approval its code copy too, while the folder still holds exactly those files, so sessions can
    go on running it after the folder changes. Best effort: a later load tries again."""
    try:
        version_snapshot(
            package_id=request.package_key,
            content_hash=request.content_hash,
            source_dir=source_dir,
        )
        code = request.permissions.get("code") or []
        if request.decided_by_id is not None and code:
            approved_copy(source_dir=source_dir, code=code)
    except CodeCopyFailed as exc:
        log.warning("no copy of %s's approved code: %s", request.package_key, exc)
    except Exception:
        log.exception("could not keep the approved version of %s", request.package_key)


def _read_only(folder: Path) -> None:
    for path, _dirs, names in os.walk(folder):
        for name in names:
            os.chmod(os.path.join(path, name), stat.S_IRUSR | stat.S_IRGRP)


def _remove(folder: Path) -> None:
    for path, dirs, _names in os.walk(folder):
        for name in dirs:
            os.chmod(os.path.join(path, name), stat.S_IRWXU)
    shutil.rmtree(folder, ignore_errors=True)


def code_pairs(code: Sequence[Mapping[str, Any]]) -> list[tuple[str, str | None]]:
    return sorted((str(item["path"]), item.get("sha256")) for item in code)


def code_digest(code: Sequence[Mapping[str, Any]]) -> str:
    """sha256 of the approved file set: each file's path and sha256, sorted (roles do not count)."""
    text = "".join(f"{sha}  {path}\n" for path, sha in code_pairs(code))
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


class CodeNotRunnable(Exception):
    """This package's code may not run now; `code` is the host error code the caller reports
    (plugin_not_installed, plugin_not_approved, plugin_code_changed). Its own type, because the
    plugin host imports approvals, never the other way."""

    def __init__(self, message: str, *, code: str, details: Any = None) -> None:
        super().__init__(message)
        self.code = code
        self.details = details


class CodeCopyFailed(Exception):
    """A file on disk no longer has the approved bytes (or cannot be read as a regular file)."""

    def __init__(self, path: str, message: str) -> None:
        super().__init__(message)
        self.path = path


def approved_copy(*, source_dir: str | os.PathLike[str], code: Sequence[Mapping[str, Any]]) -> Path:
    """The store folder of this approved set, written now from source_dir if it is missing."""
    final = store_root() / code_digest(code)
    if final.is_dir():
        return final
    store_root().mkdir(parents=True, exist_ok=True)
    source = Path(source_dir).resolve()
    temporary = Path(tempfile.mkdtemp(prefix=".incoming-", dir=store_root()))
    try:
        for path, sha in code_pairs(code):
            _copy_verified(source, path, sha, temporary)
        for folder, _dirs, names in os.walk(temporary):
            for name in names:
                os.chmod(os.path.join(folder, name), stat.S_IRUSR | stat.S_IRGRP)
        try:
            os.rename(temporary, final)
        except OSError:
            if not final.is_dir():  # not another worker that got there first
                raise
            shutil.rmtree(temporary, ignore_errors=True)
    except BaseException:
        shutil.rmtree(temporary, ignore_errors=True)
        raise
    try:  # a new copy is the moment older ones may have lost their last approval
        approved_copies_prune()
    except Exception:
        log.exception("could not prune approved copies")
    return final


def _copy_verified(source: Path, relative: str, sha: str | None, into: Path) -> None:
    parts = relative.split("/")
    if sha is None or not relative or relative.startswith("/") or ".." in parts:
        raise CodeCopyFailed(relative, f"{relative} is missing or outside the package")
    real = (source / relative).resolve()
    if real != source and source not in real.parents:
        raise CodeCopyFailed(relative, f"{relative} leads outside the package")
    target = into.joinpath(*parts)
    target.parent.mkdir(parents=True, exist_ok=True)
    digest = hashlib.sha256()
    try:
        with open(target, "wb") as out:
            for chunk in read_chunks(real):
                digest.update(chunk)
                out.write(chunk)
    except (FileRefused, OSError) as exc:
        raise CodeCopyFailed(relative, f"{relative} cannot be copied: {exc}") from None
    if digest.hexdigest() != sha:
        raise CodeCopyFailed(relative, f"{relative} changed since it was approved")


# ------------------------------------------------------------------ which folder the host gets


def _inside(path: Path, folder: Path) -> bool:
    try:
        path.relative_to(folder.expanduser().resolve())
    except (ValueError, OSError):
        return False
    return True


def _lexically_inside(path: Path, folder: Path) -> bool:
    folder = folder.expanduser()
    return any(
        path == f or f in path.parents for f in (Path(os.path.abspath(folder)), folder.resolve())
    )


def is_community_folder(path: str | os.PathLike[str]) -> bool:
    """True for a folder in the user or a community plugin folder (the catalogue's rule: every
    source but the bundled folder is community code, which needs approval).

    Where the folder is, not where a symlink leads, decides: a package folder that is a link
    inside a plugin folder (an author's checkout under ~/.covel/plugins) is community code even
    though its target lies outside every configured folder, so it too runs only from its copy."""
    lexical = Path(os.path.abspath(path))
    resolved = Path(path).resolve()
    folders = [
        Path(settings.COVEL_USER_PLUGINS_DIR),
        *map(Path, settings.COVEL_COMMUNITY_PLUGIN_DIRS),
    ]
    if any(_lexically_inside(lexical, folder) for folder in folders):
        return True
    if _inside(resolved, Path(settings.COVEL_BUNDLED_PLUGINS_DIR)):
        return False
    return any(_inside(resolved, folder) for folder in folders)


def approved_copies_prune(*, older_than: float = 3600.0) -> list[str]:
    """Remove store copies no current approval refers to (and abandoned .incoming- folders),
    when older than older_than seconds, so a host still running from one is left alone for a
    while. The copies kept: each package's latest staff approval and its latest approval; the
    version snapshots kept: each package's latest approval. Returns the names removed (a
    snapshot as approved-versions/<hash>)."""
    from approvals.models import ApprovalRequest

    keep: set[str] = set()
    versions: set[str] = set()
    latest: dict[str, Any] = {}
    staff: dict[str, Any] = {}
    approved = ApprovalRequest.objects.filter(state=ApprovalRequest.State.APPROVED).order_by("id")
    for request in approved.only(
        "id", "package_key", "permissions", "decided_by_id", "content_hash"
    ):
        latest[request.package_key] = request
        if request.decided_by_id is not None:
            staff[request.package_key] = request
    for request in [*latest.values(), *staff.values()]:
        keep.add(code_digest(request.permissions.get("code") or []))
    # The snapshot sessions may fall back on is the newest approval's (approval_in_force).
    versions.update(request.content_hash for request in latest.values())
    removed = _prune(store_root(), keep, older_than)
    removed += [
        f"{VERSIONS_FOLDER}/{name}" for name in _prune(versions_root(), versions, older_than)
    ]
    return removed


def _prune(root: Path, keep: set[str], older_than: float) -> list[str]:
    if not root.is_dir():
        return []
    now = time.time()
    removed = []
    for entry in root.iterdir():
        if entry.name in keep or not entry.is_dir():
            continue
        try:
            age = now - entry.stat().st_mtime
        except OSError:
            continue
        if age < older_than:
            continue
        _remove(entry)
        removed.append(entry.name)
    return removed
