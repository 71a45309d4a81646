"""Server-sent events of a session: replay after Last-Event-ID, then follow new events.

The database is the stream: every event is a SessionEvent row with a dense per-session seq,
which is also the SSE `id`, so a reconnecting EventSource resumes exactly where it stopped.

Pushed (the default): a stream is an async generator on the server's event loop. It waits on
the session's notification channel (core/notify.py; `_events_write` publishes after each
commit), so an idle stream costs no query, no thread and no database connection, only a
keep-alive comment now and then. Every stream of one session in a process shares one feed:
one subscription and one read per notification, however many tabs watch the session; the feed
wakes each waiting stream through one future and ticks the keep-alives for all of them, so a
thousand streams cost no timer and no event each. A
stream subscribes before it replays, so a row committed while it (re)connects is read either
by the replay or after the wake-up it causes; seqs already sent are skipped, so none repeats.

Polled (settings.COVEL_EVENT_STREAM = "poll", the old design kept for bench/streams.py): a
thread per stream reads the database every 200 ms.
"""

from __future__ import annotations

import asyncio
import bisect
import contextlib
import json
import logging
import time
import uuid
from collections.abc import AsyncIterator, Callable, Iterator
from typing import Any

from asgiref.sync import SyncToAsync, sync_to_async
from django.conf import settings
from django.core.handlers.wsgi import WSGIRequest
from django.db import connections
from django.http import HttpRequest, StreamingHttpResponse

from core import notify
from eventlog.selectors import events_after
from sessions import stream_limits

log = logging.getLogger(__name__)

POLL_SECONDS = 0.2
KEEPALIVE_SECONDS = 1.0  # polled streams: also how soon a closed browser tab frees its thread
# Pushed streams: proxies drop a connection silent for a minute; the comment keeps it open.
PUSH_KEEPALIVE_SECONDS = 15.0
DEFAULT_WAIT_SECONDS = 25.0
MAX_WAIT_SECONDS = 55.0
# A pushed stream holds nothing while idle, so it may stay open long (the browser reconnects).
PUSH_DEFAULT_WAIT_SECONDS = 600.0
PUSH_MAX_WAIT_SECONDS = 3600.0
READ_LIMIT = 500
# A feed keeps this many of the rows it read (a turn's burst, many times over), and none once
# idle; a stream further behind reads the database.
RECENT_ROWS = 200
RETRY_MS = 1000
RETRY_FRAME = f"retry: {RETRY_MS}\n\n".encode()
KEEPALIVE_FRAME = b": keep-alive\n\n"


def pushed() -> bool:
    return getattr(settings, "COVEL_EVENT_STREAM", "push") != "poll"


def format_event(*, seq: int, type: str, payload: Any) -> str:
    data = json.dumps({"seq": seq, "type": type, "payload": payload}, ensure_ascii=False)
    # json.dumps never emits a raw newline, so one data line is always enough.
    return f"id: {seq}\nevent: {type}\ndata: {data}\n\n"


def last_event_id(request: HttpRequest) -> int:
    """Last-Event-ID header (what EventSource sends on reconnect), else ?after=, else 0."""
    raw = request.headers.get("Last-Event-ID") or request.GET.get("after") or "0"
    try:
        return max(0, int(str(raw).strip()))
    except ValueError:
        return 0


def stream_events(
    *,
    session_id: uuid.UUID,
    after: int,
    wait: float,
    until: Callable[[dict[str, Any]], bool] | None = None,
) -> Iterator[str]:
    """Events with seq > after; follows new ones for `wait` seconds, or until `until(event)` holds."""
    yield f"retry: {RETRY_MS}\n\n"
    deadline = time.monotonic() + wait
    last_sent = time.monotonic()
    cursor = after
    while True:
        rows = events_after(session=session_id, after=cursor)
        for row in rows:
            cursor = row.seq
            last_sent = time.monotonic()
            yield format_event(seq=row.seq, type=row.type, payload=row.payload)
            if until is not None and until({"type": row.type, "payload": row.payload}):
                return
        if rows:
            continue
        now = time.monotonic()
        if now >= deadline:
            return
        if now - last_sent >= KEEPALIVE_SECONDS:
            last_sent = now
            yield ": keep-alive\n\n"
        time.sleep(POLL_SECONDS)


