"""What a worker does with one delivery of a job's message: claim, start, run, commit.

The claim and every later step are conditional transitions (jobs.services.job_transition), so a
duplicate delivery or a racing reaper changes nothing. Apart from jobs/services.py, which holds
the state machine and what turns and people ask of jobs (enqueue, cancel, retry, the reaper):
a reader of the worker's path follows this file from job_execute down.
"""

from __future__ import annotations

import logging
import os
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from django.db import connection, transaction
from django.utils import timezone

from core.sql import Table, read_by_pk, update_returning
from eventlog.services import events_batched
from jobs import services
from jobs.errors import JobStopped, RunnerNotFound
from jobs.models import UNFINISHED_STATES, JobReason, JobState, RuntimeJob
from jobs.runners import JobContext, RunResult, commit_check, resolve_runner, staleness_check
from jobs.services import (
    effective_execution_ms,
    execution_deadline_error,
    job_transition,
    lease_seconds,
    order_retry_seconds,
    queue_deadline_error,
    queue_deadline_passed,
    worker_name,
)

log = logging.getLogger(__name__)

S = JobState


def _own_transition(
    job: RuntimeJob, owner: str, from_state: str, to_state: str, **fields: Any
) -> bool:
    """A worker's transition of the job it holds: only while the lease is still its own."""
    return job_transition(
        job_pk=job.pk,
        job=job,
        from_state=from_state,
        to_state=to_state,
        lease_owner_is=owner,
        **fields,
    )


# --- Claim and run ----------------------------------------------------------------------------


class Claim:
    CLAIMED = "claimed"
    WAITING = "waiting"  # an earlier job of the same key is unfinished
    LOST = "lost"  # not queued any more: a duplicate delivery, a cancel, a deadline


def job_claim(*, job_pk: int, owner: str, now: datetime | None = None) -> str:
    """Claim a queued job for one worker: one conditional UPDATE, so only one claim can win.

    The same statement refuses while an earlier job of the same (session, plugin, runtime) is
    unfinished, which keeps the jobs of one key in order.
    """
    now = now or timezone.now()
    if _claim(job_pk=job_pk, owner=owner, now=now) is not None:
        return Claim.CLAIMED
    state = RuntimeJob.objects.filter(pk=job_pk).values_list("state", flat=True).first()
    return Claim.WAITING if state == S.QUEUED else Claim.LOST


def _claim(*, job_pk: int, owner: str, now: datetime) -> RuntimeJob | None:
    """queued -> claimed (job_claim's UPDATE), returning the claimed row: the claim is also the
    delivery's read of its job, one statement instead of two. None when nothing was claimed."""
    jobs, earlier = Table(RuntimeJob), Table(RuntimeJob, alias="earlier")
    col = jobs.col
    unfinished = ", ".join(["%s"] * len(UNFINISHED_STATES))
    same_key = " AND ".join(
        f"{earlier.col(name)} = {jobs}.{col(name)}"
        for name in ("session", "plugin_id", "runtime_id")
    )
    assign = (
        f"{col('state')} = %s, {col('claimed_at')} = %s, {col('updated_at')} = %s, "
        f"{col('lease_owner')} = %s, {col('lease_expires_at')} = %s"
    )
    where = (
        f"{col('id')} = %s AND {col('state')} = %s AND NOT EXISTS ("
        f"SELECT 1 FROM {earlier} WHERE {same_key} "
        f"AND {earlier.col('id')} < {jobs}.{col('id')} "
        f"AND {earlier.col('state')} IN ({unfinished}))"
    )
    params = [
        S.CLAIMED,
        jobs.value("claimed_at", now),
        jobs.value("updated_at", now),
        owner,
        jobs.value("lease_expires_at", now + timedelta(seconds=lease_seconds())),
        job_pk,
        S.QUEUED,
        *[str(state) for state in UNFINISHED_STATES],
    ]
    no_flush_wait = _NO_FLUSH_WAIT.get(connection.vendor, "")
    return update_returning(RuntimeJob, assign, where, params, also=no_flush_wait)


