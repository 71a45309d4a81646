"""The session's turn lock: a lease one turn, manual run or RPC action holds at a time.

Below the turn (sessions.turns) and the services that take it (RPC actions, forms, the API's
streamed turn), which all reach it here; a job's commit reads the same columns
(sessions.background.job_session_check) to wait while the lock is taken.

The lease is short (LOCK_LEASE_SECONDS) and a thread of the holder's process renews it while it
is held (_LeaseHeartbeat), so a process that dies (kill -9, a deploy, a crash) frees the session
within that many seconds instead of blocking it until a long lease runs out. Whoever takes over
an expired lease first records the dead holder's half-run turn as failed (session_turns_abandon):
its commit never happened (a turn commits in one transaction), so nothing of it is half-written.
"""

from __future__ import annotations

import contextlib
import logging
import os
import secrets
import threading
import time
import uuid
from collections.abc import Iterator
from datetime import timedelta

from django.db import connection, transaction
from django.utils import timezone

from core.sql import Table, update_returning
from eventlog.errors import SessionProblem
from eventlog.services import event_append
from sessions.errors import SessionBusy
from sessions.models import Session, Turn

log = logging.getLogger(__name__)

# A held lease is renewed every LOCK_RENEW_SECONDS by the holder's heartbeat thread (and by a
# turn at every runtime boundary); a process that died frees the session this soon.
LOCK_LEASE_SECONDS = 8
LOCK_RENEW_SECONDS = 2.0
# The heartbeat stops renewing a lease held this long: a holder stuck for good (a hung thread in
# a live process) still frees the session, as the old 300 s lease did.
LOCK_HOLD_MAX_SECONDS = 300
# What a turn whose process died while it ran says (its turn row and its turn.failed event).
ABANDONED_TURN_ERROR = (
    "the process running this turn stopped before it committed; nothing of it was saved"
)
# "Waits briefly, then 409": long enough to absorb a double click, short enough to feel immediate.
LOCK_WAIT_SECONDS = 2.0
LOCK_POLL_SECONDS = 0.05


def session_lock_acquire(
    *, session_id: uuid.UUID, wait: float = LOCK_WAIT_SECONDS, fresh: Session | None = None
) -> str:
    """Take the session's turn lease, waiting up to `wait` seconds; raises SessionBusy.

    The check-and-set runs in a transaction that locks the row (FOR UPDATE on PostgreSQL, an
    IMMEDIATE transaction on SQLite), so two callers can never both see the session free.

    fresh: the caller's Session, brought up to date with the row as the lease was taken (a turn
    reads the session it runs under its lease; in the usual case that costs no query of its own).
    """
    token = secrets.token_hex(16)
    deadline = time.monotonic() + max(0.0, wait)
    while True:
        # The usual case, a free session: one conditional UPDATE takes it (atomic by itself).
        if _take_free(session_id=session_id, token=token, fresh=fresh):
            _heartbeat.add(session_id=session_id, token=token)
            return token
        # Taken, expired or missing: look under the row lock.
        with transaction.atomic():
            row = (
                Session.objects.select_for_update(no_key=True)
                .only("id", "lock_token", "lock_expires")
                .filter(pk=session_id)
                .first()
            )
            if row is None:
                raise SessionProblem("no such session", code="not_found", status=404)
            now = timezone.now()
            expired = row.lock_expires is not None and row.lock_expires < now
            if not row.lock_token or expired:
                if row.lock_token:
                    # Its holder stopped renewing: that process is gone (or hung past the
                    # ceiling), and so is the turn it ran.
                    session_turns_abandon(session_id=session_id)
                Session.objects.filter(pk=session_id).update(
                    lock_token=token, lock_expires=now + timedelta(seconds=LOCK_LEASE_SECONDS)
                )
                _heartbeat.add(session_id=session_id, token=token)
                if fresh is not None:
                    fresh.refresh_from_db()
                return token
        if time.monotonic() >= deadline:
            raise SessionBusy(
                "another action is running in this session; try again when it has finished"
            )
        time.sleep(LOCK_POLL_SECONDS)


def _take_free(*, session_id: uuid.UUID, token: str, fresh: Session | None) -> bool:
    expires = timezone.now() + timedelta(seconds=LOCK_LEASE_SECONDS)
    if fresh is None:
        return bool(
            Session.objects.filter(pk=session_id, lock_token="").update(
                lock_token=token, lock_expires=expires
            )
        )
    table = Table(Session)
    col = table.col
    row = update_returning(
        Session,
        f"{col('lock_token')} = %s, {col('lock_expires')} = %s",
        f"{col('id')} = %s AND {col('lock_token')} = ''",
        [token, table.value("lock_expires", expires), table.value("id", session_id)],
    )
    if row is None:
        return False
    world_changed = row.world_id != fresh.world_id
    for field in Session._meta.concrete_fields:
        setattr(fresh, field.attname, getattr(row, field.attname))
    if world_changed and Session.world.field.is_cached(fresh):
        Session.world.field.delete_cached_value(fresh)
    return True


