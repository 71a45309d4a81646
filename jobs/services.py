"""Writes of the jobs app: the state machine, enqueue, claim, run, cancel, retry, reap.

Every state change goes through job_transition: a conditional UPDATE ... WHERE state = <expected>
that changes exactly one row or nothing. Two workers (or a duplicate broker delivery) racing for
the same job therefore cannot both win, and the row stays the single truth.
"""

from __future__ import annotations

import logging
import os
import socket
import threading
import time
import uuid
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from django.conf import settings
from django.db import connection, transaction
from django.db.models import Exists, OuterRef, Q
from django.utils import timezone

from core.sql import Table, insert, read_by_pk
from eventlog.services import event_append, events_batched
from jobs import notify
from jobs.errors import (
    InvalidTransition,
    JobForbidden,
    JobNotCancellable,
    JobNotRetryable,
    JobOptionsError,
    JobStopped,
    RunnerNotFound,
)
from jobs.events import job_status_event, runtime_deferred_event
from jobs.models import (
    CANCELLABLE_STATES,
    DEFAULT_SETTLE_WAIT_MS,
    FAILURE_STATES,
    LEASED_STATES,
    MAX_SETTLE_WAIT_MS,
    TERMINAL_STATES,
    UNFINISHED_STATES,
    JobReason,
    JobState,
    RuntimeJob,
)
from jobs.runners import (
    JobContext,
    RunResult,
    commit_check,
    resolve_runner,
    staleness_check,
)
from jobs.runners import package_version as current_version

log = logging.getLogger(__name__)

S = JobState

# The whole state machine. Anything not listed here raises InvalidTransition.
ALLOWED_TRANSITIONS: dict[str, frozenset[str]] = {
    S.QUEUED: frozenset({S.CLAIMED, S.TIMED_OUT, S.CANCELLED, S.STALE}),
    S.CLAIMED: frozenset({S.RUNNING, S.TIMED_OUT, S.CANCELLED, S.STALE, S.FAILED, S.ORPHANED}),
    S.RUNNING: frozenset({S.COMMITTING, S.TIMED_OUT, S.CANCELLED, S.FAILED, S.ORPHANED}),
    S.COMMITTING: frozenset({S.SUCCEEDED, S.STALE, S.FAILED, S.ORPHANED}),
    S.SUCCEEDED: frozenset(),
    S.FAILED: frozenset(),
    S.TIMED_OUT: frozenset(),
    S.CANCELLED: frozenset(),
    S.STALE: frozenset(),
    S.ORPHANED: frozenset(),
}

# Soft limit: a little after the job's own deadline (the lease keeper marks it timed out at
# the deadline); hard limit: kill the pool process if the runner ignores the soft one.
SOFT_LIMIT_SLACK_S = 1.0
HARD_LIMIT_GRACE_S = 10.0


def _setting(name: str, default: Any) -> Any:
    return getattr(settings, name, default)


def lease_seconds() -> float:
    # A worker renews its lease every third of it; three missed renewals make the job orphaned.
    return float(_setting("COVEL_JOB_LEASE_SECONDS", 30))


def execution_ceiling_ms() -> int:
    # The longest any job may run, kept below the Redis visibility timeout (3600 s) so Redis
    # never redelivers the message of a job that is still running.
    return int(_setting("COVEL_JOB_EXECUTION_CEILING_MS", 1_800_000))


def resend_after_seconds() -> float:
    # A queued job nobody claimed for this long (and then twice as long, and so on) gets its
    # message sent again: a broker may lose one (the folder broker can hand a reader a file
    # still being written), and a duplicate delivery is harmless.
    return float(_setting("COVEL_JOB_RESEND_AFTER_SECONDS", 60))


def order_retry_seconds() -> float:
    # How soon a job whose predecessor (same session, plugin and runtime) is unfinished looks
    # again; the predecessor also wakes it the moment it finishes.
    return float(_setting("COVEL_JOB_ORDER_RETRY_SECONDS", 1.0))


def jobs_queue() -> str | None:
    """The Celery queue of job messages: a deployment may give jobs their own workers.

    None means Celery's default queue. The environment variable lets worker processes and
    the web process agree on it before the setting exists in config/settings.py.
    """
    return _setting("COVEL_JOBS_QUEUE", None) or os.environ.get("COVEL_JOBS_QUEUE") or None


