"""Approvals API: staff read the queue and decide. Session auth with CSRF (ninja's django_auth)."""

from __future__ import annotations

from typing import Any

from django.http import HttpRequest
from ninja import Query, Router, Status
from ninja.security import django_auth

from approvals.models import ApprovalRequest, JournalEntry
from approvals.schemas import (
    ApprovalDetailOut,
    ApprovalFilter,
    ApprovalPageOut,
    DecisionIn,
    ErrorOut,
)
from approvals.selectors import approval_get, approval_list, approval_view, approval_views
from approvals.services import ApprovalError, approval_decide

router = Router(tags=["approvals"], auth=django_auth)

NOT_STAFF = {"detail": "only staff may review package permissions", "code": "staff_only"}


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


@router.get("/approvals", response={200: ApprovalPageOut, 403: ErrorOut})
def list_approvals(request: HttpRequest, filters: Query[ApprovalFilter]) -> Any:
    """Approval requests, pending first; ?state= filters, ?limit=&offset= page."""
    if not request.user.is_staff:
        return Status(403, NOT_STAFF)
    requests = approval_list(state=filters.state)
    page = requests[filters.offset : filters.offset + filters.limit]
    items = [_out(v["request"], view=v) for v in approval_views(requests=page)]
    return Status(200, {"count": requests.count(), "items": items})


@router.get(
    "/approvals/{request_id}", response={200: ApprovalDetailOut, 403: ErrorOut, 404: ErrorOut}
)
def get_approval(request: HttpRequest, request_id: int) -> Any:
    if not request.user.is_staff:
        return Status(403, NOT_STAFF)
    item = approval_get(request_id=request_id)
    if item is None:
        return Status(
            404, {"detail": f"approval request {request_id} does not exist", "code": "not_found"}
        )
    return Status(200, _out(item, journal=True))


@router.post(
    "/approvals/{request_id}/decision",
    response={200: ApprovalDetailOut, 400: ErrorOut, 403: ErrorOut, 404: ErrorOut, 409: ErrorOut},
)
def decide_approval(request: HttpRequest, request_id: int, payload: DecisionIn) -> Any:
    if not request.user.is_staff:
        return Status(403, NOT_STAFF)
    try:
        item = approval_decide(
            request_id=request_id, decision=payload.decision, actor=request.user, note=payload.note
        )
    except ApprovalError as exc:
        return Status(exc.status, {"detail": exc.message, "code": exc.code})
    return Status(200, _out(item, journal=True))
