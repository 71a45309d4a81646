"""Installing, updating and removing packages: every write of the installs room.

The flow (docs/install.md): files arrive (ZIP or git), archive.py checks them, bundle.py writes
them to a staging folder inside the installed-packages folder and judges them with the loader,
then one rename puts the folder in place and one transaction indexes it in the catalogue (with
its approval request) and records where it came from. A failure anywhere before the commit
removes the new folder and puts back the old one; a process killed in between leaves a marker
that `installs_recover` finishes from (the next install, the beat task, or a command).
"""

from __future__ import annotations

import fcntl
import json
import logging
import os
import shutil
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from catalogue.models import Package
from catalogue.selectors import package_get
from catalogue.services import package_remove, package_sync_one
from core.errors import ApiError
from installs import gitsource, tokens
from installs.archive import RECEIPT_FILE, ArchiveRefused, Entry, read_zip
from installs.bundle import BundleRefused, Inspection, inspect_entries, receipt_bytes
from installs.models import Installation

log = logging.getLogger(__name__)
STAGING_PREFIX = ".covel-install-"
BACKUP_PREFIX = ".covel-backup-"
MARKER_PREFIX = ".covel-pending-"

Progress = Callable[[str, int], None]


class InstallProblem(ApiError):
    """A refusal of the install API; `step` says where it happened."""

    status = 400
    code = "install_refused"


def _problem(exc: Exception, step: str = "") -> InstallProblem:
    if isinstance(exc, InstallProblem):
        return exc
    status = getattr(exc, "status", 400)
    code = getattr(exc, "code", "install_refused")
    message = getattr(exc, "message", str(exc))
    details: dict[str, Any] = {"step": step} if step else {}
    if getattr(exc, "entry", ""):
        details["entry"] = exc.entry  # type: ignore[attr-defined]
    if getattr(exc, "issues", None):
        details["issues"] = exc.issues  # type: ignore[attr-defined]
    return InstallProblem(message, status=status, code=code.replace("-", "_"), details=details)


REFUSALS = (ArchiveRefused, BundleRefused, gitsource.SourceError, tokens.TokenRefused)


def installed_root() -> Path:
    root = Path(settings.COVEL_INSTALLED_PLUGINS_DIR)
    root.mkdir(parents=True, exist_ok=True)
    return root


def reserved_ids() -> set[str]:
    """Ids of the bundled packages: an install may never take one (Covel: 409)."""
    bundled = Path(settings.COVEL_BUNDLED_PLUGINS_DIR)
    ids = {p.name for p in bundled.iterdir() if p.is_dir()} if bundled.is_dir() else set()
    ids |= set(
        Package.objects.filter(source=Package.Source.BUNDLED).values_list("package_id", flat=True)
    )
    return ids


@contextmanager
def package_mutation(package_id: str) -> Iterator[None]:
    """One install, update or uninstall of a package at a time on this host (else 409)."""
    folder = Path(settings.VAR_DIR) / "installs-locks"
    folder.mkdir(parents=True, exist_ok=True)
    with open(folder / f"{package_id}.lock", "a") as handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise InstallProblem(
                f"another operation is changing {package_id}; try again",
                status=409,
                code="busy",
            ) from None
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def _staging() -> Path:
    return Path(
        os.path.join(installed_root(), f"{STAGING_PREFIX}{os.getpid()}-{uuid.uuid4().hex[:8]}")
    )


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def installs_recover() -> list[str]:
    """Finish or undo what a killed process left: staging folders of dead processes go, and a
    package whose swap never committed gets its previous folder back (or none)."""
    root = installed_root()
    done: list[str] = []
    # A collection's worlds stage the same way in their own folder (installs/worlds.py); a world
    # needs no marker: a folder renamed into place is a whole world, indexed by the next sync.
    worlds = Path(settings.COVEL_INSTALLED_WORLDS_DIR)
    for child in worlds.iterdir() if worlds.is_dir() else ():
        pid = child.name[len(STAGING_PREFIX) :].split("-", 1)[0]
        if child.name.startswith(STAGING_PREFIX) and pid.isdigit() and not _pid_alive(int(pid)):
            shutil.rmtree(child, ignore_errors=True)
            done.append(f"removed worlds/{child.name}")
    for child in root.iterdir():
        name = child.name
        if name.startswith(STAGING_PREFIX):
            pid = name[len(STAGING_PREFIX) :].split("-", 1)[0]
            if pid.isdigit() and not _pid_alive(int(pid)):
                shutil.rmtree(child, ignore_errors=True)
                done.append(f"removed {name}")
        elif name.startswith(MARKER_PREFIX):
            marker = json.loads(child.read_text() or "{}")
            pid = int(marker.get("pid", 0))
            # A live process (this one too: another thread of a web process) is still at it.
            if pid and _pid_alive(pid):
                continue
            package_id, backup = marker.get("id", ""), marker.get("backup")
            row = Installation.objects.filter(package_id=package_id).first()
            committed = row is not None and row.digest == marker.get("digest")
            final = root / package_id
            if not committed:
                shutil.rmtree(final, ignore_errors=True)
                if backup and (root / backup).is_dir():
                    os.rename(root / backup, final)
                done.append(f"undid {package_id}")
            elif backup:
                shutil.rmtree(root / backup, ignore_errors=True)
            child.unlink(missing_ok=True)
    return done


