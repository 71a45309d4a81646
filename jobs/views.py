"""Pages of the jobs app: the staff dashboard (every job, filters in the URL, a timeline
picture) and the live jobs panel a session page includes (with cancel and retry)."""

from __future__ import annotations

import re
import uuid
from typing import Any
from urllib.parse import urlencode

from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.http import Http404, HttpRequest, HttpResponse, HttpResponseRedirect
from django.shortcuts import render
from django.urls import reverse
from django.views.decorators.http import require_GET, require_POST

from agents.selectors import slot_names
from jobs.errors import JobError, JobForbidden
from jobs.models import (
    CANCELLABLE_STATES,
    FAILURE_STATES,
    UNFINISHED_STATES,
    JobState,
    RuntimeJob,
)
from jobs.selectors import (
    DashboardFilters,
    dashboard_cursor,
    job_dashboard,
    job_get,
    session_can_manage,
    session_get,
    session_jobs,
)
from jobs.services import job_cancel, job_retry


@require_GET
@login_required
def dashboard(request: HttpRequest) -> HttpResponse:
    # login_required already sent anonymous visitors to log in; a signed-in player gets 403.
    if not request.user.is_staff:
        raise PermissionDenied("only staff may see every job")
    filters = DashboardFilters.from_query(request.GET)
    # Keyset paging on the job id: ?before=<id> goes to older jobs, ?after=<id> to newer ones.
    # A malformed cursor is ignored like a nonsense filter: the first page is shown.
    context = job_dashboard(
        filters=filters,
        before=dashboard_cursor(request.GET.get("before")),
        after=dashboard_cursor(request.GET.get("after")),
    )
    # The paging links keep the active filters (urlencode escapes them for the query string;
    # the template escapes the result for the attribute).
    kept = [
        (name, str(value))
        for name, value in (
            ("state", filters.state),
            ("plugin", filters.plugin),
            ("session", filters.session),
        )
        if value
    ]
    page = context["page"]
    context.update(
        {
            "filters": filters,
            "states": JobState.choices,
            "older_query": urlencode([*kept, ("before", page.older_before)])
            if page.older_before is not None
            else "",
            "newer_query": urlencode(
                [*kept, ("after", page.newer_after)] if page.newer_after is not None else kept
            ),
        }
    )
    return render(request, "jobs/dashboard.html", context)


def _session_or_404(session_id: uuid.UUID) -> Any:
    session = session_get(session_id=session_id)
    if session is None:
        raise Http404("no such session")
    return session


_NO_MODEL = re.compile(r"no model is configured for slot '([^']+)'")


def _render_panel(request: HttpRequest, session: Any, *, error: str = "") -> HttpResponse:
    if not session_can_manage(user=request.user, session=session):
        raise PermissionDenied("only staff and the session's owner may see its jobs")
    jobs = list(session_jobs(session_id=session.pk)[:50])
    retried = set(
        RuntimeJob.objects.filter(retry_of__in=[j.pk for j in jobs]).values_list(
            "retry_of_id", flat=True
        )
    )
    configured = set(slot_names())
    rows = []
    for job in jobs:
        # A job that failed for want of a model would fail again the same way: no Retry until
        # staff configure the slot, and the row says what it waits for.
        missing = _NO_MODEL.search(job.error or "")
        waits_for = missing.group(1) if missing and missing.group(1) not in configured else ""
        rows.append(
            {
                "job": job,
                "can_cancel": job.state in CANCELLABLE_STATES,
                "can_retry": job.state in FAILURE_STATES
                and job.pk not in retried
                and not waits_for,
                "waits_for_slot": waits_for,
            }
        )
    live = any(job.state in UNFINISHED_STATES for job in jobs)
    return render(
        request,
        "jobs/session_panel.html",
        {"session": session, "rows": rows, "live": live, "error": error},
    )


@require_GET
@login_required
def session_panel(request: HttpRequest, session_id: uuid.UUID) -> HttpResponse:
    """The live jobs panel of a session page (an htmx fragment that refreshes itself)."""
    return _render_panel(request, _session_or_404(session_id))


@require_POST
@login_required
def job_action(request: HttpRequest, job_id: uuid.UUID, action: str) -> HttpResponse:
    """Cancel or retry from the panel; answers with the refreshed panel."""
    job = job_get(job_id=job_id)
    if job is None:
        raise Http404("no such job")
    error = ""
    try:
        if action == "cancel":
            job_cancel(job=job, actor=request.user)
        else:
            job_retry(job=job, actor=request.user)
    except JobForbidden as exc:
        raise PermissionDenied(exc.message) from exc
    except JobError as exc:
        error = exc.message
    if not request.headers.get("HX-Request"):
        # A plain form post (no JavaScript): back to the session page, or the refusal as 409.
        if not error:
            return HttpResponseRedirect(reverse("sessions:detail", args=[job.session_id]))
        response = _render_panel(request, job.session, error=error)
        response.status_code = 409
        return response
    # htmx swaps only 2xx answers: the refusal is shown inside the refreshed panel.
    return _render_panel(request, job.session, error=error)
