"""How many event streams one web process holds, and how fast it lets them start.

Two things go wrong when browsers open streams in bulk (docs/deploy.md, "Event streams"):
- a reconnect storm (every EventSource of a restarted server comes back in the same second):
  thousands of starts each want a database connection at once for sign-in, the session check
  and the replay, the pool runs dry and starts fail after a long wait;
- one player opening streams on their own session without end, which costs every other
  player of the process.

So a stream's start passes a gate (`StreamStartMiddleware`, before sign-in runs): at most
COVEL_STREAM_STARTS starts at a time, waiting at most COVEL_STREAM_START_WAIT_SECONDS for a
place, and at most COVEL_STREAMS_MAX open streams in the process. Past either, the answer is
a fast 503 with Retry-After, which EventSource obeys by coming back later. The place is given
back as soon as the stream has replayed (it then waits on a notification, holding nothing).

And an open stream is counted per user and per session: the newest is kept, the oldest is
closed with an `event: stream.closed` frame (play.js then stops its EventSource, so two tabs
over the cap cannot take turns closing each other) once a user or a session passes its cap.
"""

from __future__ import annotations

import asyncio
import re
import time
from collections import OrderedDict
from collections.abc import Callable
from typing import Any

from asgiref.sync import markcoroutinefunction
from django.conf import settings
from django.http import HttpRequest, HttpResponse, JsonResponse

STREAM_PATH = re.compile(r"^/api/sessions/[^/]+/events/?$")
CLOSED_FRAME = (
    b'event: stream.closed\ndata: {"reason": "too-many-streams", "message": '
    b'"a newer stream of yours replaced this one"}\n\n'
)


def _limit(name: str, default: int) -> int:
    return int(getattr(settings, name, default))


class StreamHandle:
    """One open stream: closed by the registry when newer ones push it past a cap."""

    __slots__ = ("closing", "waiter")

    def __init__(self) -> None:
        self.closing = False
        self.waiter: asyncio.Future[str] | None = None

    def close(self) -> None:
        self.closing = True
        if self.waiter is not None and not self.waiter.done():
            self.waiter.set_result("closed")


class _Registry:
    """The open streams of this process, oldest first, by user and by session."""

    def __init__(self) -> None:
        self.open = 0
        self.by_user: dict[Any, OrderedDict[StreamHandle, None]] = {}
        self.by_session: dict[str, OrderedDict[StreamHandle, None]] = {}

    def add(self, *, user: Any, session: str) -> StreamHandle:
        handle = StreamHandle()
        self.open += 1
        for groups, key, cap in (
            (self.by_user, user, _limit("COVEL_STREAMS_PER_USER", 0)),
            (self.by_session, session, _limit("COVEL_STREAMS_PER_SESSION", 0)),
        ):
            if key is None:
                continue
            group = groups.setdefault(key, OrderedDict())
            group[handle] = None
            while cap and len(group) > cap:
                oldest, _ = group.popitem(last=False)
                oldest.close()
        return handle

    def remove(self, handle: StreamHandle, *, user: Any, session: str) -> None:
        self.open -= 1
        for groups, key in ((self.by_user, user), (self.by_session, session)):
            group = groups.get(key)
            if group is not None:
                group.pop(handle, None)
                if not group:
                    del groups[key]


registry = _Registry()


def retry_later(seconds: int, code: str, message: str) -> JsonResponse:
    response = JsonResponse(
        {"code": code, "message": message, "details": {"retryAfter": seconds}}, status=503
    )
    response["Retry-After"] = str(seconds)
    return response


class _StartGate:
    """At most COVEL_STREAM_STARTS stream starts at a time in this event loop."""

    def __init__(self) -> None:
        self.loop: asyncio.AbstractEventLoop | None = None
        self.places: asyncio.Semaphore | None = None

    def semaphore(self) -> asyncio.Semaphore:
        loop = asyncio.get_running_loop()
        if self.loop is not loop or self.places is None:
            self.loop, self.places = loop, asyncio.Semaphore(_limit("COVEL_STREAM_STARTS", 64))
        return self.places


gate = _StartGate()


class StreamStartMiddleware:
    """The gate in front of GET /api/sessions/<id>/events (see the module's docstring).

    Async only: Django then runs the sync middleware below it on a thread, so the gate is
    passed before any thread or database connection is taken for the request."""

    sync_capable = False
    async_capable = True

    def __init__(self, get_response: Callable[[HttpRequest], Any]) -> None:
        self.get_response = get_response
        markcoroutinefunction(self)

    async def __call__(self, request: HttpRequest) -> HttpResponse:
        return await self.__acall__(request)

    async def __acall__(self, request: HttpRequest) -> HttpResponse:
        if request.method != "GET" or not STREAM_PATH.match(request.path):
            return await self.get_response(request)
        retry = _limit("COVEL_STREAM_RETRY_SECONDS", 5)
        most = _limit("COVEL_STREAMS_MAX", 0)
        if most and registry.open >= most:
            return retry_later(
                retry, "too_many_streams", "this server holds all the streams it can; try again"
            )
        places = gate.semaphore()
        started = time.monotonic()
        try:
            async with asyncio.timeout(_limit("COVEL_STREAM_START_WAIT_SECONDS", 10)):
                await places.acquire()
        except TimeoutError:
            return retry_later(
                retry, "server_busy", "too many streams are starting at once; try again"
            )
        released = False

        def release() -> None:
            nonlocal released
            if not released:
                released = True
                places.release()

        # The stream gives the place back once it has replayed (sessions/events.py); any other
        # answer (an error, a refusal) gives it back here, and closing the response always does.
        request.stream_started = release  # type: ignore[attr-defined]
        request.stream_waited = time.monotonic() - started  # type: ignore[attr-defined]
        try:
            response = await self.get_response(request)
        except BaseException:
            release()
            raise
        if not getattr(response, "streaming", False) or response.status_code != 200:
            release()
        else:
            response._resource_closers.append(release)
        return response