# PostgreSQL: the claim's transaction commits without waiting for its WAL to reach the disk.
# It is a job's first commit of two, and the flush it would wait for is most of a trivial job's
# cost. If the database crashed right after it, the claim could be lost and the job be back in
# `queued`; the worker's later conditional updates then match nothing, so it saves nothing, and
# the job's message (acknowledged only after the task) or the reaper's re-send runs it again.
# The final commit, which holds the job's writes and its success, always waits for the disk.
# Set in the claim's RETURNING list (evaluated only when the claim changed the row): one round
# trip less than a SET LOCAL of its own. SQLite in WAL mode with synchronous=NORMAL already
# commits without a flush.
_NO_FLUSH_WAIT = {"postgresql": "set_config('synchronous_commit', 'off', true)"}


@dataclass
class _Lease:
    job: RuntimeJob
    owner: str
    ctx: JobContext
    next_renew: float  # time.monotonic()


class _LeaseKeeper:
    """One thread per worker process that renews the leases of the jobs running in it, and
    enforces their execution deadlines.

    At a deadline it marks the job timed out itself and signals the runner to stop, so the row is
    right (and settle waiters are released) even if the runner ignores the signal. One long-lived
    thread rather than one per job: starting and joining a thread per job cost more than a
    trivial job's whole database work.
    """

    def __init__(self) -> None:
        self._cond = threading.Condition()
        self._leases: dict[int, _Lease] = {}
        self._pid: int | None = None
        self._wake_at: float | None = None  # when the keeper wakes up next; None: not waiting
        self._tending = False  # True while the keeper works on due leases (and its connection)

    def add(self, *, job: RuntimeJob, owner: str, ctx: JobContext) -> None:
        with self._cond:
            if self._pid != os.getpid():  # first use in this (possibly forked) process
                self._pid = os.getpid()
                threading.Thread(target=self._run, name="job-lease-keeper", daemon=True).start()
            lease = _Lease(job, owner, ctx, time.monotonic() + lease_seconds() / 3)
            self._leases[job.pk] = lease
            first = min(lease.next_renew, ctx.deadline or lease.next_renew)
            # Wake the keeper only when this lease needs it sooner than it planned to wake:
            # most jobs finish long before their first renewal.
            if self._wake_at is None or first < self._wake_at:
                self._cond.notify()

    def remove(self, job_pk: int) -> None:
        with self._cond:
            self._leases.pop(job_pk, None)

    def wait_idle(self, timeout: float = 10.0) -> bool:
        """Wait until the keeper holds no database work in hand; False on timeout.

        A job that ended at its deadline may still be in the keeper's hands for a moment (both
        saw the deadline): the test suite waits here between tests, so that moment cannot
        overlap the next test's transaction on the shared in-memory SQLite database.
        """
        with self._cond:
            return self._cond.wait_for(lambda: not self._tending, timeout)

    def _run(self) -> None:
        while True:
            with self._cond:
                now = time.monotonic()
                due = [
                    lease
                    for lease in self._leases.values()
                    if lease.next_renew <= now
                    or (lease.ctx.deadline is not None and lease.ctx.deadline <= now)
                ]
                if not due:
                    moments = [lease.next_renew for lease in self._leases.values()] + [
                        lease.ctx.deadline
                        for lease in self._leases.values()
                        if lease.ctx.deadline is not None
                    ]
                    self._wake_at = min(moments) if moments else float("inf")
                    self._cond.wait(timeout=max(0.0, self._wake_at - now) if moments else None)
                    self._wake_at = None
                    continue
                for lease in due:
                    lease.next_renew = now + lease_seconds() / 3
                self._tending = True
            try:
                for lease in due:
                    with self._cond:
                        if lease.job.pk not in self._leases:
                            continue  # the job ended meanwhile: nothing to renew or stop
                    self._tend(lease)
            except Exception:
                log.exception("the lease keeper failed")
            finally:
                connection.close()  # this thread's own connection; renewals are rare
                with self._cond:
                    self._tending = False
                    self._cond.notify_all()

    def _tend(self, lease: _Lease) -> None:
        ctx = lease.ctx
        if ctx.deadline is not None and time.monotonic() >= ctx.deadline:
            self.remove(lease.job.pk)
            ctx.stop_reason = "execution deadline reached"
            job_transition(
                job_pk=lease.job.pk,
                job=lease.job,
                from_state=S.RUNNING,
                to_state=S.TIMED_OUT,
                reason=JobReason.EXECUTION_DEADLINE,
                error=execution_deadline_error(lease.job),
                lease_owner_is=lease.owner,
            )
            ctx.stop_event.set()
            return
        now = timezone.now()
        renewed = RuntimeJob.objects.filter(
            pk=lease.job.pk, state__in=(S.RUNNING, S.COMMITTING), lease_owner=lease.owner
        ).update(lease_expires_at=now + timedelta(seconds=lease_seconds()), updated_at=now)
        if not renewed:
            self.remove(lease.job.pk)
            ctx.stop_reason = "the job was cancelled or lost its lease"
            ctx.stop_event.set()


