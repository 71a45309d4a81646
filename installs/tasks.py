"""Celery tasks of the installs room: they load a row and call a service."""

from __future__ import annotations

import logging

from celery import shared_task

log = logging.getLogger(__name__)


@shared_task(name="installs.run_job")
def run_job(job_id: int) -> None:
    from installs.jobs import job_run

    job_run(job_id=job_id)


@shared_task(name="installs.check_updates")
def check_updates() -> None:
    """Beat: look for a newer commit of every package installed from git, and finish what a
    killed install left behind."""
    from installs.models import Installation
    from installs.remote import update_record
    from installs.services import installs_recover

    installs_recover()
    for package_id in Installation.objects.filter(kind="git").values_list("package_id", flat=True):
        try:
            update_record(package_id=package_id)
        except Exception:
            log.exception("update check of %s failed", package_id)
