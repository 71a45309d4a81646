"""Writes of the approvals app: syncing what a package asks for, and staff decisions."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from django.db import transaction
from django.db.models.signals import post_save
from django.utils import timezone

from approvals.models import ApprovalRequest, JournalEntry, PermissionScope
from approvals.permissions import is_empty, is_within, permission_hash
from approvals.selectors import (
    approval_in_force,
    approval_standing_latest,
    package_permission_set,
)
from approvals.store import keep_approved_version
from catalogue import callouts
from catalogue.manifest.types import LoadResult
from catalogue.models import Package
from core.errors import ApiError

State = ApprovalRequest.State
Action = JournalEntry.Action


class ApprovalError(ApiError):
    """A decision that cannot be made; code is stable for API clients."""

    code = "approval_error"
    status = 400


class ApprovalScopeChanged(ApprovalError):
    code = "approval_scope_changed"
    status = 409


class ApprovalStateConflict(ApprovalError):
    code = "approval_state_conflict"
    status = 409


class ApprovalCodeError(ApprovalError):
    """The package's code does not load: approving it would approve something that cannot run."""

    code = "approval_code_error"
    status = 409


class ApprovalNotFound(ApprovalError):
    code = "not_found"
    status = 404


class Decision:
    """The three staff decisions, as the API and the form spell them."""

    ALLOW = "allow"
    DENY = "deny"
    REVOKE = "revoke"
    ALL = (ALLOW, DENY, REVOKE)


def _journal(
    *, request: ApprovalRequest, action: str, actor: Any = None, note: str = ""
) -> JournalEntry:
    return JournalEntry.objects.create(
        request=request,
        package_key=request.package_key,
        version=request.version,
        action=action,
        actor=actor,
        actor_name=actor.get_username() if actor is not None else "Covel Hub (sync)",
        note=note,
        permissions=request.permissions,
        permissions_hash=request.permissions_hash,
    )


def _supersede(*, request: ApprovalRequest, reason: str) -> None:
    request.state = State.SUPERSEDED
    request.save(update_fields=["state", "updated_at"])
    _journal(request=request, action=Action.SUPERSEDED, note=reason)


def approval_requests_withdraw_gone(*, package_keys: list[str] | None = None) -> list[int]:
    """Close every pending request whose package is no longer installed (its folder is gone),
    with a journal note, so the staff queue holds only what can still be decided.

    package_keys limits the sweep to those packages (the catalogue just removed them); None
    sweeps every pending request. Returns the ids of the requests closed.
    """
    pending = ApprovalRequest.objects.filter(state=State.PENDING)
    if package_keys is not None:
        pending = pending.filter(package_key__in=package_keys)
    installed = Package.objects.filter(package_id__in=pending.values("package_key"))
    closed: list[int] = []
    with transaction.atomic():
        stale = (
            pending.exclude(package_key__in=installed.values("package_id"))
            .select_for_update()
            .order_by("id")
        )
        for request in stale:
            request.state = State.WITHDRAWN
            request.note = (
                f"closed without a decision: package {request.package_key} is no longer "
                "installed (its folder was removed or no longer loads under that id)"
            )
            request.save(update_fields=["state", "note", "updated_at"])
            _journal(request=request, action=Action.WITHDRAWN, note=request.note)
            closed.append(request.pk)
    return closed