def worker_name() -> str:
    return f"{socket.gethostname()}:{os.getpid()}"


# --- The state machine ------------------------------------------------------------------------


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


def job_transition(
    *,
    job_pk: int,
    from_state: str,
    to_state: str,
    reason: str = "",
    error: str = "",
    lease_owner_is: str | None = None,
    lease_expired_before: datetime | None = None,
    now: datetime | None = None,
    job: RuntimeJob | None = None,
    **fields: Any,
) -> bool:
    """Move one job from from_state to to_state; True when this call made the change.

    The UPDATE only matches while the row is still in from_state (and, when given, still
    leased by lease_owner_is / its lease expired before lease_expired_before), so of two racing
    callers exactly one wins; the loser gets False and must re-read the row.
    `job`, when the caller has the row in hand, spares a read for the notification.
    """
    if to_state not in ALLOWED_TRANSITIONS.get(from_state, frozenset()):
        raise InvalidTransition(f"a runtime job cannot go from {from_state} to {to_state}")
    now = now or timezone.now()
    values: dict[str, Any] = {"state": to_state, "updated_at": now, **fields}
    if reason:
        values["reason"] = reason
    if error:
        values["error"] = error
    if to_state in TERMINAL_STATES:
        values["finished_at"] = now
        values["lease_expires_at"] = None
    conditions: list[tuple[str, Any]] = [("id", job_pk), ("state", from_state)]
    if lease_owner_is is not None:
        conditions.append(("lease_owner", lease_owner_is))
    # The state and its event commit together (no savepoint when the caller has a transaction).
    with transaction.atomic(savepoint=False):
        changed = _conditional_update(
            values=values, conditions=conditions, expired_before=lease_expired_before
        )
        if changed and to_state in STATES_ANNOUNCED:
            _announce(job_pk=job_pk, job=job, values=values)
    if changed and to_state in TERMINAL_STATES:
        # After the commit, so a waiter that wakes up and re-reads the row sees the new state.
        key = _key(job) if job is not None else None
        transaction.on_commit(lambda: _after_terminal(job_pk=job_pk, state=to_state, key=key))
    return changed == 1


# The states the session's event stream hears of (job-status.updated). `claimed` and `committing`
# last a moment inside a worker's transaction: nobody outside the worker acts on them.
STATES_ANNOUNCED = frozenset({S.RUNNING, *TERMINAL_STATES})


def _announce(*, job_pk: int, job: RuntimeJob | None, values: dict[str, Any]) -> None:
    """Record job-status.updated on the job's session stream, with the values just written."""
    if job is None:
        job = RuntimeJob.objects.get(pk=job_pk)
    else:
        for name, value in values.items():
            setattr(job, name, value)
    event_append(
        session_id=job.session_id, type="job-status.updated", payload=job_status_event(job)
    )


def _conditional_update(
    *,
    values: dict[str, Any],
    conditions: list[tuple[str, Any]],
    expired_before: datetime | None = None,
) -> int:
    """UPDATE runtime_job SET ... WHERE <column = value> AND ...; the number of rows changed.

    Plain SQL on the hot path (a job makes several of these): the ORM spends more time
    compiling such a statement than the database spends running it. Values still go through
    each field's own conversion, so SQLite and PostgreSQL get what the ORM would send.
    """
    jobs = Table(RuntimeJob)
    sets = ", ".join(f"{jobs.col(name)} = %s" for name in values)
    where = [f"{jobs.col(name)} = %s" for name, _ in conditions]
    params = [jobs.value(name, value) for name, value in values.items()]
    params += [jobs.value(name, value) for name, value in conditions]
    if expired_before is not None:
        where.append(f"{jobs.col('lease_expires_at')} < %s")
        params.append(jobs.value("lease_expires_at", expired_before))
    with connection.cursor() as cursor:
        cursor.execute(f"UPDATE {jobs} SET {sets} WHERE {' AND '.join(where)}", params)
        return cursor.rowcount


def _key(job: RuntimeJob) -> dict[str, Any]:
    return {
        "job_id": job.job_id,
        "session_id": job.session_id,
        "plugin_id": job.plugin_id,
        "runtime_id": job.runtime_id,
        "settle": job.settle,
    }