_keeper = _LeaseKeeper()


def _error_text(exc: BaseException) -> str:
    text = str(exc) or type(exc).__name__
    return f"{type(exc).__name__}: {text}"[:4000]


def job_execute(*, job_pk: int, owner: str | None = None) -> str:
    """Run one delivery of a job's message; returns what happened (for logs and tests).

    Safe to call any number of times for the same job: only the delivery that claims it runs it.
    """
    owner = owner or worker_name()
    now = timezone.now()
    # Claim, staleness check and start are one transaction: a worker that dies before the job
    # starts leaves it queued (and its message goes back to the broker), never half-claimed.
    with transaction.atomic():
        outcome, job, runner = _claim_and_start(job_pk=job_pk, owner=owner, now=now)
    if outcome == Claim.WAITING and job is not None:
        # Look again soon; the predecessor also wakes this job up when it finishes.
        services.send_run_job(job=job, countdown=order_retry_seconds())
    if runner is None or job is None:
        return outcome
    return _run_started(job=job, owner=owner, runner=runner)


def _claim_and_start(
    *, job_pk: int, owner: str, now: datetime
) -> tuple[str, RuntimeJob | None, Callable[..., RunResult | None] | None]:
    """(what happened, the job, its runner when it started)."""
    job = _claim(job_pk=job_pk, owner=owner, now=now)
    if job is None:
        return _not_claimed(job_pk=job_pk, now=now)
    if queue_deadline_passed(job, now):
        _own_transition(
            job,
            owner,
            S.CLAIMED,
            S.TIMED_OUT,
            reason=JobReason.QUEUE_DEADLINE,
            error=queue_deadline_error(job),
        )
        return "timed_out", job, None
    stale = staleness_check(job)
    if stale is not None:
        _own_transition(job, owner, S.CLAIMED, S.STALE, reason=stale.reason, error=stale.message)
        return "stale", job, None
    try:
        runner = resolve_runner(job.runner)
    except RunnerNotFound as exc:
        _own_transition(job, owner, S.CLAIMED, S.FAILED, error=exc.message)
        return "failed", job, None
    if not _own_transition(job, owner, S.CLAIMED, S.RUNNING, started_at=timezone.now()):
        return "lost", job, None
    return S.RUNNING, job, runner


def _not_claimed(*, job_pk: int, now: datetime) -> tuple[str, RuntimeJob | None, None]:
    """Why a delivery claimed nothing: the job is gone, not queued any more (a duplicate
    delivery, a cancel), past its queue deadline (timed out here, even while it waits for an
    earlier job of its key), or waiting for that earlier job."""
    job = read_by_pk(RuntimeJob, job_pk)  # without compiling a queryset per delivery
    if job is None:
        return "missing", None, None
    if job.state != S.QUEUED:
        return "duplicate", job, None
    if queue_deadline_passed(job, now):
        job_transition(
            job_pk=job.pk,
            job=job,
            from_state=S.QUEUED,
            to_state=S.TIMED_OUT,
            reason=JobReason.QUEUE_DEADLINE,
            error=queue_deadline_error(job),
        )
        return "timed_out", job, None
    return Claim.WAITING, job, None


def _run_started(*, job: RuntimeJob, owner: str, runner: Callable[..., RunResult | None]) -> str:
    ctx = JobContext(
        job_id=str(job.job_id), deadline=time.monotonic() + effective_execution_ms(job) / 1000
    )
    _keeper.add(job=job, owner=owner, ctx=ctx)
    try:
        try:
            outcome = runner(job, ctx)
        except (JobStopped, _soft_time_limit()) as exc:
            return _stopped(job=job, owner=owner, ctx=ctx, exc=exc)
        except Exception as exc:
            log.info("job %s failed: %s", job.pk, exc)
            _own_transition(job, owner, S.RUNNING, S.FAILED, error=_error_text(exc))
            return "failed"
        if ctx.should_stop():
            return _stopped(job=job, owner=owner, ctx=ctx, exc=None)
        return _commit(job=job, owner=owner, outcome=outcome, ctx=ctx)
    finally:
        _keeper.remove(job.pk)