def session_lock_renew(*, session_id: uuid.UUID, token: str) -> bool:
    """Extend the lease; False when it is not this token's any more.

    A lease this process holds is renewed by its heartbeat thread every LOCK_RENEW_SECONDS (and
    dropped from it when a renewal finds the lease lost), so a call for one costs no query; the
    turn's commit checks the token under the row lock anyway."""
    if _heartbeat.holds(token):
        return True
    return _renew(session_id=session_id, token=token)


def _renew(*, session_id: uuid.UUID, token: str) -> bool:
    return bool(
        Session.objects.filter(pk=session_id, lock_token=token).update(
            lock_expires=timezone.now() + timedelta(seconds=LOCK_LEASE_SECONDS)
        )
    )


def session_lock_release(*, session_id: uuid.UUID, token: str) -> None:
    _heartbeat.remove(token)
    Session.objects.filter(pk=session_id, lock_token=token).update(lock_token="", lock_expires=None)


def session_lock_forget(*, token: str) -> None:
    """Stop renewing a lease its holder freed itself (a turn's commit frees it in its UPDATE)."""
    _heartbeat.remove(token)


def session_turns_abandon(*, session_id: uuid.UUID) -> list[uuid.UUID]:
    """Mark the session's player and manual turns still `running` failed, each with its
    turn.failed event; their ids. Called (in the caller's transaction) by whoever takes over a
    lease that expired: with the lease expired no live process runs them any more.

    Background turns are not touched: a job's turn is saved only inside its commit, so one is
    never `running` in the table."""
    stuck = list(
        Turn.objects.filter(session_id=session_id, status=Turn.Status.RUNNING)
        .exclude(kind=Turn.Kind.BACKGROUND)
        .values_list("pk", flat=True)
    )
    if not stuck:
        return []
    Turn.objects.filter(pk__in=stuck, status=Turn.Status.RUNNING).update(
        status=Turn.Status.FAILED, error=ABANDONED_TURN_ERROR, finished_at=timezone.now()
    )
    for turn_id in stuck:
        log.warning("turn %s of session %s was abandoned by its process", turn_id, session_id)
        event_append(
            session_id=session_id,
            type="turn.failed",
            payload={"turnId": str(turn_id), "error": ABANDONED_TURN_ERROR, "abandoned": True},
        )
    return stuck


class _LeaseHeartbeat:
    """One thread per process renewing the turn leases this process holds.

    It sleeps while nothing has been held for LOCK_RENEW_SECONDS (most turns end sooner), so a
    short turn costs no write; the thread's own database connection is closed after each round.
    """

    def __init__(self) -> None:
        self._cond = threading.Condition()
        self._held: dict[str, tuple[uuid.UUID, float]] = {}  # token: (session, taken at)
        self._pid: int | None = None

    def add(self, *, session_id: uuid.UUID, token: str) -> None:
        with self._cond:
            if self._pid != os.getpid():  # first lease in this (possibly forked) process
                self._pid = os.getpid()
                threading.Thread(target=self._run, name="turn-lease-heartbeat", daemon=True).start()
            self._held[token] = (session_id, time.monotonic())
            self._cond.notify()

    def remove(self, token: str) -> None:
        with self._cond:
            self._held.pop(token, None)

    def holds(self, token: str) -> bool:
        with self._cond:
            return token in self._held and self._pid == os.getpid()

    def held(self) -> int:
        with self._cond:
            return len(self._held)

    def _run(self) -> None:
        next_round: dict[str, float] = {}
        while True:
            with self._cond:
                now = time.monotonic()
                for token, (_, taken) in self._held.items():
                    next_round.setdefault(token, taken + LOCK_RENEW_SECONDS)
                for token in [t for t in next_round if t not in self._held]:
                    del next_round[token]
                due = [(token, self._held[token]) for token, at in next_round.items() if at <= now]
                if not due:
                    wait = min(next_round.values(), default=now + 3600) - now
                    self._cond.wait(timeout=max(0.01, wait))
                    continue
                for token, _ in due:
                    next_round[token] = now + LOCK_RENEW_SECONDS
            try:
                for token, (session_id, taken) in due:
                    if time.monotonic() - taken > LOCK_HOLD_MAX_SECONDS:
                        self.remove(token)
                        continue
                    with self._cond:
                        if token not in self._held:
                            continue  # released meanwhile
                    if not _renew(session_id=session_id, token=token):
                        self.remove(token)  # taken over or released: nothing left to renew
            except Exception:
                # The database is down or busy: the next round tries again, and the lease
                # itself lasts a few rounds.
                log.warning("could not renew a turn lease", exc_info=True)
            finally:
                connection.close()


_heartbeat = _LeaseHeartbeat()


@contextlib.contextmanager
def session_locked(*, session_id: uuid.UUID, wait: float = LOCK_WAIT_SECONDS) -> Iterator[str]:
    token = session_lock_acquire(session_id=session_id, wait=wait)
    try:
        yield token
    finally:
        session_lock_release(session_id=session_id, token=token)
