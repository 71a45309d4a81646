"""Which copy of a community package the host runs (approvals/store.py keeps the copies).

Above the store: deciding needs the approvals (selectors) and, when the folder changed since
its approval, a new request (services); the store itself only writes and verifies files.
"""

from __future__ import annotations

import logging
import os
import threading
import time
from pathlib import Path
from typing import Any

from django.conf import settings
from django.db import transaction

from approvals.selectors import approval_in_force, approval_standing, package_permission_set
from approvals.services import approval_request_sync
from approvals.store import (
    CodeCopyFailed,
    CodeNotRunnable,
    approved_copy,
    code_digest,
    code_pairs,
    is_community_folder,
    snapshot_hash,
    store_root,
    version_snapshot,
    version_snapshot_dir,
)
from catalogue.manifest.package_files import package_inventory

# The store's logger: what it logs is about the copies it keeps.
log = logging.getLogger("approvals.store")

# Each package folder's code (path, sha256) pairs, by folder, while its files' stats hold.
_DISK_CODE: dict[str, tuple[Any, list[tuple[str, str | None]]]] = {}
_LOCK = threading.Lock()


def disk_code(package: Any) -> list[tuple[str, str | None]]:
    """The (path, sha256) pairs the package's folder holds now; rehashed only when a file's
    name, size, time or inode changed (a stat walk, not a read, per check)."""

    key = str(Path(package.source_dir).resolve())
    signature = (package.content_hash, package_inventory(key).signature())
    with _LOCK:
        cached = _DISK_CODE.get(key)
    if cached is not None and cached[0] == signature:
        return cached[1]
    pairs = code_pairs(package_permission_set(package=package)["code"])
    with _LOCK:
        _DISK_CODE[key] = (signature, pairs)
    return pairs


def package_code_root(*, package_id: str, source_dir: str | os.PathLike[str]) -> str:
    """The folder the JS host loads a package from.

    Bundled packages and folders outside the configured plugin folders (an author's checkout
    given to plugin_extract, a test's tmp folder) run where they are. A community package runs
    only from the store copy of its approved file set; raises CodeNotRunnable with
    plugin_not_installed, plugin_not_approved or plugin_code_changed otherwise.
    """
    kept = snapshot_hash(source_dir)
    if kept is not None:  # the snapshot of an approved version: its own approved code
        return str(_version_root(package_id, kept, Path(source_dir)))
    source = Path(source_dir).resolve()
    if not is_community_folder(source_dir) and not _linked_into_plugin_folder(source):
        return str(source)
    return str(_community_root(package_id, source, resync=True))


def _version_root(package_id: str, content_hash: str, snapshot: Path) -> Path:
    """The code copy of the approved version whose snapshot a session resolved (sessions keep
    it while a newer version waits); refused once that approval no longer stands."""

    request = approval_standing(package_key=package_id, content_hash=content_hash)
    if request is None:
        raise CodeNotRunnable(
            f"package {package_id}: the version sessions kept running is no longer approved",
            code="plugin_not_approved",
        )
    root = _approved_root(request, snapshot)
    if root is None:
        raise CodeNotRunnable(
            f"package {package_id}: the approved copy of request #{request.pk} cannot be made",
            code="plugin_code_changed",
            details={"approvedRequest": request.pk},
        )
    return root


def _approved_root(request: Any, source: Path | None) -> Path | None:
    """The store copy of an approved request's code: the copy of the staff approval it was
    carried over from, else its own (written from source, verified, when missing)."""
    code = request.permissions.get("code") or []
    kept = _staff_approved_copy(request)
    if kept is not None:
        return kept
    own = store_root() / code_digest(code)
    if own.is_dir():
        return own
    if source is None:
        return None
    try:
        return approved_copy(source_dir=source, code=code)
    except CodeCopyFailed:
        return None


def _in_force_root(package_id: str) -> Path | None:
    """While the current version waits for staff, the code copy of the approval that stands
    (written from that version's snapshot when missing); None when there is none."""

    request = approval_in_force(package_key=package_id)
    if request is None:
        return None
    snapshot = version_snapshot_dir(package_id=package_id, content_hash=request.content_hash)
    return _approved_root(request, snapshot)


