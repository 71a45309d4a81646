"""Jobs API: a session's jobs, one job, cancel and retry.

Session or bearer-token authentication (core.auth.hub_auth): anonymous callers get 401, CSRF on cookie POSTs.
Staff and the session's owner may see and manage its jobs; anyone else gets 403.
"""

from __future__ import annotations

import uuid
from typing import Any

from django.http import HttpRequest
from ninja import Query, Router, Status

from accounts.throttles import turn_throttle
from core.auth import hub_auth
from jobs.errors import JobError
from jobs.events import job_payload
from jobs.schemas import ErrorOut, JobListFilter, JobListOut, JobOut
from jobs.selectors import job_get, session_can_manage, session_get, session_jobs
from jobs.services import job_can_manage, job_cancel, job_retry

router = Router(tags=["jobs"], auth=hub_auth)

FORBIDDEN = {"detail": "only staff and the session's owner may see its jobs", "code": "forbidden"}


def _error(exc: JobError) -> Status:
    return Status(exc.status, {"detail": exc.message, "code": exc.code})


def _not_found(what: str) -> Status:
    return Status(404, {"detail": f"{what} does not exist", "code": "not_found"})


@router.get("/sessions/{session_id}/jobs", response={200: JobListOut, 403: ErrorOut, 404: ErrorOut})
def list_session_jobs(
    request: HttpRequest, session_id: uuid.UUID, filters: Query[JobListFilter]
) -> Any:
    """The session's jobs, newest first; ?state= filters, ?limit=&offset= page."""
    session = session_get(session_id=session_id)
    if session is None:
        return _not_found(f"session {session_id}")
    if not session_can_manage(user=request.user, session=session):
        return Status(403, FORBIDDEN)
    jobs = session_jobs(session_id=session_id, state=filters.state)
    page = jobs[filters.offset : filters.offset + filters.limit]
    return Status(200, {"count": jobs.count(), "items": [job_payload(j) for j in page]})


@router.get("/jobs/{job_id}", response={200: JobOut, 403: ErrorOut, 404: ErrorOut})
def get_job(request: HttpRequest, job_id: str) -> Any:
    job = job_get(job_id=job_id)
    if job is None:
        return _not_found(f"job {job_id}")
    if not job_can_manage(user=request.user, job=job):
        return Status(403, FORBIDDEN)
    return Status(200, job_payload(job))


@router.post(
    "/jobs/{job_id}/cancel", response={200: JobOut, 403: ErrorOut, 404: ErrorOut, 409: ErrorOut}
)
def cancel_job(request: HttpRequest, job_id: str) -> Any:
    """Cancel a queued, claimed or running job; 409 runtime_job_not_cancellable otherwise."""
    job = job_get(job_id=job_id)
    if job is None:
        return _not_found(f"job {job_id}")
    try:
        return Status(200, job_payload(job_cancel(job=job, actor=request.user)))
    except JobError as exc:
        return _error(exc)


@router.post(
    "/jobs/{job_id}/retry",
    response={201: JobOut, 403: ErrorOut, 404: ErrorOut, 409: ErrorOut},
    throttle=[turn_throttle],
)
def retry_job(request: HttpRequest, job_id: str) -> Any:
    """Retry a job in a failure state as a new job; 409 runtime_job_not_retryable otherwise."""
    job = job_get(job_id=job_id)
    if job is None:
        return _not_found(f"job {job_id}")
    try:
        created = job_retry(job=job, actor=request.user)
    except JobError as exc:
        return _error(exc)
    created = job_get(job_id=created.job_id)
    return Status(201, job_payload(created))
