"""Settle waits: before an action starts, wait for the session's unfinished settle jobs.

The wait lasts at most the smallest maxSettleWaitMs among the jobs pending when it starts, and
it holds no lock and no transaction: the jobs it waits for must be able to commit meanwhile.
"""

from __future__ import annotations

import logging
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field

from django.db import connection
from django.utils import timezone

from core import notify
from jobs.models import UNFINISHED_STATES, RuntimeJob, SettleWait

log = logging.getLogger(__name__)

# Without a notification channel (its server is down): poll the database, 5 ms at first,
# doubling up to 100 ms.
POLL_FIRST_S = 0.005
POLL_MAX_S = 0.1
# With one, still read again this often: a lost wake-up costs at most this much.
RECHECK_S = 1.0


@dataclass(frozen=True)
class SettleOutcome:
    waited_ms: int
    # Jobs still unfinished when the wait ended (empty unless it timed out).
    pending_job_ids: list[str] = field(default_factory=list)
    timed_out: bool = False
    # The wait's limit (smallest maxSettleWaitMs), None when there was nothing to wait for.
    limit_ms: int | None = None
    # Every job the wait started with.
    waited_for: list[str] = field(default_factory=list)


def _unfinished(*, session_id: uuid.UUID | str, among: set[str] | None = None) -> dict[str, int]:
    rows = RuntimeJob.objects.filter(
        session_id=session_id, settle=True, state__in=UNFINISHED_STATES
    )
    if among is not None:
        rows = rows.filter(job_id__in=among)
    return {str(job_id): wait for job_id, wait in rows.values_list("job_id", "max_settle_wait_ms")}


def settle_wait(
    *,
    session_id: uuid.UUID | str,
    now: Callable[[], float] = time.monotonic,
    record: bool = True,
) -> SettleOutcome:
    """Wait until the session's settle jobs pending now have finished, or the limit runs out.

    Finished, failed, timed-out, cancelled, stale and orphaned jobs all count as settled. The
    wait wakes on the job's notification (core/notify.py, every backend); when the channel
    cannot be had it polls with a short back-off.
    When record is true a SettleWait row is kept for the dashboard's timeline.
    """
    if connection.in_atomic_block:
        # Waiting inside a transaction would hold its locks (SQLite: the write lock) and keep the
        # very jobs we wait for from committing.
        raise RuntimeError("settle_wait must not run inside a transaction: it would block the jobs")
    started_at = timezone.now()
    start = now()
    # Subscribe before the first read: a job finishing between the two still wakes us.
    try:
        subscription = notify.subscribe_blocking(notify.settled_channel(session_id))
    except Exception:
        log.warning("no settle notifications for session %s: polling", session_id, exc_info=True)
        subscription = None
    try:
        pending = _unfinished(session_id=session_id)
        if not pending:
            return SettleOutcome(waited_ms=0)
        limit_ms = min(pending.values())
        waited_for = sorted(pending)
        deadline = start + limit_ms / 1000
        waiting = set(pending)
        delay = POLL_FIRST_S
        while waiting:
            left = deadline - now()
            if left <= 0:
                break
            if subscription is not None:
                subscription.wait(min(left, RECHECK_S))
            else:
                time.sleep(min(delay, left))
                delay = min(delay * 2, POLL_MAX_S)
            waiting = set(_unfinished(session_id=session_id, among=waiting))
    finally:
        if subscription is not None:
            subscription.close()
    waited_ms = int((now() - start) * 1000)
    outcome = SettleOutcome(
        waited_ms=waited_ms,
        pending_job_ids=sorted(waiting),
        timed_out=bool(waiting),
        limit_ms=limit_ms,
        waited_for=waited_for,
    )
    if record:
        SettleWait.objects.create(
            session_id=session_id,
            started_at=started_at,
            waited_ms=waited_ms,
            limit_ms=limit_ms,
            timed_out=outcome.timed_out,
            pending_job_ids=outcome.pending_job_ids,
        )
    return outcome