def _after_terminal(*, job_pk: int, state: str, key: dict[str, Any] | None = None) -> None:
    row = key or (
        RuntimeJob.objects.filter(pk=job_pk)
        .values("job_id", "session_id", "plugin_id", "runtime_id", "settle")
        .first()
    )
    if row is None:
        return
    if row["settle"]:
        notify.publish_settled(session_id=row["session_id"], job_id=row["job_id"], state=state)
    _wake_successor(
        session_id=row["session_id"], plugin_id=row["plugin_id"], runtime_id=row["runtime_id"]
    )


def _wake_successor(*, session_id: uuid.UUID, plugin_id: str, runtime_id: str) -> None:
    """Deliver the next queued job of the same key now rather than at its next re-check."""
    jobs = Table(RuntimeJob)
    sql = (
        f"SELECT {jobs.col('id')}, {jobs.col('max_execution_ms')} FROM {jobs} "
        f"WHERE {jobs.col('session')} = %s AND {jobs.col('plugin_id')} = %s "
        f"AND {jobs.col('runtime_id')} = %s AND {jobs.col('state')} = %s "
        f"ORDER BY {jobs.col('id')} LIMIT 1"
    )
    session_param = jobs.value("session", session_id)
    with connection.cursor() as cursor:
        cursor.execute(sql, [session_param, plugin_id, runtime_id, str(S.QUEUED)])
        row = cursor.fetchone()
    if row is not None:
        try:
            send_run_job(job=RuntimeJob(pk=row[0], max_execution_ms=row[1]))
        except Exception:  # the periodic re-check still delivers it
            log.exception("could not wake job %s", row[0])


# --- Enqueue ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class JobOptions:
    settle: bool = False
    max_settle_wait_ms: int = DEFAULT_SETTLE_WAIT_MS
    max_queue_ms: int | None = None
    max_execution_ms: int | None = None


def job_options_from_schedule(detached: Any) -> JobOptions:
    """The options of a runtime's `schedule.detached` (true or an object), as the manifest says.

    maxSettleWaitMs defaults to 60000 and is capped at 120000.
    """
    if not isinstance(detached, dict):
        return JobOptions()
    settle = bool(detached.get("settle", False))
    wait = detached.get("maxSettleWaitMs")
    return job_options_clean(
        settle=settle,
        max_settle_wait_ms=wait,
        max_queue_ms=detached.get("maxQueueMs"),
        max_execution_ms=detached.get("maxExecutionMs"),
    )


def _positive(name: str, value: Any) -> int | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise JobOptionsError(f"{name} must be a positive integer of milliseconds, not {value!r}")
    return value


def job_options_clean(
    *,
    settle: bool = False,
    max_settle_wait_ms: int | None = None,
    max_queue_ms: int | None = None,
    max_execution_ms: int | None = None,
) -> JobOptions:
    wait = _positive("maxSettleWaitMs", max_settle_wait_ms)
    return JobOptions(
        settle=settle,
        max_settle_wait_ms=min(wait or DEFAULT_SETTLE_WAIT_MS, MAX_SETTLE_WAIT_MS),
        max_queue_ms=_positive("maxQueueMs", max_queue_ms),
        max_execution_ms=_positive("maxExecutionMs", max_execution_ms),
    )


def job_enqueue(
    *,
    session_id: uuid.UUID,
    plugin_id: str,
    runtime_id: str,
    source_turn: str = "",
    inputs: dict[str, Any] | None = None,
    options: JobOptions | None = None,
    runner: str = "runtime",
    package_version: str | None = None,
    retry_of: RuntimeJob | None = None,
    requested_by: Any = None,
) -> RuntimeJob:
    """Create a queued job inside the caller's transaction; Celery hears of it after the commit.

    A source turn that rolls back therefore queues nothing, and the worker never receives the
    id of a row it cannot see yet.
    """
    options = options or JobOptions()
    now = timezone.now()
    job = RuntimeJob(
        session_id=session_id,
        plugin_id=plugin_id,
        runtime_id=runtime_id,
        runner=runner,
        source_turn=str(source_turn or ""),
        inputs=inputs or {},
        package_version=current_version(plugin_id) if package_version is None else package_version,
        settle=options.settle,
        max_settle_wait_ms=options.max_settle_wait_ms,
        max_queue_ms=options.max_queue_ms,
        max_execution_ms=options.max_execution_ms,
        attempt=(retry_of.attempt + 1) if retry_of is not None else 1,
        retry_of=retry_of,
        requested_by=requested_by if getattr(requested_by, "pk", None) else None,
        created_at=now,
        updated_at=now,
        sent_at=now,
    )
    insert(job)  # RuntimeJob.objects.create without compiling an insert per job
    event_append(
        session_id=session_id, type="runtime.deferred", payload=runtime_deferred_event(job)
    )
    transaction.on_commit(lambda: send_run_job(job=job))
    return job