def _check_free(package_id: str, *, updating: bool) -> None:
    row = Package.objects.filter(package_id=package_id).only("source", "source_dir").first()
    managed = Installation.objects.filter(package_id=package_id).exists()
    if updating:
        if not managed:
            raise InstallProblem(
                f"{package_id} was not installed by the hub", status=409, code="not_installed"
            )
        return
    if managed or (installed_root() / package_id).exists():
        raise InstallProblem(
            f"{package_id} is already installed; update or uninstall it instead (nothing changed)",
            status=409,
            code="already_installed",
        )
    if row is not None:
        raise InstallProblem(
            f"a package {package_id} is already in the catalogue ({row.get_source_display()}); "
            "nothing changed",
            status=409,
            code="already_installed",
        )


def _prepare(entries: list[Entry], staging: Path) -> Inspection:
    return inspect_entries(
        entries, into=staging, reserved=reserved_ids(), host_version=settings.COVEL_HOST_VERSION
    )


def _place(
    inspection: Inspection,
    *,
    kind: str,
    source: dict[str, Any],
    actor: Any,
    updating: bool,
    progress: Progress | None = None,
) -> Package:
    """Rename the checked folder into place and commit its rows, or leave everything as it was."""
    root = installed_root()
    package_id = inspection.id
    receipt = {
        "source": source,
        "version": inspection.version,
        "installedAt": timezone.now().isoformat(),
    }
    (inspection.folder / RECEIPT_FILE).write_bytes(receipt_bytes(receipt))
    final = root / package_id
    backup = f"{BACKUP_PREFIX}{package_id}-{uuid.uuid4().hex[:8]}" if updating else None
    marker = root / f"{MARKER_PREFIX}{package_id}"
    marker.write_text(
        json.dumps(
            {"id": package_id, "backup": backup, "digest": inspection.digest, "pid": os.getpid()}
        )
    )
    if progress:
        progress("write", 80)
    try:
        if backup and final.exists():
            os.rename(final, root / backup)
        os.rename(inspection.folder, final)
        if progress:
            progress("index", 90)
        with transaction.atomic():
            package = package_sync_one(path=final)
            Installation.objects.update_or_create(
                package_id=package_id,
                defaults={
                    "kind": kind,
                    "version": inspection.version,
                    "source": source,
                    "digest": inspection.digest,
                    "installed_by": actor if getattr(actor, "pk", None) else None,
                    "installed_by_name": getattr(actor, "username", "") or "",
                    "installed_at": timezone.now(),
                    "pending_update": None,
                },
            )
    except BaseException:
        shutil.rmtree(final, ignore_errors=True)
        if backup and (root / backup).is_dir():
            os.rename(root / backup, final)
            try:
                package_sync_one(path=final)  # the previous version's rows again
            except Exception:
                log.exception("could not re-index %s after a failed update", package_id)
        marker.unlink(missing_ok=True)
        raise
    if backup:
        shutil.rmtree(root / backup, ignore_errors=True)
    marker.unlink(missing_ok=True)
    return package


