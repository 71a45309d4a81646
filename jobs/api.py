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
from core.errors import Forbidden, NotFound
from core.schemas import errors, page
from jobs.events import job_payload
from jobs.models import RuntimeJob
from jobs.schemas import JobListFilter, JobListOut, JobOut
from jobs.selectors import job_get, session_can_manage, session_get, session_jobs
from jobs.services import job_can_manage, job_cancel, job_retry

router = Router(tags=["jobs"], auth=hub_auth)

FORBIDDEN = "only staff and the session's owner may see its jobs"


def _job(job_id: str) -> RuntimeJob:
    job = job_get(job_id=job_id)
    if job is None:
        raise NotFound(f"job {job_id} does not exist")
    return job


@router.get("/sessions/{session_id}/jobs", response={200: JobListOut, **errors(401, 403, 404, 422)})
def list_session_jobs(
    request: HttpRequest, session_id: uuid.UUID, filters: Query[JobListFilter]
) -> Any:
    """The session's jobs, newest first; ?state= filters, ?limit=&offset= page."""
    session = session_get(session_id=session_id)
    if session is None:
        raise NotFound(f"session {session_id} does not exist")
    if not session_can_manage(user=request.user, session=session):
        raise Forbidden(FORBIDDEN)
    jobs = session_jobs(session_id=session_id, state=filters.state)
    rows = jobs[filters.offset : filters.offset + filters.limit]
    return page(
        [job_payload(j) for j in rows],
        count=jobs.count(),
        limit=filters.limit,
        offset=filters.offset,
    )


@router.get("/jobs/{job_id}", response={200: JobOut, **errors(401, 403, 404, 422)})
def get_job(request: HttpRequest, job_id: str) -> Any:
    job = _job(job_id)
    if not job_can_manage(user=request.user, job=job):
        raise Forbidden(FORBIDDEN)
    return job_payload(job)


@router.post("/jobs/{job_id}/cancel", response={200: JobOut, **errors(401, 403, 404, 409, 422)})
def cancel_job(request: HttpRequest, job_id: str) -> Any:
    """Cancel a queued, claimed or running job; 409 runtime_job_not_cancellable otherwise."""
    return job_payload(job_cancel(job=_job(job_id), actor=request.user))


@router.post(
    "/jobs/{job_id}/retry",
    response={201: JobOut, **errors(401, 403, 404, 409, 422, 429)},
    throttle=[turn_throttle],
)
def retry_job(request: HttpRequest, job_id: str) -> Any:
    """Retry a job in a failure state as a new job; 409 runtime_job_not_retryable otherwise."""
    created = job_retry(job=_job(job_id), actor=request.user)
    return Status(201, job_payload(job_get(job_id=created.job_id)))