def effective_execution_ms(job: RuntimeJob) -> int:
    ceiling = execution_ceiling_ms()
    return min(job.max_execution_ms or ceiling, ceiling)


def send_run_job(*, job: RuntimeJob, countdown: float | None = None) -> None:
    """Hand the job's id to Celery, with time limits derived from its maxExecutionMs."""
    from jobs.tasks import run_job

    soft = effective_execution_ms(job) / 1000 + SOFT_LIMIT_SLACK_S
    run_job.apply_async(
        args=[job.pk],
        countdown=countdown,
        soft_time_limit=soft,
        time_limit=soft + HARD_LIMIT_GRACE_S,
        # Deployments may give jobs their own queue (and workers); None is Celery's default.
        queue=jobs_queue(),
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
    jobs, earlier = Table(RuntimeJob), Table(RuntimeJob, alias="earlier")
    col = jobs.col
    unfinished = ", ".join(["%s"] * len(UNFINISHED_STATES))
    same_key = " AND ".join(
        f"{earlier.col(name)} = {jobs}.{col(name)}"
        for name in ("session", "plugin_id", "runtime_id")
    )
    sql = (
        f"UPDATE {jobs} SET {col('state')} = %s, {col('claimed_at')} = %s, "
        f"{col('updated_at')} = %s, {col('lease_owner')} = %s, {col('lease_expires_at')} = %s "
        f"WHERE {col('id')} = %s AND {col('state')} = %s AND NOT EXISTS ("
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
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        changed = cursor.rowcount
    if changed == 1:
        return Claim.CLAIMED
    state = RuntimeJob.objects.filter(pk=job_pk).values_list("state", flat=True).first()
    return Claim.WAITING if state == S.QUEUED else Claim.LOST


def _queue_deadline_error(job: RuntimeJob) -> str:
    return f"the job waited in the queue longer than maxQueueMs ({job.max_queue_ms} ms)"


def _execution_deadline_error(job: RuntimeJob) -> str:
    return f"the job ran longer than maxExecutionMs ({effective_execution_ms(job)} ms)"


def _queue_deadline_passed(job: RuntimeJob, now: datetime) -> bool:
    if job.max_queue_ms is None:
        return False
    return now - job.created_at > timedelta(milliseconds=job.max_queue_ms)


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
                error=_execution_deadline_error(lease.job),
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
    job = read_by_pk(RuntimeJob, job_pk)  # without compiling a queryset per delivery
    if job is None:
        return "missing"
    if job.state != S.QUEUED:
        return "duplicate"
    now = timezone.now()
    if _queue_deadline_passed(job, now):
        job_transition(
            job_pk=job.pk,
            job=job,
            from_state=S.QUEUED,
            to_state=S.TIMED_OUT,
            reason=JobReason.QUEUE_DEADLINE,
            error=_queue_deadline_error(job),
        )
        return "timed_out"
    # Claim, staleness check and start are one transaction: a worker that dies before the job
    # starts leaves it queued (and its message goes back to the broker), never half-claimed.
    with transaction.atomic():
        _commit_without_waiting_for_disk()
        outcome, runner = _claim_and_start(job=job, owner=owner, now=now)
    if outcome == Claim.WAITING:
        # Look again soon; the predecessor also wakes this job up when it finishes.
        send_run_job(job=job, countdown=order_retry_seconds())
    if runner is None:
        return outcome
    return _run_started(job=job, owner=owner, runner=runner)


def _commit_without_waiting_for_disk() -> None:
    """PostgreSQL: let this transaction commit without waiting for its WAL to reach the disk.

    Only for the claim-and-start transaction: it is a job's first commit of two, and the flush
    it would wait for is most of a trivial job's cost. If the database crashed right after it,
    the claim could be lost and the job be back in `queued`; the worker's later conditional
    updates then match nothing, so it saves nothing, and the job's message (acknowledged only
    after the task) or the reaper's re-send runs it again. The final commit, which holds the
    job's writes and its success, always waits for the disk. SQLite in WAL mode with
    synchronous=NORMAL already commits without a flush.
    """
    if connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            cursor.execute("SET LOCAL synchronous_commit TO OFF")


def _claim_and_start(
    *, job: RuntimeJob, owner: str, now: datetime
) -> tuple[str, Callable[..., RunResult | None] | None]:
    claim = job_claim(job_pk=job.pk, owner=owner, now=now)
    if claim == Claim.WAITING:
        return Claim.WAITING, None
    if claim != Claim.CLAIMED:
        return "duplicate", None
    # What the claim wrote, without reading the row again.
    job.state, job.claimed_at, job.lease_owner = S.CLAIMED, now, owner
    if _queue_deadline_passed(job, now):
        _own_transition(
            job,
            owner,
            S.CLAIMED,
            S.TIMED_OUT,
            reason=JobReason.QUEUE_DEADLINE,
            error=_queue_deadline_error(job),
        )
        return "timed_out", None
    stale = staleness_check(job)
    if stale is not None:
        _own_transition(job, owner, S.CLAIMED, S.STALE, reason=stale.reason, error=stale.message)
        return "stale", None
    try:
        runner = resolve_runner(job.runner)
    except RunnerNotFound as exc:
        _own_transition(job, owner, S.CLAIMED, S.FAILED, error=exc.message)
        return "failed", None
    if not _own_transition(job, owner, S.CLAIMED, S.RUNNING, started_at=timezone.now()):
        return "lost", None
    return S.RUNNING, runner


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
            error=_execution_deadline_error(job),
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


# --- People's actions ---------------------------------------------------------------------


def job_can_manage(*, user: Any, job: RuntimeJob) -> bool:
    """Staff and the session's owner may see, cancel and retry a job; nobody else."""
    if user is None or not getattr(user, "is_authenticated", False):
        return False
    return bool(user.is_staff) or job.session.owner_id == user.pk


def _require_manage(*, user: Any, job: RuntimeJob) -> None:
    if not job_can_manage(user=user, job=job):
        raise JobForbidden("only staff and the session's owner may manage its jobs")


def job_cancel(*, job: RuntimeJob, actor: Any) -> RuntimeJob:
    """Cancel a queued, claimed or running job (a running runner is told to stop and its writes
    are never saved). Anything else is refused with runtime_job_not_cancellable."""
    _require_manage(user=actor, job=job)
    who = actor.get_username()
    # The state may move under us (claimed -> running); a few conditional attempts settle it.
    for _ in range(5):
        state = RuntimeJob.objects.filter(pk=job.pk).values_list("state", flat=True).first()
        if state not in CANCELLABLE_STATES:
            raise JobNotCancellable(
                f"job {job.job_id} is {state}; only queued, claimed or running jobs can be cancelled"
            )
        if job_transition(
            job_pk=job.pk,
            job=job,
            from_state=state,
            to_state=S.CANCELLED,
            reason=JobReason.CANCELLED_BY_USER,
            error=f"cancelled by {who}",
        ):
            break
    else:
        raise JobNotCancellable(f"job {job.job_id} kept changing state; try again")
    job.refresh_from_db()
    return job


def job_retry(*, job: RuntimeJob, actor: Any) -> RuntimeJob:
    """Run a failed job again as a new job (same inputs, the package's current version).

    Only failure states may be retried, and only once each: retry the newest attempt instead, so
    one click can never start two paid runs.
    """
    _require_manage(user=actor, job=job)
    with transaction.atomic():
        current = RuntimeJob.objects.select_for_update().get(pk=job.pk)
        if current.state not in FAILURE_STATES:
            raise JobNotRetryable(
                f"job {current.job_id} is {current.state}; only failed, timed_out, cancelled, "
                "stale or orphaned jobs can be retried"
            )
        later = current.retries.order_by("-id").values_list("job_id", flat=True).first()
        if later is not None:
            raise JobNotRetryable(
                f"job {current.job_id} was already retried as job {later}; retry that one instead"
            )
        return job_enqueue(
            session_id=current.session_id,
            plugin_id=current.plugin_id,
            runtime_id=current.runtime_id,
            source_turn=current.source_turn,
            inputs=current.inputs,
            options=JobOptions(
                settle=current.settle,
                max_settle_wait_ms=current.max_settle_wait_ms,
                max_queue_ms=current.max_queue_ms,
                max_execution_ms=current.max_execution_ms,
            ),
            runner=current.runner,
            retry_of=current,
            requested_by=actor,
        )


# --- The reaper -------------------------------------------------------------------------------


def job_reap_orphans(*, now: datetime | None = None) -> list[int]:
    """Mark claimed/running/committing jobs whose lease expired `orphaned`; returns their pks.

    Each is a conditional transition that also requires the lease to be still expired, so a
    worker that renewed at the last moment keeps its job.
    """
    now = now or timezone.now()
    expired = Q(lease_expires_at__lt=now)
    candidates: Iterable[tuple[int, str]] = RuntimeJob.objects.filter(
        expired, state__in=LEASED_STATES
    ).values_list("pk", "state")
    reaped = []
    for pk, state in list(candidates):
        if job_transition(
            job_pk=pk,
            from_state=state,
            to_state=S.ORPHANED,
            reason=JobReason.LEASE_EXPIRED,
            error="its worker stopped renewing the lease",
            lease_expired_before=now,
            now=now,
        ):
            reaped.append(pk)
    return reaped


def job_time_out_queued(*, now: datetime | None = None) -> list[int]:
    """Time out queued jobs past their maxQueueMs that no worker has picked up; their pks.

    A worker checks the deadline when it receives the message, but with every worker down or
    busy nobody would: the reaper does it too, so a settle wait is not held up by a job that
    may no longer run. Each is a conditional queued -> timed_out, so a claim racing it wins or
    loses cleanly.
    """
    now = now or timezone.now()
    candidates = RuntimeJob.objects.filter(state=S.QUEUED, max_queue_ms__isnull=False)
    expired = [
        job
        for job in candidates.only("id", "job_id", "session_id", "created_at", "max_queue_ms")
        if _queue_deadline_passed(job, now)
    ]
    timed_out = []
    for job in expired:
        if job_transition(
            job_pk=job.pk,
            from_state=S.QUEUED,
            to_state=S.TIMED_OUT,
            reason=JobReason.QUEUE_DEADLINE,
            error=_queue_deadline_error(job),
            now=now,
        ):
            timed_out.append(job.pk)
    return timed_out


def job_resend_lost(*, now: datetime | None = None, limit: int = 500) -> list[int]:
    """Send again the messages of queued jobs that nobody claimed for too long; their pks.

    A job waiting for an earlier job of its key is left alone (that job wakes it). The back-off
    doubles with each send, so a long backlog on a busy broker collects only a few duplicates
    per job, and a conditional update makes sure two reapers never both re-send one job.
    """
    now = now or timezone.now()
    base = resend_after_seconds()
    earlier = RuntimeJob.objects.filter(
        session_id=OuterRef("session_id"),
        plugin_id=OuterRef("plugin_id"),
        runtime_id=OuterRef("runtime_id"),
        id__lt=OuterRef("id"),
        state__in=UNFINISHED_STATES,
    )
    candidates = (
        RuntimeJob.objects.filter(state=S.QUEUED, sent_at__lt=now - timedelta(seconds=base))
        .filter(~Exists(earlier))
        .order_by("id")
        .values_list("pk", "sent_at", "sends", "max_execution_ms")[:limit]
    )
    resent = []
    for pk, sent_at, sends, max_execution_ms in list(candidates):
        if now - sent_at < timedelta(seconds=base * 2 ** min(sends - 1, 10)):
            continue
        claimed = RuntimeJob.objects.filter(pk=pk, state=S.QUEUED, sends=sends).update(
            sent_at=now, sends=sends + 1
        )
        if claimed:
            send_run_job(job=RuntimeJob(pk=pk, max_execution_ms=max_execution_ms))
            resent.append(pk)
    return resent