def _linked_into_plugin_folder(source: Path, depth: int = 3) -> bool:
    """A symlink inside a user or community plugin folder (down to `depth` levels) leads to
    source or to a folder holding it: the loader hands over the resolved path of a linked
    package folder, which lies outside every plugin folder, but the package was found inside
    one. A walk of the folders' entries, no file read and no database query."""
    folders = [
        Path(settings.COVEL_USER_PLUGINS_DIR),
        *map(Path, settings.COVEL_COMMUNITY_PLUGIN_DIRS),
    ]
    level = [f.expanduser() for f in folders]
    for _ in range(depth):
        following = []
        for folder in level:
            try:
                entries = list(os.scandir(folder))
            except OSError:
                continue
            for entry in entries:
                try:
                    if entry.is_symlink():
                        target = Path(entry.path).resolve()
                        if target == source or target in source.parents:
                            return True
                    elif entry.is_dir():
                        following.append(Path(entry.path))
                except OSError:
                    continue
        level = following
    return False


def _community_root(package_id: str, source: Path, *, resync: bool) -> Path:
    from approvals.models import ApprovalRequest, PermissionScope
    from catalogue.models import Package

    package = Package.objects.filter(package_id=package_id).first()
    if package is None or Path(package.source_dir).resolve() != source:
        raise CodeNotRunnable(
            f"package {package_id} at {source} is not installed (run sync_packages)",
            code="plugin_not_installed",
        )
    if package.trust == Package.Trust.BUNDLED:
        return source
    if package.state != Package.State.LOADED:
        raise CodeNotRunnable(
            f"package {package_id} failed to load; see its errors in the catalogue",
            code="plugin_not_installed",
        )
    scope = PermissionScope.objects.select_related("request").filter(package_key=package_id).first()
    request = scope.request if scope is not None else None
    current = disk_code(package)
    if not current and (request is None or request.state != ApprovalRequest.State.APPROVED):
        return approved_copy(source_dir=source, code=[])  # no code to run: an empty folder
    if request is None:
        raise CodeNotRunnable(
            f"package {package_id} waits for a staff review of its server code",
            code="plugin_not_approved",
        )
    if request.state != ApprovalRequest.State.APPROVED:
        kept = _in_force_root(package_id)
        if kept is not None:  # sessions go on with the last approval while staff decide
            return kept
        raise CodeNotRunnable(
            f"package {package_id}@{request.version} may not run: its request #{request.pk} is "
            f"{request.state}; a staff member must approve it first",
            code="plugin_not_approved",
        )
    approved = code_pairs(request.permissions.get("code") or [])
    if current == approved:
        if request.content_hash == package.content_hash:
            # Keep this version whole while the folder holds it (at once when approved; here
            # for approvals made before, or a copy deleted): sessions run it after an edit.
            version_snapshot(
                package_id=package_id, content_hash=request.content_hash, source_dir=source
            )
        kept = _staff_approved_copy(request)
        if kept is not None:
            return kept
        try:
            return approved_copy(source_dir=source, code=request.permissions.get("code") or [])
        except CodeCopyFailed as exc:
            changed = [exc.path]  # edited between the check and the copy
    else:
        changed = sorted({p for p, _ in set(current) ^ set(approved)})
    if resync and _mark_changed(package):
        try:  # the change may be carried over (a narrower set): then it runs
            return _community_root(package_id, source, resync=False)
        except CodeNotRunnable:
            pass
    shown = ", ".join(changed[:5]) + (f" and {len(changed) - 5} more" if len(changed) > 5 else "")
    raise CodeNotRunnable(
        f"package {package_id} changed on disk since staff approved request #{request.pk} "
        f"({shown}); it does not run until a staff member approves the new files",
        code="plugin_code_changed",
        details={"changed": changed, "approvedRequest": request.pk},
    )


def _staff_approved_copy(request: Any) -> Path | None:
    """For a request carried over without staff (the same or a narrower set, say files
    deleted), the existing copy of the approval staff gave it: a narrower set needs no copy of
    its own, so copies are written only for what staff approved (one per approval, not one per
    subset). None when the request was staff's own or that copy is gone."""
    baseline = request
    for _ in range(50):  # a chain of carried-over requests, each on the one before
        if baseline is None or baseline.decided_by_id is not None or baseline.baseline_id is None:
            break
        baseline = baseline.baseline
    if baseline is None or baseline is request:
        return None
    folder = store_root() / code_digest(baseline.permissions.get("code") or [])
    return folder if folder.is_dir() else None


def _mark_changed(package: Any) -> bool:
    """Record the change for this one package (a new pending request in the staff queue, or a
    carried-over one for a narrower set), without the full packages_sync() a player's request
    used to run. Best effort: the refusal never depends on it, and the next load checks again."""

    started = time.monotonic()
    try:
        with transaction.atomic():
            approval_request_sync(package=package)
    except Exception:
        log.exception("could not record a change to approved code of %s", package.package_id)
        return False
    log.warning(
        "approved code of %s changed on disk; recorded in %.3f s",
        package.package_id,
        time.monotonic() - started,
    )
    return True
