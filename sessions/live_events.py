"""A turn's events, held and written together: one statement (and one notification) for most
turns instead of one per event, while a slow turn still shows its progress live.

A turn's events (turn.started, runtime statuses, narrative...) are held in memory. The turn's
commit writes what is still held in its own transaction, together with the commit's events, so
a turn that ends within FLUSH_AFTER_SECONDS writes all its events in one statement. When a turn
runs longer (a model call, a slow handler), this process's flusher thread writes what has been
held for FLUSH_AFTER_SECONDS, so a page watching the session sees the turn start and its
runtimes move within that delay, and a turn whose process dies still left its turn.started.

Order and seqs are kept: a background write and the turn's own one never overlap (each holds
the buffer's lock while it writes), and a write appends after the session's last seq.

The flusher writes only for a turn that runs outside a transaction of its caller (every real
turn): rows a caller has not committed yet are not there for another connection to see.
"""

from __future__ import annotations

import contextlib
import logging
import os
import threading
import time
import uuid
from collections.abc import Mapping
from typing import Any

from django.db import DEFAULT_DB_ALIAS, connection, connections

from eventlog.services import events_append

log = logging.getLogger(__name__)

# How long an event may wait in memory before the flusher writes it: the delay a page watching a
# slow turn sees, and the length of a turn whose events still cost one statement.
FLUSH_AFTER_SECONDS = 0.25


class HeldEvents:
    """One turn's events not written yet."""

    def __init__(self, session_id: uuid.UUID, *, live: bool) -> None:
        self.session_id = session_id
        self._live = live  # may the flusher write them (the turn is not in a caller's transaction)
        self._lock = threading.Lock()
        self._held: list[tuple[str, dict[str, Any]]] = []
        self._since: float | None = None  # when the oldest held event was added
        self._direct = False  # held no more: each event is written when it comes
        self._flushed: list[tuple[str, dict[str, Any]]] = []  # what the commit's flush wrote

    def add(self, type: str, payload: Mapping[str, Any]) -> None:
        with self._lock:
            if not self._direct:
                self._held.append((type, dict(payload)))
                if self._since is None:
                    self._since = time.monotonic()
                    if self._live:
                        _flusher.watch(self)
                return
        events_append(session_id=self.session_id, events=[(type, payload)])

    def hold(self) -> int:
        """No background write from now on (waiting for one under way): the turn's commit is
        about to lock the session row, which that write would wait for. Returns a mark for
        undo()."""
        with self._lock:
            self._live = False
            self._flushed = []
            return len(self._held)

    def undo(self, mark: int) -> None:
        """Forget what was added since hold() returned mark, and hold again what a flush since
        then wrote before it: the commit that told them rolled back."""
        with self._lock:
            held = self._flushed + self._held if self._direct else self._held
            self._held, self._flushed, self._direct = held[:mark], [], False
            self._since = time.monotonic() if self._held else None

    def flush(self) -> None:
        """Write what is held now (in the caller's transaction, if any); later events are
        written as they come."""
        with self._lock:
            held, self._held, self._since = self._held, [], None
            self._live, self._direct, self._flushed = False, True, held
        events_append(session_id=self.session_id, events=held)

    def _flush_due(self, now: float) -> float | None:
        """The flusher's round: write the held events when the oldest is due; when to look
        again (None: nothing held, stop watching)."""
        with self._lock:
            if self._since is None or not self._live:
                _flusher.forget(self)
                return None
            due = self._since + FLUSH_AFTER_SECONDS
            if due > now:
                return due
            try:
                events_append(session_id=self.session_id, events=self._held)
            except Exception:
                # The database is busy or down: the events stay held (the commit writes them).
                log.warning("could not write a turn's events early", exc_info=True)
                return now + FLUSH_AFTER_SECONDS
            self._held, self._since = [], None
            _flusher.forget(self)
            return None


class _Flusher:
    """One thread per process writing the events slow turns have held for a while."""

    def __init__(self) -> None:
        self._cond = threading.Condition()
        self._watched: set[HeldEvents] = set()
        self._pid: int | None = None
        self._thread: threading.Thread | None = None

    def watch(self, held: HeldEvents) -> None:
        with self._cond:
            # The first turn in this (possibly forked) process starts the thread.
            if self._pid != os.getpid() or self._thread is None or not self._thread.is_alive():
                self._pid = os.getpid()
                self._thread = threading.Thread(
                    target=self._run, name="turn-event-flusher", daemon=True
                )
                self._thread.start()
            self._watched.add(held)
            self._cond.notify()

    def forget(self, held: HeldEvents) -> None:
        with self._cond:
            self._watched.discard(held)

    def _run(self) -> None:
        while True:
            try:
                self._round()
            except Exception:  # the thread must outlive any one round's trouble
                log.warning("the turn event flusher's round failed", exc_info=True)
                time.sleep(FLUSH_AFTER_SECONDS)

    def _round(self) -> None:
        with self._cond:
            idle = not self._watched
        if idle:
            # Idle: the thread keeps no connection open, nor the connection's settings (the next
            # round builds its connection from the settings of then, as a new thread would).
            connection.close()
            with contextlib.suppress(AttributeError):
                del connections[DEFAULT_DB_ALIAS]
            with self._cond:
                while not self._watched:
                    self._cond.wait()
        with self._cond:
            watched = list(self._watched)
        now = time.monotonic()
        due = [when for held in watched if (when := held._flush_due(now)) is not None]
        with self._cond:
            if due and self._watched:
                self._cond.wait(timeout=max(0.01, min(due) - time.monotonic()))


_flusher = _Flusher()
