"""Approvals API: staff read the queue and decide. Session (CSRF on writes) or bearer-token auth (core.auth)."""

from __future__ import annotations

from typing import Any

from django.http import HttpRequest
from ninja import Query, Router

from approvals.models import ApprovalRequest, JournalEntry
from approvals.schemas import (
    ApprovalDetailOut,
    ApprovalFilter,
    ApprovalPageOut,
    DecisionIn,
)
from approvals.selectors import approval_get, approval_list, approval_view, approval_views
from approvals.services import approval_decide
from core.auth import hub_auth
from core.errors import Forbidden, NotFound
from core.schemas import errors, page

router = Router(tags=["approvals"], auth=hub_auth)


def _require_staff(request: HttpRequest) -> None:
    if not request.user.is_staff:
        raise Forbidden("only staff may review package permissions", code="staff_only")


def _journal_out(entry: JournalEntry) -> dict[str, Any]:
    return {
        "id": entry.pk,
        "request_id": entry.request_id,
        "package_id": entry.package_key,
        "version": entry.version,
        "action": entry.action,
        "actor": entry.actor_name,
        "note": entry.note,
        "permissions": entry.permissions,
        "permissions_hash": entry.permissions_hash,
        "created_at": entry.created_at,
    }


def _out(
    item: ApprovalRequest, *, journal: bool = False, view: dict[str, Any] | None = None
) -> dict[str, Any]:
    view = view or approval_view(request=item)
    data: dict[str, Any] = {
        "id": item.pk,
        "package_id": item.package_key,
        "version": item.version,
        "state": item.state,
        "is_current": view["is_current"],
        "code_error": view["code_error"],
        "content_hash": item.content_hash,
        "permissions": item.permissions,
        "permissions_hash": item.permissions_hash,
        "asks": view["asks"],
        "baseline_id": item.baseline_id,
        "baseline_permissions": item.baseline_permissions,
        "diff": view["diff"],
        "decided_by": item.decided_by.get_username() if item.decided_by else None,
        "decided_at": item.decided_at,
        "note": item.note,
        "created_at": item.created_at,
    }
    if journal:
        data["journal"] = [_journal_out(e) for e in item.journal.order_by("created_at", "id")]
    return data


@router.get("/approvals", response={200: ApprovalPageOut, **errors(401, 403, 422)})
def list_approvals(request: HttpRequest, filters: Query[ApprovalFilter]) -> Any:
    """Approval requests, pending first; ?state= filters, ?limit=&offset= page."""
    _require_staff(request)
    requests = approval_list(state=filters.state)
    rows = requests[filters.offset : filters.offset + filters.limit]
    return page(
        [_out(v["request"], view=v) for v in approval_views(requests=rows)],
        count=requests.count(),
        limit=filters.limit,
        offset=filters.offset,
    )


@router.get(
    "/approvals/{request_id}", response={200: ApprovalDetailOut, **errors(401, 403, 404, 422)}
)
def get_approval(request: HttpRequest, request_id: int) -> Any:
    _require_staff(request)
    item = approval_get(request_id=request_id)
    if item is None:
        raise NotFound(f"approval request {request_id} does not exist")
    return _out(item, journal=True)


@router.post(
    "/approvals/{request_id}/decision",
    response={200: ApprovalDetailOut, **errors(400, 401, 403, 404, 409, 422)},
)
def decide_approval(request: HttpRequest, request_id: int, payload: DecisionIn) -> Any:
    """Allow, deny or revoke; 409 approval_scope_changed on a stale request (ApprovalError)."""
    _require_staff(request)
    item = approval_decide(
        request_id=request_id, decision=payload.decision, actor=request.user, note=payload.note
    )
    return _out(item, journal=True)