def approval_request_sync(*, package: Package, loaded: LoadResult | None = None) -> None:
    """Record what a community package asks for after the catalogue saved it.

    No request when it asks for nothing; an approved request ("carried over") when the set is the
    same as or narrower than the last approval; otherwise a pending request that keeps the last
    approved set for the side-by-side diff. Calling it again for an unchanged package is a no-op.
    loaded: the loader's verdict the row was indexed from (the sync has it); without it the
    folder is loaded again.
    """
    if package.trust != Package.Trust.COMMUNITY:
        # Bundled code is trusted; a package that moved into the bundled folder keeps its history.
        PermissionScope.objects.filter(package_key=package.package_id).delete()
        return
    permissions = package_permission_set(package=package, loaded=loaded)
    digest = permission_hash(permissions)
    key = package.package_id
    with transaction.atomic():
        scope = PermissionScope.objects.select_for_update().filter(package_key=key).first()
        current = (
            ApprovalRequest.objects.select_for_update().for_package(key).order_by("-id").first()
        )
        if is_empty(permissions):
            if current is not None and current.state == State.PENDING:
                _supersede(
                    request=current,
                    reason=f"version {package.version} asks for no server code and no HTTP access",
                )
            request = None
        elif (
            current is not None
            and current.state != State.WITHDRAWN
            and current.permissions_hash == digest
            and current.version == package.version
        ):
            # Same version, same set (say, a prompt edit): the request and its verdict stand.
            if current.content_hash != package.content_hash or current.package_id != package.pk:
                current.content_hash = package.content_hash
                current.package = package
                current.save(update_fields=["content_hash", "package", "updated_at"])
            request = current
        else:
            # The approval a new version is compared with (a revoke after it cancels it: a revoked
            # package never carries an approval over).
            baseline = approval_standing_latest(key)
            carried = baseline is not None and is_within(permissions, baseline.permissions)
            request = ApprovalRequest.objects.create(
                package=package,
                package_key=key,
                version=package.version,
                content_hash=package.content_hash,
                permissions=permissions,
                permissions_hash=digest,
                baseline=baseline,
                baseline_permissions=baseline.permissions if baseline is not None else None,
                state=State.APPROVED if carried else State.PENDING,
                decided_at=timezone.now() if carried else None,
            )
            if carried:
                _journal(
                    request=request,
                    action=Action.CARRIED_OVER,
                    note=(
                        f"the same as or narrower than the approval of version {baseline.version} "
                        f"(request #{baseline.pk})"
                    ),
                )
            else:
                _journal(request=request, action=Action.REQUESTED)
            if current is not None and current.state == State.PENDING:
                _supersede(
                    request=current,
                    reason=f"replaced by request #{request.pk} for version {package.version}",
                )
        values = {
            "version": package.version,
            "content_hash": package.content_hash,
            "permissions": permissions,
            "permissions_hash": digest,
            "request": request,
        }
        if scope is None:
            PermissionScope.objects.create(package_key=key, **values)
        else:
            for field, value in values.items():
                setattr(scope, field, value)
            scope.save()
    if request is not None and request.state == State.APPROVED:
        # Keep the approved version whole while the folder holds it: sessions go on running
        # it when a later change waits for staff (a no-op once kept).
        keep_approved_version(request, source_dir=package.source_dir)


def approval_requests_sync(
    *, packages: list[Package], loaded: Mapping[str, LoadResult] | None = None
) -> None:
    """approval_request_sync for many packages the catalogue just saved (a first sync's batch),
    in a fixed number of queries for the packages approvals has never seen: no scope, no
    request, so nothing to carry over or supersede (a pending request, or none when the package
    asks for nothing). Any package approvals knows goes through approval_request_sync itself.
    Runs in the caller's transaction, as the single call does. loaded: package id -> the
    loader's verdict each row was indexed from, as approval_request_sync takes it."""
    loaded = loaded or {}
    by_key = {p.package_id: p for p in packages if p.trust == Package.Trust.COMMUNITY}
    keys = list(by_key)
    with transaction.atomic():
        known = set(
            PermissionScope.objects.filter(package_key__in=keys).values_list(
                "package_key", flat=True
            )
        )
        known.update(
            ApprovalRequest.objects.filter(package_key__in=keys).values_list(
                "package_key", flat=True
            )
        )
        fresh: list[tuple[Package, dict[str, Any], str]] = []
        for package in packages:
            if package.trust != Package.Trust.COMMUNITY or package.package_id in known:
                approval_request_sync(package=package, loaded=loaded.get(package.package_id))
            else:
                permissions = package_permission_set(
                    package=package, loaded=loaded.get(package.package_id)
                )
                fresh.append((package, permissions, permission_hash(permissions)))
        asking = [item for item in fresh if not is_empty(item[1])]
        requests = ApprovalRequest.objects.bulk_create(
            [
                ApprovalRequest(
                    package=package,
                    package_key=package.package_id,
                    version=package.version,
                    content_hash=package.content_hash,
                    permissions=permissions,
                    permissions_hash=digest,
                    state=State.PENDING,
                )
                for package, permissions, digest in asking
            ]
        )
        if any(r.pk is None for r in requests):  # a database that returns no ids from a bulk insert
            ids = dict(
                ApprovalRequest.objects.filter(
                    package_key__in=[r.package_key for r in requests]
                ).values_list("package_key", "pk")
            )
            for request in requests:
                request.pk = ids[request.package_key]
        entries = JournalEntry.objects.bulk_create(
            [
                JournalEntry(
                    request=request,
                    package_key=request.package_key,
                    version=request.version,
                    action=Action.REQUESTED,
                    actor_name="Covel Hub (sync)",
                    permissions=request.permissions,
                    permissions_hash=request.permissions_hash,
                )
                for request in requests
            ]
        )
        for entry in entries:
            # A bulk insert sends no post_save: send it, so listeners (the staff mail) hear of
            # each new request as they do of one made by approval_request_sync.
            post_save.send(
                sender=JournalEntry,
                instance=entry,
                created=True,
                update_fields=None,
                raw=False,
                using=entry._state.db,
            )
        request_of = {r.package_key: r for r in requests}
        PermissionScope.objects.bulk_create(
            [
                PermissionScope(
                    package_key=package.package_id,
                    version=package.version,
                    content_hash=package.content_hash,
                    permissions=permissions,
                    permissions_hash=digest,
                    request=request_of.get(package.package_id),
                )
                for package, permissions, digest in fresh
            ]
        )


