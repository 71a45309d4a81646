"""Celery tasks of the jobs app: each takes an id, and the services (or the worker) do the work.

No task retries itself on failure: a failed job is never replayed on its own (a paid model call
must not run twice); a person may retry it, which makes a new job.
"""

from __future__ import annotations

import functools
import os
from typing import Any

from celery import shared_task

from jobs.services import job_reap_orphans, job_resend_lost, job_time_out_queued
from jobs.worker import job_execute


@shared_task(name="jobs.run_job", bind=True, ignore_result=True, acks_late=True)
def run_job(self, job_pk: int) -> str:  # type: ignore[no-untyped-def]
    owner = f"{self.request.hostname or 'worker'}:{os.getpid()}"
    return job_execute(job_pk=job_pk, owner=owner)


@shared_task(name="jobs.reap_orphans", ignore_result=True)
def reap_orphans() -> int:
    """Periodic (Celery beat): orphan jobs whose lease expired, time out queued jobs past their
    maxQueueMs, re-send lost messages."""
    reaped = job_reap_orphans()
    job_time_out_queued()
    job_resend_lost()
    return len(reaped)


@shared_task(name="jobs.noop", ignore_result=True)
def noop(counter_key: str = "") -> None:
    """A bare task (one Redis INCR when given a key): the floor bench/jobs.py compares with."""
    if counter_key:
        _counter_client().incr(counter_key)


@functools.cache
def _counter_client() -> Any:
    import redis
    from django.conf import settings

    return redis.Redis.from_url(settings.REDIS_URL)