def _soft_time_limit() -> type[BaseException]:
    from celery.exceptions import SoftTimeLimitExceeded

    return SoftTimeLimitExceeded


def _stopped(*, job: RuntimeJob, owner: str, ctx: JobContext, exc: BaseException | None) -> str:
    """The runner stopped early: a deadline (time it out here if the lease keeper has not yet),
    a cancel or lost lease (the row already says so), or on its own (failed). Its writes are
    dropped in every case."""
    past_deadline = ctx.deadline is not None and time.monotonic() >= ctx.deadline
    if past_deadline or isinstance(exc, _soft_time_limit()):
        _own_transition(
            job,
            owner,
            S.RUNNING,
            S.TIMED_OUT,
            reason=JobReason.EXECUTION_DEADLINE,
            error=execution_deadline_error(job),
        )
        return "timed_out"
    if not ctx.stop_event.is_set():
        # Nobody asked it to stop (no cancel, no lost lease): the runner gave up on its own.
        _own_transition(
            job,
            owner,
            S.RUNNING,
            S.FAILED,
            error=_error_text(exc) if exc is not None else "the runner stopped early",
        )
        return "failed"
    return "stopped"


class _TurnRunning(Exception):
    """Raised inside a commit transaction to roll it back: an action holds the session."""


# A commit that finds the session's turn lock taken looks again after this long, doubling up to
# the second figure: an action's own commit is quick, a model call in it may not be.
TURN_LOCK_RETRY_SECONDS = (0.02, 0.5)


def _commit(*, job: RuntimeJob, owner: str, outcome: RunResult | None, ctx: JobContext) -> str:
    """Commit the runner's writes under the session lock: while a turn, manual run or RPC
    action holds the session's turn lock, wait (the job stays `running`, its deadline and a
    cancel still apply), then commit before the next one starts."""
    wait, longest = TURN_LOCK_RETRY_SECONDS
    while True:
        try:
            return _commit_once(job=job, owner=owner, outcome=outcome)
        except _TurnRunning:
            try:
                ctx.sleep(wait)
            except JobStopped as exc:
                return _stopped(job=job, owner=owner, ctx=ctx, exc=exc)
            wait = min(wait * 2, longest)


def _commit_once(*, job: RuntimeJob, owner: str, outcome: RunResult | None) -> str:
    """running -> committing -> succeeded, with the runner's writes: one transaction.

    The row lock the first UPDATE takes (on SQLite, the write lock) holds off a cancel, the
    lease keeper and the reaper until the writes and the success are committed, or rolled back
    together, in which case the job is `running` again (and fails below, or waits for the
    session's turn lock and tries again).
    """
    result = outcome.result if isinstance(outcome, RunResult) else None
    try:
        # Its events (the background turn's, then the job's status) are written together at
        # the end, while the session row lock taken by commit_check is held.
        with transaction.atomic(), events_batched():
            if not _own_transition(job, owner, S.RUNNING, S.COMMITTING):
                return "stopped"  # timed out, cancelled or reaped while the runner finished
            # Re-checked inside the commit, under the session row lock: a session ended or an
            # approval revoked while the job ran still wins.
            stale, turn_running = commit_check(job)
            if stale is not None:
                _own_transition(
                    job, owner, S.COMMITTING, S.STALE, reason=stale.reason, error=stale.message
                )
                return "stale"
            if turn_running:
                raise _TurnRunning
            if isinstance(outcome, RunResult) and outcome.commit is not None:
                outcome.commit()
            # Cannot miss: this transaction has held the row since it set `committing`.
            _own_transition(job, owner, S.COMMITTING, S.SUCCEEDED, result=result)
    except _TurnRunning:
        raise
    except Exception as exc:
        log.info("job %s failed to commit: %s", job.pk, exc)
        _own_transition(job, owner, S.RUNNING, S.FAILED, error=_error_text(exc))
        return "failed"
    return "succeeded"