class _PushedResponse(StreamingHttpResponse):
    """A pushed stream yields bytes ready to send: the server gets them as they are, without
    the two generators StreamingHttpResponse wraps around every chunk (at 1,000 streams that is
    2,000 generator steps per event)."""

    def __aiter__(self) -> AsyncIterator[bytes]:
        if not self.is_async:  # a middleware swapped in a plain iterator: Django's own way
            return super().__aiter__()
        return self._iterator


def sse_response(
    stream: Iterator[str] | AsyncIterator[str | bytes], *, pushed: bool = False
) -> StreamingHttpResponse:
    kind = _PushedResponse if pushed else StreamingHttpResponse
    response = kind(stream, content_type="text/event-stream; charset=utf-8")
    response["Cache-Control"] = "no-cache"
    response["X-Accel-Buffering"] = "no"  # nginx must not buffer a live stream
    return response


def wait_seconds(request: HttpRequest) -> float:
    default, most = (
        (PUSH_DEFAULT_WAIT_SECONDS, PUSH_MAX_WAIT_SECONDS)
        if pushed() and not isinstance(request, WSGIRequest)
        else (DEFAULT_WAIT_SECONDS, MAX_WAIT_SECONDS)
    )
    try:
        value = float(request.GET.get("wait", default))
    except ValueError:
        value = default
    return max(0.0, min(value, most))


# ------------------------------------------------------------------ pushed streams

Row = tuple[int, str, Any, bytes]  # seq, type, payload, the SSE frame


def _rows(session_id: uuid.UUID, after: int) -> list[Row]:
    # Formatted once here: a feed hands the same text to every stream of the session.
    return [
        (r.seq, r.type, r.payload, format_event(seq=r.seq, type=r.type, payload=r.payload).encode())
        for r in events_after(session=session_id, after=after, limit=READ_LIMIT)
    ]


def _rows_then_close(session_id: uuid.UUID, after: int) -> list[Row]:
    """One short read; the connection goes back (to the pool) before the stream waits again."""
    try:
        return _rows(session_id, after)
    finally:
        connections.close_all()


# Not thread_sensitive: the read runs on the loop's shared executor, so no stream keeps a
# thread of its own (and each read closes the connection it opened).
_read_detached = sync_to_async(_rows_then_close, thread_sensitive=False)
_read_in_caller = sync_to_async(_rows)


def _in_server_request() -> bool:
    # Django's ASGI handler opens a thread-sensitive context per request; the test client and
    # management commands do not, and read on the caller's own thread and connection.
    return SyncToAsync.thread_sensitive_context.get(None) is not None


async def read_rows(session_id: uuid.UUID, after: int) -> list[Row]:
    if _in_server_request():
        return await _read_detached(session_id, after)
    return await _read_in_caller(session_id, after)


