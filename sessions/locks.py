"""The session's turn lock: a lease one turn, manual run or RPC action holds at a time.

Below the turn (sessions.turns) and the services that take it (RPC actions, forms, the API's
streamed turn), which all reach it here; a job's commit reads the same columns
(sessions.background.job_session_check) to wait while the lock is taken.
"""

from __future__ import annotations

import contextlib
import secrets
import time
import uuid
from collections.abc import Iterator
from datetime import timedelta

from django.db import transaction
from django.utils import timezone

from eventlog.errors import SessionProblem
from sessions.errors import SessionBusy
from sessions.models import Session

# A turn renews its lease at every runtime boundary; a crashed process frees the session this soon.
LOCK_LEASE_SECONDS = 300
# "Waits briefly, then 409": long enough to absorb a double click, short enough to feel immediate.
LOCK_WAIT_SECONDS = 2.0
LOCK_POLL_SECONDS = 0.05


def session_lock_acquire(*, session_id: uuid.UUID, wait: float = LOCK_WAIT_SECONDS) -> str:
    """Take the session's turn lease, waiting up to `wait` seconds; raises SessionBusy.

    The check-and-set runs in a transaction that locks the row (FOR UPDATE on PostgreSQL, an
    IMMEDIATE transaction on SQLite), so two callers can never both see the session free.
    """
    token = secrets.token_hex(16)
    deadline = time.monotonic() + max(0.0, wait)
    while True:
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
            if not row.lock_token or (row.lock_expires is not None and row.lock_expires < now):
                Session.objects.filter(pk=session_id).update(
                    lock_token=token, lock_expires=now + timedelta(seconds=LOCK_LEASE_SECONDS)
                )
                return token
        if time.monotonic() >= deadline:
            raise SessionBusy(
                "another action is running in this session; try again when it has finished"
            )
        time.sleep(LOCK_POLL_SECONDS)


def session_lock_renew(*, session_id: uuid.UUID, token: str) -> bool:
    return bool(
        Session.objects.filter(pk=session_id, lock_token=token).update(
            lock_expires=timezone.now() + timedelta(seconds=LOCK_LEASE_SECONDS)
        )
    )


def session_lock_release(*, session_id: uuid.UUID, token: str) -> None:
    Session.objects.filter(pk=session_id, lock_token=token).update(lock_token="", lock_expires=None)


@contextlib.contextmanager
def session_locked(*, session_id: uuid.UUID, wait: float = LOCK_WAIT_SECONDS) -> Iterator[str]:
    token = session_lock_acquire(session_id=session_id, wait=wait)
    try:
        yield token
    finally:
        session_lock_release(session_id=session_id, token=token)
