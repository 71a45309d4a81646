"""Writes of the event log: append a session's events, one statement per session.

Sessions (turns, seats, forms) and jobs (job-status.updated, runtime.deferred) both write here,
so it sits below both. Every event goes through _events_write, the one place that writes
SessionEvent rows: whatever must follow a write (a notifier waking the SSE streams) goes there.
"""

from __future__ import annotations

import contextlib
import threading
import uuid
from collections.abc import Iterator, Mapping
from typing import Any

from django.db import models, transaction
from django.utils import timezone

from core import notify
from core.sql import Table
from eventlog.errors import SessionProblem
from eventlog.models import SessionEvent


def _session_model() -> type[models.Model]:
    """The session model, through the event's own relation: sessions sits above this app."""
    return SessionEvent._meta.get_field("session").related_model  # type: ignore[return-value]


def event_append(*, session_id: uuid.UUID, type: str, payload: Mapping[str, Any]) -> None:
    """Append one event with the next seq (inside events_batched(): at the end of that block).

    One statement, INSERT ... SELECT MAX(seq) + 1: events are written on every job transition,
    so a round trip saved here is saved many times. Two writers racing for the same seq do not
    fail: ON CONFLICT DO NOTHING leaves the loser with no row (and its transaction intact), and
    it simply tries again. On SQLite writers are serialised, so the race cannot happen there.

    On PostgreSQL the same statement first locks the session row (FOR NO KEY UPDATE, held to the
    end of the transaction). Without it, a writer whose uncommitted event holds seq N in the
    unique index and who then waits for the session row (a turn's or a job's commit holds it)
    deadlocks with that commit's own event, which waits to learn whether seq N is taken. Taking
    the session row before writing an event, as every commit does, leaves no cycle. (A writer
    that had to wait for the lock still reads MAX(seq) as of the start of its statement, so its
    first try may collide and it tries once more.)
    """
    held = getattr(_batch, "events", None)
    if held is not None:
        held.append((session_id, type, dict(payload)))
        return
    _events_write(session_id, [(type, dict(payload))])


def events_append(*, session_id: uuid.UUID, events: list[tuple[str, Mapping[str, Any]]]) -> None:
    """Append several events of one session, in order, in one statement (inside
    events_batched(): at the end of that block, with its other events). A turn writes the events
    it held this way (sessions/live_events.py)."""
    if not events:
        return
    held = getattr(_batch, "events", None)
    if held is not None:
        held.extend((session_id, type, dict(payload)) for type, payload in events)
        return
    _events_write(session_id, [(type, dict(payload)) for type, payload in events])


_batch = threading.local()


@contextlib.contextmanager
def events_batched() -> Iterator[None]:
    """Inside the caller's transaction: the events appended in the block are written together,
    one statement per session, when the block ends without an error (a job's commit writes
    three or four). A block inside another block joins the outer one.

    On PostgreSQL the transaction must already hold the session row lock (a job's commit takes
    it in its staleness re-check): a batch that first had to wait for the lock could find some
    of its seqs taken by then, and is refused rather than written with a gap."""
    if getattr(_batch, "events", None) is not None:
        yield
        return
    _batch.events = held = []
    try:
        yield
    finally:
        _batch.events = None
    sessions: dict[Any, list[tuple[str, dict[str, Any]]]] = {}
    for session_id, type, payload in held:
        sessions.setdefault(session_id, []).append((type, payload))
    for session_id, events in sessions.items():
        _events_write(session_id, events)


def _events_write(session_id: uuid.UUID, events: list[tuple[str, dict[str, Any]]]) -> None:
    """INSERT the events with seqs MAX+1, MAX+2, ... in one statement (see event_append)."""
    table = Table(SessionEvent)
    col = table.col
    columns = ", ".join(col(name) for name in ("session", "seq", "type", "payload", "created_at"))
    last = f"SELECT MAX({col('seq')}) FROM {table} WHERE {col('session')} = %s"
    rows = ", ".join(["(%s, %s, %s, %s)"] * len(events))
    select = (
        f"SELECT %s, COALESCE(({last}), 0) + v.column1, v.column2, v.column3, v.column4 "
        f"FROM (VALUES {rows}) AS v"
    )
    conflict = f"ON CONFLICT ({col('session')}, {col('seq')}) DO NOTHING"
    session = table.value("session", session_id)
    now = table.value("created_at", timezone.now())
    values: list[Any] = []
    for offset, (type, payload) in enumerate(events, start=1):
        values += [offset, type, table.value("payload", payload), now]
    if table.connection.vendor == "postgresql":
        sessions = Table(_session_model())
        sql = (
            f"WITH locked AS (SELECT {sessions.col('id')} FROM {sessions} "
            f"WHERE {sessions.col('id')} = %s FOR NO KEY UPDATE) "
            f"INSERT INTO {table} ({columns}) {select}, locked {conflict}"
        )
        params = [session, session, session, *values]
    else:
        # "WHERE true" tells SQLite's parser the ON CONFLICT belongs to the INSERT.
        sql = f"INSERT INTO {table} ({columns}) {select} WHERE true {conflict}"
        params = [session, session, *values]
    for _attempt in range(50):
        with table.connection.cursor() as cursor:
            cursor.execute(sql, params)
            written = cursor.rowcount
        if written == len(events):
            # The one publish of session events: streams in every process wake after the commit.
            transaction.on_commit(lambda: notify.publish(notify.session_channel(session_id)))
            return
        if written:
            # Part of a batch collided (see events_batched): refuse rather than leave a gap;
            # the caller's transaction rolls back.
            raise SessionProblem("session events collided", code="event_conflict")
    raise SessionProblem("could not append a session event", code="event_conflict")
