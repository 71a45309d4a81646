"""Writes of the jobs app: the state machine, enqueue, cancel, retry, reap.

What a worker does with a delivered message (claim, run, commit) is jobs/worker.py; the
turn hands its detached runtimes over through one function, job_defer. Every state change goes through job_transition: a conditional UPDATE ... WHERE state = <expected>
that changes exactly one row or nothing. Two workers (or a duplicate broker delivery) racing for
the same job therefore cannot both win, and the row stays the single truth.
"""

from __future__ import annotations

import logging
import os
import socket
import uuid
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from celery import current_app
from django.conf import settings
from django.db import connection, transaction
from django.db.models import Exists, OuterRef, Q
from django.utils import timezone

from core import notify
from core.sql import Table, insert
from eventlog.services import event_append
from jobs.errors import (
    InvalidTransition,
    JobForbidden,
    JobNotCancellable,
    JobNotRetryable,
    JobOptionsError,
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
from jobs.runners import package_version as current_version

log = logging.getLogger(__name__)

S = JobState

# The whole state machine. Anything not listed here raises InvalidTransition.
ALLOWED_TRANSITIONS: dict[str, frozenset[str]] = {
    S.QUEUED: frozenset({S.CLAIMED, S.TIMED_OUT, S.CANCELLED, S.STALE}),
    # claimed/running -> queued: the reaper hands the job of a worker that died to another one
    # (job_reap_orphans); it never finished, so this is no replay of a failure.
    S.CLAIMED: frozenset(
        {S.QUEUED, S.RUNNING, S.TIMED_OUT, S.CANCELLED, S.STALE, S.FAILED, S.ORPHANED}
    ),
    S.RUNNING: frozenset({S.QUEUED, S.COMMITTING, S.TIMED_OUT, S.CANCELLED, S.FAILED, S.ORPHANED}),
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


def max_reruns() -> int:
    # How many times the reaper hands a job whose worker died to another worker before it
    # gives up and marks it orphaned (a job that kills every worker it runs on stops here).
    return int(_setting("COVEL_JOB_MAX_RERUNS", 2))


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
    terminal = to_state in TERMINAL_STATES
    # The state and its event commit together (no savepoint when the caller has a transaction).
    with transaction.atomic(savepoint=False):
        changed, successor = _conditional_update(
            values=values,
            conditions=conditions,
            expired_before=lease_expired_before,
            successor=terminal,
        )
        if changed and to_state in STATES_ANNOUNCED:
            _announce(job_pk=job_pk, job=job, values=values)
    if changed and terminal:
        # After the commit, so a waiter that wakes up and re-reads the row sees the new state,
        # and the successor's claim finds this job finished.
        settle_session = _settle_session(job_pk=job_pk, job=job)
        transaction.on_commit(
            lambda: _after_terminal(settle_session=settle_session, successor=successor)
        )
    return changed == 1


# The states the session's event stream hears of (job-status.updated). `claimed` and `committing`
# last a moment inside a worker's transaction: nobody outside the worker acts on them.
STATES_ANNOUNCED = frozenset({S.RUNNING, *TERMINAL_STATES, S.QUEUED})  # queued: a re-run


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
    successor: bool = False,
) -> tuple[int, RuntimeJob | None]:
    """UPDATE runtime_job SET ... WHERE <column = value> AND ...: the number of rows changed,
    and (successor=True) the next queued job of the changed job's key, or None.

    Plain SQL on the hot path (a job makes several of these): the ORM spends more time
    compiling such a statement than the database spends running it. Values still go through
    each field's own conversion, so SQLite and PostgreSQL get what the ORM would send.

    The successor comes back in the same statement (RETURNING, read inside the transaction that
    finishes the job), not from a query after the commit: the job that finishes wakes it
    (_after_terminal). One queued by a transaction that commits between this statement and
    the commit is not seen here; its own delivery finds this job unfinished and looks again
    after order_retry_seconds(), as one queued a moment after the commit always did.
    """
    jobs = Table(RuntimeJob)
    sets = ", ".join(f"{jobs.col(name)} = %s" for name in values)
    where = [f"{jobs.col(name)} = %s" for name, _ in conditions]
    params = [jobs.value(name, value) for name, value in values.items()]
    params += [jobs.value(name, value) for name, value in conditions]
    if expired_before is not None:
        where.append(f"{jobs.col('lease_expires_at')} < %s")
        params.append(jobs.value("lease_expires_at", expired_before))
    sql = f"UPDATE {jobs} SET {sets} WHERE {' AND '.join(where)}"
    with connection.cursor() as cursor:
        if not successor:
            cursor.execute(sql, params)
            return cursor.rowcount, None
        cursor.execute(
            f"{sql} RETURNING ({_next_queued('id')}), ({_next_queued('max_execution_ms')})",
            [*params, str(S.QUEUED), str(S.QUEUED)],
        )
        # Read through: SQLite tells the row count of an UPDATE ... RETURNING only then.
        rows = cursor.fetchall()
    if not rows or rows[0][0] is None:
        return len(rows), None
    return len(rows), RuntimeJob(pk=rows[0][0], max_execution_ms=rows[0][1])


def _next_queued(column: str) -> str:
    """A subquery for the RETURNING list of an UPDATE of one job: `column` of the first queued
    job of the same (session, plugin, runtime) key (one parameter: the queued state)."""
    jobs, nxt = Table(RuntimeJob), Table(RuntimeJob, alias="nxt")
    same_key = " AND ".join(
        f"{nxt.col(name)} = {jobs}.{jobs.col(name)}"
        for name in ("session", "plugin_id", "runtime_id")
    )
    # Not the job itself: PostgreSQL's subquery sees the table as the statement found it, where
    # a job leaving `queued` (a cancel, a deadline) is still queued.
    return (
        f"SELECT {nxt.col(column)} FROM {nxt} WHERE {same_key} AND {nxt.col('state')} = %s "
        f"AND {nxt.col('id')} <> {jobs}.{jobs.col('id')} ORDER BY {nxt.col('id')} LIMIT 1"
    )


def _settle_session(*, job_pk: int, job: RuntimeJob | None) -> uuid.UUID | None:
    """The session whose settle waiters a finished job releases: its own if it is a settle job."""
    if job is None:
        found = RuntimeJob.objects.filter(pk=job_pk).values_list("settle", "session_id").first()
        return found[1] if found and found[0] else None
    return job.session_id if job.settle else None


def _after_terminal(*, settle_session: uuid.UUID | None, successor: RuntimeJob | None) -> None:
    if settle_session is not None:
        notify.publish(notify.settled_channel(settle_session))
    if successor is not None:
        # Delivered now rather than at its next re-check.
        try:
            send_run_job(job=successor)
        except Exception:  # the periodic re-check still delivers it
            log.exception("could not wake job %s", successor.pk)


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


def job_defer(
    *,
    session_id: uuid.UUID,
    plugin_id: str,
    runtime_id: str,
    source_turn: str,
    inputs: dict[str, Any],
    detached: Any,
    package_version: str,
) -> RuntimeJob:
    """The turn's one way into jobs: a detached runtime becomes a queued job, with the options
    of its `schedule.detached`, inside the turn's commit transaction (see job_enqueue)."""
    return job_enqueue(
        session_id=session_id,
        plugin_id=plugin_id,
        runtime_id=runtime_id,
        source_turn=source_turn,
        inputs=inputs,
        options=job_options_from_schedule(detached),
        package_version=package_version,
    )


def effective_execution_ms(job: RuntimeJob) -> int:
    ceiling = execution_ceiling_ms()
    return min(job.max_execution_ms or ceiling, ceiling)


def queue_deadline_error(job: RuntimeJob) -> str:
    return f"the job waited in the queue longer than maxQueueMs ({job.max_queue_ms} ms)"


def execution_deadline_error(job: RuntimeJob) -> str:
    return f"the job ran longer than maxExecutionMs ({effective_execution_ms(job)} ms)"


def queue_deadline_passed(job: RuntimeJob, now: datetime) -> bool:
    if job.max_queue_ms is None:
        return False
    return now - job.created_at > timedelta(milliseconds=job.max_queue_ms)


# The Celery task that runs a job (jobs/tasks.py). Found by name in the app's registry, which
# jobs.apps fills at start-up: the task calls the worker, which calls these services, so an
# import of the task module here would close a circle.
RUN_JOB_TASK = "jobs.run_job"


def send_run_job(*, job: RuntimeJob, countdown: float | None = None) -> None:
    """Hand the job's id to Celery, with time limits derived from its maxExecutionMs.

    Never raises: with the broker down (Redis restarting) the message is not sent, the job stays
    `queued` with its `sent_at`, and the reaper sends it again when the broker is back
    (job_resend_lost). Mostly called after a commit: an error here would turn a turn that was
    saved into a failed request, and its retry into a second turn.
    """
    soft = effective_execution_ms(job) / 1000 + SOFT_LIMIT_SLACK_S
    try:
        current_app.tasks[RUN_JOB_TASK].apply_async(
            args=[job.pk],
            countdown=countdown,
            soft_time_limit=soft,
            time_limit=soft + HARD_LIMIT_GRACE_S,
            # Deployments may give jobs their own queue (and workers); None is Celery's default.
            queue=jobs_queue(),
        )
    except Exception:
        log.warning("could not send job %s to the broker; the reaper sends it again", job.pk,
                    exc_info=True)  # fmt: skip


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
    """Hand claimed/running jobs whose lease expired (their worker died) to another worker, or
    mark them `orphaned` once they were handed on max_reruns() times; returns their pks.

    A job whose worker died never finished: none of its writes were committed (they commit in
    one transaction with its success, conditional on the lease being that worker's own). So it
    goes back to `queued` with its lease cleared and its message sent again, and whichever worker
    claims it runs it from the start; a worker that was only cut off, not dead, can no longer
    commit, because the lease is no longer its own. Its commit therefore takes effect once.

    Each step is a conditional transition that also requires the lease to be still expired, so a
    worker that renewed at the last moment keeps its job.
    """
    now = now or timezone.now()
    expired = Q(lease_expires_at__lt=now)
    candidates: Iterable[tuple[int, str, int, int | None]] = RuntimeJob.objects.filter(
        expired, state__in=LEASED_STATES
    ).values_list("pk", "state", "reruns", "max_execution_ms")
    reaped = []
    for pk, state, reruns, max_execution_ms in list(candidates):
        if state != S.COMMITTING and reruns < max_reruns():
            changed = job_transition(
                job_pk=pk,
                from_state=state,
                to_state=S.QUEUED,
                lease_expired_before=now,
                now=now,
                lease_owner="",
                lease_expires_at=None,
                claimed_at=None,
                started_at=None,
                reruns=reruns + 1,
                sent_at=now,
            )
            if changed:  # committed (the reaper runs in no transaction): send it now
                send_run_job(job=RuntimeJob(pk=pk, max_execution_ms=max_execution_ms))
                reaped.append(pk)
            continue
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
        if queue_deadline_passed(job, now)
    ]
    timed_out = []
    for job in expired:
        if job_transition(
            job_pk=job.pk,
            from_state=S.QUEUED,
            to_state=S.TIMED_OUT,
            reason=JobReason.QUEUE_DEADLINE,
            error=queue_deadline_error(job),
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