# Which states each decision may start from.
_TRANSITIONS: dict[str, tuple[tuple[str, ...], str, str]] = {
    Decision.ALLOW: ((State.PENDING, State.DENIED, State.REVOKED), State.APPROVED, Action.APPROVED),
    Decision.DENY: ((State.PENDING,), State.DENIED, Action.DENIED),
    Decision.REVOKE: ((State.APPROVED,), State.REVOKED, Action.REVOKED),
}


def approval_decide(
    *, request_id: int, decision: str, actor: Any, note: str = ""
) -> ApprovalRequest:
    """A staff decision on the current request of a package.

    Refuses (ApprovalScopeChanged) when the package changed since the request was made: the
    admin would be approving something other than what they read.
    """
    if decision not in Decision.ALL:
        raise ApprovalError(f"decision must be one of {', '.join(Decision.ALL)}, not {decision!r}")
    if actor is None or not getattr(actor, "is_staff", False):
        raise PermissionError("only staff may decide on approval requests")
    note = (note or "").strip()
    if decision == Decision.ALLOW:
        _check_code(request_id=request_id)
    with transaction.atomic():
        request = ApprovalRequest.objects.select_for_update().filter(pk=request_id).first()
        if request is None:
            raise ApprovalNotFound(f"approval request {request_id} does not exist")
        _check_fresh(request=request)
        if decision == Decision.ALLOW:
            code = Package.objects.filter(package_id=request.package_key).first()
            if code is not None and code.code_state == Package.CodeState.CODE_ERROR:
                raise ApprovalCodeError(
                    f"cannot approve {request.package_key}: its code does not load "
                    f"({code.code_error}); fix the code, sync, then decide on the new request"
                )
        allowed_from, new_state, action = _TRANSITIONS[decision]
        if decision == Decision.REVOKE and approval_in_force(package_key=request.package_key):
            # A change waits (or was denied) while sessions still run the last approval: a
            # revoke of the current request ends that approval too (approval_standing_latest).
            allowed_from = (*allowed_from, State.PENDING, State.DENIED)
        if request.state not in allowed_from:
            raise ApprovalStateConflict(
                f"cannot {decision} request #{request.pk}: it is {request.state} "
                f"({decision} applies to {', '.join(allowed_from)} requests)"
            )
        request.state = new_state
        request.decided_by = actor
        request.decided_at = timezone.now()
        request.note = note
        request.save(update_fields=["state", "decided_by", "decided_at", "note", "updated_at"])
        _journal(request=request, action=action, actor=actor, note=note)
    if decision == Decision.ALLOW:
        package = Package.objects.filter(package_id=request.package_key).first()
        if package is not None:  # copies only for what staff approved, made while it is there
            keep_approved_version(request, source_dir=package.source_dir)
    _refresh_code(package_key=request.package_key)
    return request


def _package_code_check(package: Package) -> None:
    # The plugin host sits above approvals (it asks what may run), so the check is reached
    # through the same slot the catalogue's sync uses (catalogue/callouts.py).
    callouts.package_code_checks.get()([(package, None)], force=True)


def _check_code(*, request_id: int) -> None:
    """Make sure the package's code state is current before staff may approve it.

    Unapproved code is only parsed here (pluginhost.codecheck), never run.
    """
    request = ApprovalRequest.objects.filter(pk=request_id).first()
    package = Package.objects.filter(package_id=request.package_key).first() if request else None
    if package is not None and not package.code_checked.startswith(f"{package.content_hash}:"):
        _package_code_check(package)


def _refresh_code(*, package_key: str) -> None:
    """After a decision: approved code is now imported for real; denied or revoked code is
    back to the static check."""
    package = Package.objects.filter(package_id=package_key).first()
    if package is not None:
        _package_code_check(package)


def _check_fresh(*, request: ApprovalRequest) -> None:
    changed = (
        f"package {request.package_key} changed since request #{request.pk} was made; "
        "reload and decide on its current request"
    )
    if request.state == State.WITHDRAWN:
        raise ApprovalScopeChanged(
            f"package {request.package_key} is no longer installed; request #{request.pk} "
            "was closed without a decision"
        )
    if request.state == State.SUPERSEDED:
        raise ApprovalScopeChanged(changed)
    package = Package.objects.filter(package_id=request.package_key).first()
    if package is None:
        raise ApprovalScopeChanged(f"package {request.package_key} is no longer installed")
    if package.content_hash != request.content_hash:
        raise ApprovalScopeChanged(changed)
    newest = (
        ApprovalRequest.objects.for_package(request.package_key)
        .order_by("-id")
        .values_list("pk", flat=True)
        .first()
    )
    if newest != request.pk:
        raise ApprovalScopeChanged(changed)
