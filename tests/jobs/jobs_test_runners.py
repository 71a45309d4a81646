"""Runners the job tests register (settings.COVEL_JOB_RUNNERS) in the test and worker processes.

Each writes to files under job.inputs["dir"], so the test sees what ran where and when:
runs.log gets one line per run start, commits.log one line per commit (with the wall-clock time).
"""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any

from jobs.runners import JobContext, RunResult


def _log(job: Any, name: str, text: str) -> None:
    folder = Path(job.inputs["dir"])
    folder.mkdir(parents=True, exist_ok=True)
    with open(folder / name, "a", encoding="utf-8") as handle:
        handle.write(text + "\n")
        handle.flush()
        os.fsync(handle.fileno())


def sleep_and_write(job: Any, ctx: JobContext) -> RunResult:
    """Sleeps inputs["sleep_ms"] (stopping early when told), then commits a line."""
    key = job.inputs.get("label", str(job.job_id))
    _log(job, "runs.log", f"{key} start {time.time():.6f} {os.getpid()}")
    ms = int(job.inputs.get("sleep_ms", 0))
    if job.inputs.get("cooperative", True):
        ctx.sleep(ms / 1000)
    else:
        time.sleep(ms / 1000)  # ignores the stop signal: only Celery's soft limit stops it
    _log(job, "runs.log", f"{key} end {time.time():.6f} {os.getpid()}")

    def commit() -> None:
        # The file line shows when; the row counts how often. A worker killed between the two
        # leaves the line without the row (its transaction rolled back): only the row is an
        # effect that takes place exactly once.
        _log(job, "commits.log", f"{key} {time.time():.6f}")
        _count_commit(job, key)

    return RunResult(result={"slept_ms": ms, "label": key}, commit=commit)


def _count_commit(job: Any, key: str) -> None:
    import uuid

    from sessions.models import PluginData

    PluginData.objects.create(
        session_id=job.session_id,
        plugin_id="jobs-test",
        namespace="commits",
        key=f"{key} {uuid.uuid4()}",
        value=key,
    )


def committed_counts(session_id: Any) -> dict[str, int]:
    """How many times each label's commit took effect in the database."""
    from sessions.models import PluginData

    counts: dict[str, int] = {}
    for label in PluginData.objects.filter(
        session_id=session_id, plugin_id="jobs-test"
    ).values_list("value", flat=True):
        counts[label] = counts.get(label, 0) + 1
    return counts


def fail(job: Any, ctx: JobContext) -> RunResult:
    _log(job, "runs.log", f"{job.inputs.get('label', job.job_id)} start {time.time():.6f}")
    raise RuntimeError("the test runner failed on purpose")


def noop(job: Any, ctx: JobContext) -> None:
    return None


TEST_RUNNERS = {
    "sleep": "jobs_test_runners.sleep_and_write",
    "fail": "jobs_test_runners.fail",
    "noop": "jobs_test_runners.noop",
}


def revoke_then_write(job: Any, ctx: JobContext) -> RunResult:
    """Revokes its own package's approval while running, as staff might at that moment."""
    from django.contrib.auth import get_user_model

    from approvals.selectors import approval_current
    from approvals.services import approval_decide

    staff = get_user_model().objects.get(pk=job.inputs["revoke_as"])
    request = approval_current(package_key=job.plugin_id)
    approval_decide(request_id=request.pk, decision="revoke", actor=staff, note="mid-run")

    def commit() -> None:
        _log(job, "commits.log", "should never be written")

    return RunResult(result={}, commit=commit)


def gives_up(job: Any, ctx: JobContext) -> RunResult:
    """Raises JobStopped although nobody asked it to stop."""
    from jobs.errors import JobStopped

    raise JobStopped("the runner decided to stop")
