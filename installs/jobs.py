"""Install jobs: long work (fetch, unpack, validate, write) run by a Celery worker.

The row is the truth: a page sends the job, the worker claims it (queued -> running, one row
changed or nothing to do), records each step and its progress, and ends it done (with the
answer the API would give) or failed (naming the step and why).
"""

from __future__ import annotations

from typing import Any

from celery import current_app
from django.conf import settings
from django.contrib.auth import get_user_model
from django.db import transaction
from django.utils import timezone

from installs.models import InstallJob
from installs.services import InstallProblem

RUN_JOB_TASK = "installs.run_job"


def job_create(*, kind: str, params: dict[str, Any], actor: Any, send: bool = True) -> InstallJob:
    job = InstallJob.objects.create(
        kind=kind, params=params, created_by=actor if getattr(actor, "pk", None) else None
    )
    if send:
        # By name, so the task module (which calls job_run) is not imported from here.
        # On the queue deployments give jobs (COVEL_JOBS_QUEUE; None is Celery's default).
        queue = settings.COVEL_JOBS_QUEUE or None
        transaction.on_commit(
            lambda: current_app.tasks[RUN_JOB_TASK].apply_async(args=[job.pk], queue=queue)
        )
    return job


def _progress(job_id: int):  # noqa: ANN202
    def report(step: str, percent: int) -> None:
        InstallJob.objects.filter(pk=job_id).update(step=step, progress=percent)

    return report


def job_run(*, job_id: int) -> InstallJob | None:
    """Claim and run one job; a second delivery of the same message finds it claimed."""
    claimed = InstallJob.objects.filter(pk=job_id, state=InstallJob.State.QUEUED).update(
        state=InstallJob.State.RUNNING, started_at=timezone.now(), step="start", progress=5
    )
    if claimed != 1:
        return None
    job = InstallJob.objects.get(pk=job_id)
    actor = get_user_model().objects.filter(pk=job.created_by_id).first()
    report = _progress(job.pk)
    try:
        result = _dispatch(job, actor, report)
    except InstallProblem as exc:
        step = exc.details.get("step") or InstallJob.objects.get(pk=job.pk).step
        InstallJob.objects.filter(pk=job.pk).update(
            state=InstallJob.State.FAILED,
            error=f"{step}: {exc.message}",
            step=step,
            finished_at=timezone.now(),
            result={"status": exc.status, "code": exc.code, "details": exc.details},
        )
    except Exception as exc:  # a bug must still end the job with a reason
        step = InstallJob.objects.get(pk=job.pk).step
        InstallJob.objects.filter(pk=job.pk).update(
            state=InstallJob.State.FAILED,
            error=f"{step}: {type(exc).__name__}: {exc}",
            finished_at=timezone.now(),
        )
    else:
        InstallJob.objects.filter(pk=job.pk).update(
            state=InstallJob.State.DONE,
            step="done",
            progress=100,
            result=result,
            finished_at=timezone.now(),
        )
    return InstallJob.objects.get(pk=job.pk)


def _dispatch(job: InstallJob, actor: Any, report: Any) -> dict[str, Any]:
    from installs import remote, tokens

    params = job.params
    if job.kind == InstallJob.Kind.INSTALL:
        if "tokens" in params:
            return remote.batch_install(tokens_in=params["tokens"], actor=actor)
        if tokens.action_of(params["token"]) == "world-install":  # one world of a collection
            return remote.batch_install(tokens_in=[params["token"]], actor=actor)
        return remote.github_install(token=params["token"], actor=actor, progress=report)
    if job.kind == InstallJob.Kind.UPDATE:
        return remote.update_apply(token=params["token"], actor=actor, progress=report)
    if job.kind == InstallJob.Kind.CHECK:
        return remote.update_record(package_id=params["package_id"])
    raise InstallProblem(f"unknown job kind {job.kind}")
