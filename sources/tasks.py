"""Celery tasks of the sources app: each takes an id (or nothing), and calls a service."""

from __future__ import annotations

from celery import shared_task
from django.db import transaction

from sources import services

# Beat runs sources.dispatch_jobs every 5 s (config/settings.py, CELERY_BEAT_SCHEDULE).


@shared_task(name="sources.dispatch_jobs", ignore_result=True)
def source_jobs_dispatch() -> int:
    return len(services.source_jobs_dispatch(send=source_job_run_send))


@shared_task(name="sources.run_job", ignore_result=True, acks_late=True)
def source_job_run(run_id: int) -> str:
    run = services.source_job_run_execute(run_id=run_id)
    return run.outcome if run is not None else "gone"


def source_job_run_send(run_id: int) -> None:
    """Send a new run to a worker once the transaction that created it commits."""
    transaction.on_commit(lambda: source_job_run.delay(run_id))