class _Feed:
    """The streams of one session on one event loop: one subscription, one read per wake-up.

    The rows a read finds are kept (the last RECENT_ROWS) for every stream to take the ones
    after its own cursor; a stream whose cursor is older than what is kept reads the database
    itself, so none misses a row. A waiting stream holds one future, which the feed resolves
    after a read ("rows") or at its keep-alive tick ("tick"): no per-stream timer, no
    per-stream event, whatever the number of streams."""

    feeds: dict[tuple[int, str], _Feed] = {}

    def __init__(self, session_id: uuid.UUID, key: tuple[int, str]) -> None:
        self.session_id = session_id
        self.key = key
        self.streams = 0
        self.sub: notify.Subscription | None = None
        self.ready = asyncio.Event()
        self.task: asyncio.Task | None = None
        self.recent: list[Row] = []
        self.last: int | None = None  # every row up to this seq is known to the streams
        self.waiters: list[asyncio.Future[str]] = []

    @classmethod
    async def join(cls, session_id: uuid.UUID) -> _Feed:
        key = (id(asyncio.get_running_loop()), str(session_id))
        feed = cls.feeds.get(key)
        if feed is None:
            feed = cls.feeds[key] = cls(session_id, key)
            feed.task = asyncio.get_running_loop().create_task(feed._run())
        feed.streams += 1
        try:
            await feed.ready.wait()
        except BaseException:
            feed.leave()
            raise
        if feed.sub is None:  # the subscription failed; the stream falls back to reading
            feed.leave()
            raise RuntimeError("the notification channel is not available")
        return feed

    def leave(self) -> None:
        self.streams -= 1
        if self.streams <= 0 and self.feeds.get(self.key) is self:
            del self.feeds[self.key]
            if self.task is not None:
                self.task.cancel()

    def caught_up(self, cursor: int) -> None:
        """A stream replayed the database up to cursor: the feed's reads start after it."""
        if self.last is None:
            self.last = cursor

    def rows_after(self, cursor: int) -> list[Row] | None:
        """The kept rows after cursor; None when they no longer reach back to it."""
        if self.last is None:
            return None
        if cursor >= self.last:
            return []
        if not self.recent or self.recent[0][0] > cursor + 1:
            return None
        return self.recent[bisect.bisect_right(self.recent, cursor, key=_seq) :]

    async def wait(self, handle: stream_limits.StreamHandle) -> str:
        """Until the next read ("rows"), keep-alive tick ("tick"), or the stream is closed for
        a newer one ("closed")."""
        waiter = handle.waiter = asyncio.get_running_loop().create_future()
        self.waiters.append(waiter)
        return await waiter

    def _wake(self, why: str) -> None:
        waiters, self.waiters = self.waiters, []
        for waiter in waiters:
            if not waiter.done():  # a stream cancelled while it waited
                waiter.set_result(why)

    async def _run(self) -> None:
        try:
            try:
                self.sub = await notify.subscribe(notify.session_channel(self.session_id))
            finally:
                self.ready.set()
            while True:
                if await self.sub.wait(PUSH_KEEPALIVE_SECONDS):
                    await self._read()
                    self._wake("rows")
                else:
                    # Quiet for a while: every waiting stream has taken every row, and one that
                    # is not waiting reads the database. An idle session keeps no rows.
                    self.recent = []
                    self._wake("tick")
        finally:
            if self.sub is not None:
                self.sub.close()
            if self.feeds.get(self.key) is self:
                del self.feeds[self.key]

    async def _read(self) -> None:
        """The rows after the last known one, kept for the streams. If the read fails, the
        feed forgets what it kept: each stream then reads the database itself (and ends, for
        its browser to reconnect, if that fails too)."""
        try:
            while self.last is not None:
                rows = await read_rows(self.session_id, self.last)
                newer = [row for row in rows if row[0] > self.last]
                if newer:
                    self.recent = (self.recent + newer)[-RECENT_ROWS:]
                    self.last = newer[-1][0]
                if len(rows) < READ_LIMIT:
                    return
        except Exception:
            log.warning("a feed could not read session %s", self.session_id, exc_info=True)
            self.recent, self.last = [], None


def _seq(row: Row) -> int:
    return row[0]


def shed_request_thread() -> None:
    """Give back the thread Django's sync middleware ran this request on.

    Under ASGI every request has a one-thread executor for thread-sensitive code, kept until
    the response ends; an open stream would keep that thread for hours. Its database
    connection is closed first; a later thread-sensitive call simply starts a new executor."""
    context = _thread_sensitive_context()
    if context is None:
        return
    executor = SyncToAsync.context_to_thread_executor.pop(context, None)
    if executor is not None:
        executor.shutdown(wait=False)


def _thread_sensitive_context() -> Any:
    return SyncToAsync.thread_sensitive_context.get(None)


