"""Staff pages: the approval queue and one request's detail, with the decision form."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.http import Http404, HttpRequest, HttpResponse, HttpResponseRedirect
from django.shortcuts import render
from django.urls import reverse
from django.utils.http import url_has_allowed_host_and_scheme
from django.views.decorators.http import require_GET, require_POST

from approvals.code_view import approval_code_files
from approvals.models import ApprovalRequest
from approvals.selectors import (
    approval_get,
    approval_journal,
    approval_list,
    approval_view,
    approval_views,
)
from approvals.services import ApprovalError, approval_decide


def _require_staff(request: HttpRequest) -> None:
    # login_required already sent anonymous visitors to log in; a signed-in player gets 403.
    if not request.user.is_staff:
        raise PermissionDenied("only staff may review package permissions")


@require_GET
@login_required
def approval_queue(request: HttpRequest) -> HttpResponse:
    _require_staff(request)
    state = request.GET.get("state") or None
    if state not in (None, *ApprovalRequest.State.values):
        state = None
    requests = list(approval_list(state=state))
    views = approval_views(requests=requests)
    pending = [v for v in views if v["request"].state == ApprovalRequest.State.PENDING]
    history = [v for v in views if v["request"].state != ApprovalRequest.State.PENDING]
    return render(
        request,
        "approvals/queue.html",
        {
            "pending": pending,
            "history": history,
            "state": state,
            "states": ApprovalRequest.State.choices,
        },
    )


@require_GET
@login_required
def approval_detail(request: HttpRequest, request_id: int) -> HttpResponse:
    _require_staff(request)
    item = approval_get(request_id=request_id)
    if item is None:
        raise Http404("no such approval request")
    return render(
        request,
        "approvals/detail.html",
        {
            "view": approval_view(request=item),
            "journal": approval_journal(package_key=item.package_key),
            "files": approval_code_files(request=item),
        },
    )


@require_POST
@login_required
def approval_decision(request: HttpRequest, request_id: int) -> HttpResponse:
    _require_staff(request)
    decision = request.POST.get("decision", "")
    note = request.POST.get("note", "")[:2000]
    try:
        item = approval_decide(
            request_id=request_id, decision=decision, actor=request.user, note=note
        )
    except ApprovalError as exc:
        item = approval_get(request_id=request_id)
        if item is None:
            raise Http404("no such approval request") from None
        return render(
            request,
            "approvals/detail.html",
            {
                "view": approval_view(request=item),
                "journal": approval_journal(package_key=item.package_key),
                "files": approval_code_files(request=item),
                "error": exc.message,
                "error_code": exc.code,
            },
            status=exc.status,
        )
    verb = {"allow": "approved", "deny": "denied", "revoke": "revoked"}[decision]
    messages.success(request, f"Request #{item.pk} for {item.package_key}@{item.version} {verb}.")
    # Back to the page the decision was made on (the queue, or a package page), never off-site.
    target = request.POST.get("next") or ""
    if not url_has_allowed_host_and_scheme(
        target, allowed_hosts={request.get_host()}, require_https=request.is_secure()
    ):
        target = reverse("approvals:queue")
    return HttpResponseRedirect(target)
