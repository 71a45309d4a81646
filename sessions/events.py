"""Server-sent events of a session: replay after Last-Event-ID, then follow new events.

The database is the stream: every event is a SessionEvent row with a dense per-session seq,
which is also the SSE `id`, so a reconnecting EventSource resumes exactly where it stopped.
A stream lives at most `wait` seconds (then the browser reconnects on its own), so a worker
thread is never held for ever. Django's request_finished signal (sent when the streaming
response closes) gives the stream's database connection back.
"""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Callable, Iterator
from typing import Any

from django.http import HttpRequest, StreamingHttpResponse

from eventlog.selectors import events_after

POLL_SECONDS = 0.2
KEEPALIVE_SECONDS = 1.0  # cheap; also how soon a closed browser tab frees its server thread
DEFAULT_WAIT_SECONDS = 25.0
MAX_WAIT_SECONDS = 55.0
RETRY_MS = 1000


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


def sse_response(stream: Iterator[str]) -> StreamingHttpResponse:
    response = StreamingHttpResponse(stream, content_type="text/event-stream; charset=utf-8")
    response["Cache-Control"] = "no-cache"
    response["X-Accel-Buffering"] = "no"  # nginx must not buffer a live stream
    return response


def wait_seconds(request: HttpRequest) -> float:
    try:
        value = float(request.GET.get("wait", DEFAULT_WAIT_SECONDS))
    except ValueError:
        value = DEFAULT_WAIT_SECONDS
    return max(0.0, min(value, MAX_WAIT_SECONDS))
