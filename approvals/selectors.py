"""Reads of the approvals app: is a package usable, what do staff see."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from django.conf import settings
from django.db.models import OuterRef, QuerySet, Subquery

from approvals.models import ApprovalRequest, JournalEntry, PermissionScope
from approvals.permissions import describe, diff, is_empty, permission_set_of
from approvals.store import snapshot_hash, version_snapshot_dir
from catalogue.manifest.loader import load_package
from catalogue.manifest.types import LoadResult
from catalogue.models import Package
from core.memo import per_scope

State = ApprovalRequest.State


@dataclass(frozen=True)
class Usability:
    usable: bool
    reason: str  # one sentence a person can act on; "" when usable
    state: str  # bundled | not-required | approved | pending | denied | revoked | unreviewed | missing | error


def package_permission_set(*, package: Package, loaded: LoadResult | None = None) -> dict[str, Any]:
    """The permission set of a package row: from what the sync's loader read (loaded), else
    from its folder as it is on disk now, read once by the loader."""
    if loaded is None:
        loaded = load_package(package.source_dir, host_version=settings.COVEL_HOST_VERSION)
    return permission_set_of(loaded, package_id=package.package_id)


def package_usability(
    *, package_id: str, version: str | None = None, path: str | None = None
) -> Usability:
    """Whether sessions may use the installed package, and why not.

    Bundled packages always may; a community package only when its current permission set is
    approved, or when it asks for nothing (no server code, no HTTP).

    path: the folder of the manifest a session runs (pluginhost's gate passes it). The snapshot
    of an approved version (approvals/store.py) is usable while that approval stands, whatever
    the package's current files ask for: that is how sessions keep the last approved version
    while a newer one waits for staff.
    """
    kept = snapshot_hash(path) if path is not None else None
    if kept is not None:
        return _snapshot_usability(package_id, kept)
    package = Package.objects.filter(package_id=package_id).first()
    scope = None
    if package is not None and package.trust != Package.Trust.BUNDLED:
        scope = (
            PermissionScope.objects.select_related("request").filter(package_key=package_id).first()
        )
    return _usability(package_id, package, scope, version)


def packages_usability(
    *,
    package_ids: Iterable[str],
    packages: Mapping[str, Package] | None = None,
    paths: Mapping[str, str] | None = None,
) -> dict[str, Usability]:
    """package_usability for many packages in two queries at most (for the resolver's turn).

    packages: their rows, read already (a turn's loaded packages); bundled packages need no
    permission scope, so a turn with none other reads no scope. paths (package id -> the folder
    of the manifest the session runs) as package_usability's path, read only for the rare
    package that runs an approved snapshot (two queries each)."""
    wanted = list(dict.fromkeys(package_ids))
    kept = {
        pid: found
        for pid, found in ((p, snapshot_hash(path)) for p, path in (paths or {}).items())
        if found is not None and pid in wanted
    }
    verdicts = {pid: _snapshot_usability(pid, found) for pid, found in kept.items()}
    wanted = [pid for pid in wanted if pid not in kept]
    rows = {pid: packages[pid] for pid in wanted if packages and pid in packages}
    missing = [pid for pid in wanted if pid not in rows]
    if missing:
        # Only the columns the verdict reads (the manifest only when a scope is stale, rarely):
        # the sync asks this for every unchanged package.
        rows.update(
            {
                p.package_id: p
                for p in Package.objects.filter(package_id__in=missing).only(
                    "package_id", "version", "state", "trust", "content_hash", "source_dir"
                )
            }
        )
    reviewed = [pid for pid, p in rows.items() if p.trust != Package.Trust.BUNDLED]
    scopes = _scopes(tuple(sorted(reviewed))) if reviewed else {}
    verdicts.update({pid: _usability(pid, rows.get(pid), scopes.get(pid), None) for pid in wanted})
    return verdicts


@per_scope
def _scopes(package_keys: tuple[str, ...]) -> dict[str, PermissionScope]:
    """The permission scopes of these packages with their requests' state, in one query: a turn
    asks twice for its community packages (which wait for staff, then may they run), so once
    per turn (core.memo)."""
    return {
        s.package_key: s
        for s in PermissionScope.objects.select_related("request")
        .filter(package_key__in=package_keys)
        .only("package_key", "content_hash", "request__state", "request__version")
    }


def packages_waiting(*, package_ids: Iterable[str]) -> list[str]:
    """Those of these community packages whose current request is pending or denied: their
    sessions keep running the version in force (versions_in_force)."""
    keys = tuple(sorted(set(package_ids)))
    if not keys:
        return []
    return [
        key
        for key, scope in _scopes(keys).items()
        if scope.request is not None and scope.request.state in (State.PENDING, State.DENIED)
    ]


def _snapshot_usability(package_id: str, content_hash: str) -> Usability:
    if approval_standing(package_key=package_id, content_hash=content_hash) is None:
        return Usability(
            False,
            f"package {package_id}: the version sessions kept running is no longer approved",
            "revoked",
        )
    return Usability(True, "", "approved")


# ------------------------------------------------------------------ the version sessions run


def approval_standing_latest(package_key: str) -> ApprovalRequest | None:
    """The newest approved request, unless a revoke came after it (a revoke ends them all)."""
    latest = (
        ApprovalRequest.objects.for_package(package_key)
        .filter(state__in=[State.APPROVED, State.REVOKED])
        .order_by("-id")
        .first()
    )
    return latest if latest is not None and latest.state == State.APPROVED else None


def approval_in_force(*, package_key: str) -> ApprovalRequest | None:
    """The approval whose version sessions keep running while the package's current version
    waits for staff (its request is pending, or denied): the newest approval that still stands.
    None when the current version is itself approved (or needs nothing), when nothing was ever
    approved, or after a revoke."""
    scope = (
        PermissionScope.objects.select_related("request").filter(package_key=package_key).first()
    )
    if scope is None or scope.request is None:
        return None
    if scope.request.state not in (State.PENDING, State.DENIED):
        return None
    return approval_standing_latest(package_key)


def approval_standing(*, package_key: str, content_hash: str) -> ApprovalRequest | None:
    """The approved request of the package version with this content hash, while it stands
    (no revoke after it); None otherwise."""
    request = (
        ApprovalRequest.objects.for_package(package_key)
        .filter(state=State.APPROVED, content_hash=content_hash)
        .order_by("-id")
        .first()
    )
    if request is None:
        return None
    revoked = ApprovalRequest.objects.for_package(package_key).filter(
        state=State.REVOKED, id__gt=request.id
    )
    return None if revoked.exists() else request


def versions_in_force(*, package_ids: Iterable[str]) -> dict[str, str]:
    """package id -> the snapshot folder of the approved version its sessions run, for each of
    these packages whose current version waits for staff while an earlier approval stands (and
    was kept whole). Packages not named here run their current folder."""
    found: dict[str, str] = {}
    for package_id in package_ids:
        request = approval_in_force(package_key=package_id)
        if request is None:
            continue
        folder = version_snapshot_dir(package_id=package_id, content_hash=request.content_hash)
        if folder is not None:
            found[package_id] = str(folder)
    return found


def _usability(
    package_id: str, package: Package | None, scope: PermissionScope | None, version: str | None
) -> Usability:
    if package is None:
        return Usability(False, f"package {package_id} is not installed", "missing")
    if version is not None and package.version != version:
        return Usability(
            False,
            f"package {package_id} is installed at version {package.version}, not {version}",
            "missing",
        )
    if package.state != Package.State.LOADED:
        return Usability(False, f"package {package_id} failed to load", "error")
    if package.trust == Package.Trust.BUNDLED:
        return Usability(True, "", "bundled")
    if scope is None or scope.content_hash != package.content_hash:
        # Not synced through approvals yet: decide from the files, never in the package's favour.
        permissions = package_permission_set(package=package)
        if is_empty(permissions):
            return Usability(True, "", "not-required")
        return Usability(
            False,
            f"package {package_id} changed and waits for a staff review of its permissions",
            "unreviewed",
        )
    request = scope.request
    if request is None:
        return Usability(True, "", "not-required")
    if request.state == State.APPROVED:
        return Usability(True, "", "approved")
    reasons = {
        State.PENDING: "waits for a staff member to approve its permissions",
        State.DENIED: "was denied by staff",
        State.REVOKED: "had its approval revoked by staff",
    }
    reason = reasons.get(request.state, "has no current approval")
    return Usability(False, f"package {package_id}@{request.version} {reason}", request.state)


def package_is_usable(*, package_id: str, version: str | None = None) -> bool:
    return package_usability(package_id=package_id, version=version).usable


def package_unusable_reason(*, package_id: str, version: str | None = None) -> str | None:
    """None when usable, else the reason (for the resolver's message)."""
    result = package_usability(package_id=package_id, version=version)
    return None if result.usable else result.reason


def _with_newest(requests: QuerySet[ApprovalRequest]) -> QuerySet[ApprovalRequest]:
    # The newest request of each package, in the same query: a list page costs the same for 10 or 1000.
    newest = (
        ApprovalRequest.objects.filter(package_key=OuterRef("package_key"))
        .order_by("-id")
        .values("id")[:1]
    )
    return requests.select_related("decided_by", "package").annotate(newest_id=Subquery(newest))


def approval_seen_hashes() -> dict[str, str]:
    """package id -> the content hash approvals last saw (the sync repairs rows it never saw)."""
    return dict(PermissionScope.objects.values_list("package_key", "content_hash"))


def approval_list(*, state: str | None = None) -> QuerySet[ApprovalRequest]:
    requests = _with_newest(ApprovalRequest.objects.all())
    if state:
        requests = requests.filter(state=state)
    return requests.pending_first()


def approval_get(*, request_id: int) -> ApprovalRequest | None:
    return (
        ApprovalRequest.objects.select_related("decided_by", "package")
        .filter(pk=request_id)
        .first()
    )


def approval_journal(*, package_key: str) -> QuerySet[JournalEntry]:
    return JournalEntry.objects.filter(package_key=package_key).order_by("created_at", "id")


def approval_current(*, package_key: str) -> ApprovalRequest | None:
    return ApprovalRequest.objects.for_package(package_key).order_by("-id").first()


def approval_is_current(*, request: ApprovalRequest) -> bool:
    """True when staff can still decide on it (it is the newest request and the package is unchanged)."""
    if request.state in (State.SUPERSEDED, State.WITHDRAWN):
        return False
    package = request.package
    if package is None or package.content_hash != request.content_hash:
        return False
    newest_id = getattr(request, "newest_id", None)
    if newest_id is None:
        current = approval_current(package_key=request.package_key)
        newest_id = current.pk if current is not None else None
    return newest_id == request.pk


def approval_view(
    *,
    request: ApprovalRequest,
    code_errors: Mapping[str, str] | None = None,
    standing: Mapping[str, ApprovalRequest] | None = None,
) -> dict[str, Any]:
    """Everything a page or API response shows about one request.

    code_errors: package id -> code error, already fetched for a list (approval_views);
    without it the package's code state is read here.
    """
    if code_errors is None:
        code_errors = _code_errors([request.package_key])
    is_current = approval_is_current(request=request)
    in_force = None
    if is_current and request.state in (State.PENDING, State.DENIED):
        # Sessions still run this earlier approval: staff may stop it (revoke).
        if standing is None:
            standing = _standing_approvals([request.package_key])
        in_force = standing.get(request.package_key)
    return {
        "request": request,
        "asks": describe(request.permissions),
        "diff": diff(request.permissions, request.baseline_permissions),
        "has_baseline": request.baseline_permissions is not None,
        "is_current": is_current,
        "in_force": in_force,
        # Staff cannot approve code that does not load (approval_decide refuses it).
        "code_error": code_errors.get(request.package_key),
    }


def approval_views(*, requests: Iterable[ApprovalRequest]) -> list[dict[str, Any]]:
    """approval_view for a list, with the code states in one query."""
    requests = list(requests)
    errors = _code_errors([r.package_key for r in requests])
    waiting = [r.package_key for r in requests if r.state in (State.PENDING, State.DENIED)]
    standing = _standing_approvals(waiting)
    return [approval_view(request=r, code_errors=errors, standing=standing) for r in requests]


def _standing_approvals(package_keys: list[str]) -> dict[str, ApprovalRequest]:
    """package id -> its newest approval that no revoke came after, in one query (a list page
    costs the same for 10 or 1000 requests)."""
    found: dict[str, ApprovalRequest] = {}
    if not package_keys:
        return found
    decided = ApprovalRequest.objects.filter(
        package_key__in=set(package_keys), state__in=[State.APPROVED, State.REVOKED]
    ).order_by("package_key", "-id")
    seen: set[str] = set()
    for request in decided:
        if request.package_key in seen:
            continue
        seen.add(request.package_key)
        if request.state == State.APPROVED:
            found[request.package_key] = request
    return found


def _code_errors(package_ids: list[str]) -> dict[str, str]:
    return dict(
        Package.objects.filter(
            package_id__in=package_ids, code_state=Package.CodeState.CODE_ERROR
        ).values_list("package_id", "code_error")
    )


def package_approval_panel(*, package: Package) -> dict[str, Any]:
    """The data of the approval panel on a catalogue package page."""
    if package.trust == Package.Trust.BUNDLED:
        return {"package": package, "bundled": True}
    current = approval_current(package_key=package.package_id)
    usability = package_usability(package_id=package.package_id)
    context: dict[str, Any] = {
        "package": package,
        "bundled": False,
        "usability": usability,
        "current": approval_view(request=current) if current is not None else None,
        "journal": list(approval_journal(package_key=package.package_id).select_related("request")),
    }
    return context