async def stream_events_pushed(
    *,
    session_id: uuid.UUID,
    after: int,
    wait: float,
    until: Callable[[dict[str, Any]], bool] | None = None,
    owner: Any = None,
    started: Callable[[], None] | None = None,
) -> AsyncIterator[bytes]:
    """Events with seq > after; follows new ones for `wait` seconds, or until `until(event)`.

    `owner` (the user) is counted against the per-user cap; `started` is called once the
    replay is done, giving back the stream's start place (sessions/stream_limits.py)."""
    # Here, not in the view: Django's middleware has finished with the response by now.
    await prepare_stream()
    yield RETRY_FRAME
    deadline = time.monotonic() + wait
    cursor = after
    feed: _Feed | None = None
    key = str(session_id)
    handle = stream_limits.registry.add(user=owner, session=key)
    try:
        # Subscribed before the replay: a row committed from here on wakes the feed.
        with contextlib.suppress(Exception):
            feed = await _Feed.join(session_id)
        rows: list[Row] | None = None  # None: read the database (the replay)
        while True:
            if rows is None:
                rows = await read_rows(session_id, cursor)
                replaying = len(rows) == READ_LIMIT
                if not replaying and started is not None:
                    started()
                    started = None
                if feed is not None and not replaying:
                    feed.caught_up(rows[-1][0] if rows else cursor)
            else:
                replaying = False
            # Every new frame in one chunk: a burst of events is one write to the socket.
            frames, cursor, done = _frames(rows, cursor, until)
            if frames:
                yield frames
            if done:
                return
            if replaying:
                rows = None
            else:
                rows = feed.rows_after(cursor) if feed is not None else []
            if rows is None or rows:
                continue
            if handle.closing:
                yield stream_limits.CLOSED_FRAME
                return
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return
            if feed is None:
                # No notification channel: fall back to reading every second.
                await asyncio.sleep(min(remaining, 1.0))
                rows = None
                continue
            try:
                if remaining < PUSH_KEEPALIVE_SECONDS:
                    # The stream's end comes before the feed's next tick: a timer of its own.
                    async with asyncio.timeout(remaining):
                        why = await feed.wait(handle)
                else:
                    why = await feed.wait(handle)
            except TimeoutError:
                return
            if why == "tick":
                yield KEEPALIVE_FRAME
            rows = feed.rows_after(cursor)
    finally:
        stream_limits.registry.remove(handle, user=owner, session=key)
        if started is not None:
            started()
        if feed is not None:
            feed.leave()


def _frames(
    rows: list[Row], cursor: int, until: Callable[[dict[str, Any]], bool] | None
) -> tuple[bytes, int, bool]:
    """The frames of the rows after cursor, the new cursor, and whether `until` was met."""
    frames = []
    for seq, type, payload, frame in rows:
        if seq <= cursor:
            continue  # the feed and the replay both read it
        cursor = seq
        frames.append(frame)
        if until is not None and until({"type": type, "payload": payload}):
            return b"".join(frames), cursor, True
    return b"".join(frames), cursor, False


async def prepare_stream() -> None:
    """As a pushed stream starts: no connection and no thread stay with the request."""
    if _in_server_request():
        await sync_to_async(connections.close_all)()
        shed_request_thread()


async def _polled(stream: Iterator[str]) -> AsyncIterator[str]:
    """The old design under ASGI: each chunk on the request's own thread (and connection)."""
    step = sync_to_async(next)
    while True:
        chunk = await step(stream, None)
        if chunk is None:
            return
        yield chunk


def stream_response(
    *,
    request: HttpRequest,
    session_id: uuid.UUID,
    after: int,
    wait: float,
    until: Callable[[dict[str, Any]], bool] | None = None,
) -> StreamingHttpResponse:
    """The SSE response of a session's events: pushed, or polled when settings say so.

    Under WSGI (Django's test live server) there is no event loop to wait on, and WSGI would
    buffer an async stream whole: such a request gets the polled stream, on its own thread."""
    polled = stream_events(session_id=session_id, after=after, wait=wait, until=until)
    if isinstance(request, WSGIRequest):
        return sse_response(polled)
    if not pushed():
        return sse_response(_polled(polled))
    user = getattr(request, "user", None)
    return sse_response(
        stream_events_pushed(
            session_id=session_id,
            after=after,
            wait=wait,
            until=until,
            owner=user.pk if user is not None and user.is_authenticated else None,
            started=getattr(request, "stream_started", None),
        ),
        pushed=True,
    )