def install_entries(
    entries: list[Entry],
    *,
    kind: str,
    source: dict[str, Any],
    actor: Any,
    updating: bool = False,
    expect: dict[str, str] | None = None,
    progress: Progress | None = None,
) -> tuple[Inspection, Package]:
    """Check, stage and place one package's files (the one path every install takes)."""
    installs_recover()
    staging = _staging()
    staging.mkdir()
    try:
        if progress:
            progress("validate", 60)
        try:
            inspection = _prepare(entries, staging)
        except REFUSALS as exc:
            raise _problem(exc, "validate") from exc
        if expect is not None:
            if inspection.id != expect.get("id"):
                raise InstallProblem(
                    "the package's identity changed; preview again",
                    status=409,
                    code="identity_changed",
                )
            if inspection.digest != expect.get("digest"):
                raise InstallProblem(
                    "the package's files changed; preview again", status=409, code="content_changed"
                )
        with package_mutation(inspection.id):
            _check_free(inspection.id, updating=updating)
            package = _place(
                inspection,
                kind=kind,
                source=source,
                actor=actor,
                updating=updating,
                progress=progress,
            )
        return inspection, package
    finally:
        shutil.rmtree(staging, ignore_errors=True)


# --- ZIP ------------------------------------------------------------------------------------


def zip_install(
    *, data: bytes, filename: str, actor: Any, progress: Progress | None = None
) -> dict[str, Any]:
    """POST /api/install/plugin: one package at the top of a ZIP."""
    if progress:
        progress("unpack", 30)
    try:
        entries = read_zip(data)
    except ArchiveRefused as exc:
        raise _problem(exc, "unpack") from exc
    from installs.archive import digest

    source = {"kind": "zip", "filename": filename[:200], "digest": digest(entries)}
    inspection, _ = install_entries(
        entries, kind=Installation.Kind.ZIP, source=source, actor=actor, progress=progress
    )
    return {"ok": True, "kind": "plugin", "id": inspection.id, "restartRequired": False}


# --- Uninstall ------------------------------------------------------------------------------


def sessions_using(package_id: str) -> list[str]:
    """Active sessions whose resolved packages include this one (their ids)."""
    from sessions.models import Session

    rows = Session.objects.filter(status=Session.Status.ACTIVE).values_list(
        "id", "resolved_plugins"
    )
    return [str(pk) for pk, resolved in rows if package_id in (resolved or [])]


def _detach(package_id: str, session_ids: list[str]) -> None:
    from sessions.models import Session

    for session in Session.objects.filter(pk__in=session_ids).select_for_update():
        session.resolved_plugins = [p for p in session.resolved_plugins or [] if p != package_id]
        session.requested_plugins = [p for p in session.requested_plugins or [] if p != package_id]
        session.save(update_fields=["resolved_plugins", "requested_plugins", "updated_at"])


def uninstall(*, package_id: str, detach: bool = False) -> dict[str, Any]:
    """Remove an installed package's files and catalogue rows; the approval journal stays."""
    row = Installation.objects.filter(package_id=package_id).first()
    if row is None:
        if package_get(package_id=package_id) is not None:
            raise InstallProblem(
                f"{package_id} was not installed by the hub (its folder is managed by hand)",
                status=409,
                code="not_installed",
            )
        raise InstallProblem(f"no installed package {package_id}", status=404, code="not_found")
    with package_mutation(package_id):
        using = sessions_using(package_id)
        if using and not detach:
            raise InstallProblem(
                f"{len(using)} active session(s) use {package_id}; confirm detaching it from them",
                status=409,
                code="in_use",
                details={"sessions": using},
            )
        root = installed_root()
        final = root / package_id
        trash = root / f"{STAGING_PREFIX}{os.getpid()}-rm-{uuid.uuid4().hex[:8]}"
        if final.exists():
            os.rename(final, trash)  # out of the catalogue's sight at once
        try:
            with transaction.atomic():
                if using:
                    _detach(package_id, using)
                package_remove(package_id=package_id)
                row.delete()
        except BaseException:
            if trash.exists():
                os.rename(trash, final)
            raise
        shutil.rmtree(trash, ignore_errors=True)
    return {"ok": True, "id": package_id, "detached": using, "restartRequired": False}
