"""Publish/subscribe on named channels: how a waiting stream learns, at once, that rows changed.

A notification carries no data: it only says "read again". The database stays the truth, so a
lost notification costs latency, never a row (a subscriber that reconnects is woken and reads).

`publish(channel)` may be called from any thread of any process (a web request, a Celery task,
an `on_commit` callback). `subscribe(channel)` is awaited on an event loop and gives a
`Subscription` whose `wait(timeout)` costs no thread, no query and no connection while idle.
`subscribe_blocking(channel)` is the same for code that waits on a thread of its own (a settle
wait before an action, jobs/settle.py): its `wait(timeout)` blocks that thread.

Channels: `session_channel(id)` (a session's events, for its streams) and `settled_channel(id)`
(a settle job of the session reached a terminal state, for settle waits).

Backends (settings.COVEL_NOTIFY_BACKEND; by default "redis" when REDIS_URL is set, else
"postgres" when the database is PostgreSQL, else "local"):
- "local": the embedded default. Subscribers in the same process are woken directly; other
  processes on the machine (the Celery worker writes job events; a second web process) get a
  one-datagram wake-up through a Unix socket each listening process binds in one folder.
- "redis": one PSUBSCRIBE per process on the channel prefix, so an event written by any process
  on any machine reaches every stream; a dropped Redis connection wakes every subscriber.
- "postgres": LISTEN/NOTIFY on one PostgreSQL channel, the channel name as payload (for a
  deployment with PostgreSQL and no Redis): one extra connection per listening process, opened
  with the same parameters as Django's own (TLS files and all).
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import logging
import os
import socket
import tempfile
import threading
import time
import uuid
from pathlib import Path
from typing import Any

from django.conf import settings

log = logging.getLogger(__name__)

PREFIX = "covel:"
# Redis PSUBSCRIBE confirms within milliseconds; give a busy server a few seconds.
READY_TIMEOUT_SECONDS = 5.0


class Subscription:
    """One subscriber's wake-up flag on one event loop; notifications coalesce into one."""

    def __init__(self, hub: _Hub, channel: str, loop: asyncio.AbstractEventLoop) -> None:
        self._hub = hub
        self.channel = channel
        self._loop = loop
        self._event = asyncio.Event()
        self.closed = False

    def _wake_threadsafe(self) -> None:
        if self._loop.is_closed():
            return
        with contextlib.suppress(RuntimeError):  # the loop closed between the check and now
            self._loop.call_soon_threadsafe(self._event.set)

    async def wait(self, timeout: float | None) -> bool:
        """Until notified (True) or timeout seconds passed (False); clears the flag."""
        if not self._event.is_set():
            try:
                async with asyncio.timeout(timeout):
                    await self._event.wait()
            except TimeoutError:
                return False
        self._event.clear()
        return True

    def close(self) -> None:
        if not self.closed:
            self.closed = True
            self._hub.remove(self)


class BlockingSubscription:
    """One waiting thread's wake-up flag on one channel; notifications coalesce into one."""

    def __init__(self, hub: _Hub, channel: str) -> None:
        self._hub = hub
        self.channel = channel
        self._event = threading.Event()
        self.closed = False

    def _wake_threadsafe(self) -> None:
        self._event.set()

    def wait(self, timeout: float) -> bool:
        """Until notified (True) or timeout seconds passed (False); clears the flag."""
        woken = self._event.wait(max(0.0, timeout))
        self._event.clear()
        return woken

    def close(self) -> None:
        if not self.closed:
            self.closed = True
            self._hub.remove(self)


class _Hub:
    """The subscribers of this process, by channel; a backend wakes them from any thread."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._subs: dict[str, set[Subscription | BlockingSubscription]] = {}

    def add(self, sub: Subscription | BlockingSubscription) -> None:
        with self._lock:
            self._subs.setdefault(sub.channel, set()).add(sub)

    def remove(self, sub: Subscription | BlockingSubscription) -> None:
        with self._lock:
            subs = self._subs.get(sub.channel)
            if subs is not None:
                subs.discard(sub)
                if not subs:
                    del self._subs[sub.channel]

    def wake(self, channel: str) -> None:
        with self._lock:
            subs = list(self._subs.get(channel, ()))
        for sub in subs:
            sub._wake_threadsafe()

    def wake_all(self) -> None:
        with self._lock:
            subs = [s for group in self._subs.values() for s in group]
        for sub in subs:
            sub._wake_threadsafe()

    def count(self) -> int:
        with self._lock:
            return sum(len(group) for group in self._subs.values())


class _Backend:
    name = "?"

    def __init__(self, hub: _Hub) -> None:
        self.hub = hub

    def publish(self, channel: str) -> None:
        raise NotImplementedError

    def ensure_listening(self) -> None:
        """Blocking: returns once notifications from other processes will reach this hub."""

    def listening(self) -> bool:
        return True

    def close(self) -> None:
        """Stop listening (tests, shutdown)."""


class LocalBackend(_Backend):
    """This process directly; other processes on the machine through Unix datagram sockets."""

    name = "local"

    def __init__(self, hub: _Hub, folder: Path) -> None:
        super().__init__(hub)
        self.folder = folder
        self._sock: socket.socket | None = None
        self._path: Path | None = None
        self._lock = threading.Lock()
        self._sender = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        self._sender.setblocking(False)

    def publish(self, channel: str) -> None:
        self.hub.wake(channel)
        data = channel.encode()
        try:
            peers = list(self.folder.glob("*.sock"))
        except OSError:
            return
        for peer in peers:
            if peer == self._path:
                continue
            try:
                self._sender.sendto(data, str(peer))
            except (ConnectionRefusedError, FileNotFoundError):
                # Its process is gone (killed before it could remove its socket).
                with contextlib.suppress(OSError):
                    peer.unlink()
            except BlockingIOError:
                # The peer's queue is full: it is behind, and will read when it catches up.
                pass
            except OSError:
                log.debug("could not wake %s", peer, exc_info=True)

    def listening(self) -> bool:
        return self._sock is not None

    def ensure_listening(self) -> None:
        with self._lock:
            if self._sock is not None:
                return
            self.folder.mkdir(parents=True, exist_ok=True)
            path = self.folder / f"{os.getpid()}-{uuid.uuid4().hex[:8]}.sock"
            sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
            sock.bind(str(path))
            self._sock, self._path = sock, path
            threading.Thread(target=self._listen, name="covel-notify-local", daemon=True).start()

    def _listen(self) -> None:
        sock = self._sock
        while sock is not None and self._sock is sock:
            try:
                data = sock.recv(4096)
            except OSError:
                return
            self.hub.wake(data.decode(errors="replace"))

    def close(self) -> None:
        with self._lock:
            sock, path = self._sock, self._path
            self._sock = self._path = None
        if sock is not None:
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)
            sock.close()
        if path is not None:
            with contextlib.suppress(OSError):
                path.unlink()


class _ThreadBackend(_Backend):
    """A backend whose wake-ups from other processes arrive on one listener thread
    (`_listen`, which sets `_ready` once subscribed and returns when `_stop` is set)."""

    def __init__(self, hub: _Hub) -> None:
        super().__init__(hub)
        self._ready = threading.Event()
        self._started = False
        self._stop = False
        self._lock = threading.Lock()

    def _listen(self) -> None:
        raise NotImplementedError

    def listening(self) -> bool:
        return self._ready.is_set()

    def ensure_listening(self) -> None:
        with self._lock:
            if not self._started:
                self._started = True
                threading.Thread(
                    target=self._listen, name=f"covel-notify-{self.name}", daemon=True
                ).start()
        if not self._ready.wait(READY_TIMEOUT_SECONDS):
            raise TimeoutError(f"{self.name} did not confirm the notification channel")


class RedisBackend(_ThreadBackend):
    """PUBLISH to the channel; one listener thread per process holds PSUBSCRIBE <prefix>*."""

    name = "redis"

    def __init__(self, hub: _Hub, url: str) -> None:
        super().__init__(hub)
        import redis

        self.url = url
        self.client = redis.Redis.from_url(url)
        self._pubsub: Any = None

    def publish(self, channel: str) -> None:
        try:
            self.client.publish(PREFIX + channel, b"")
        except Exception:
            # Streams still wake at their keep-alive; a lost wake-up only costs latency.
            log.warning("could not publish on %s", channel, exc_info=True)

    def _listen(self) -> None:
        import redis

        while not self._stop:
            pubsub = None
            try:
                pubsub = redis.Redis.from_url(self.url).pubsub()
                self._pubsub = pubsub
                pubsub.psubscribe(PREFIX + "*")
                for message in pubsub.listen():
                    kind = message.get("type")
                    if kind == "psubscribe":
                        self._ready.set()
                        # Anything published while we were away is in the database: re-read.
                        self.hub.wake_all()
                    elif kind == "pmessage":
                        channel = message["channel"]
                        if isinstance(channel, bytes):
                            channel = channel.decode(errors="replace")
                        self.hub.wake(channel[len(PREFIX) :])
            except Exception:
                if self._stop:
                    return
                self._ready.clear()
                log.warning("notification listener lost Redis; reconnecting", exc_info=True)
                time.sleep(1.0)
            finally:
                if pubsub is not None:
                    with contextlib.suppress(Exception):
                        pubsub.close()

    def close(self) -> None:
        self._stop = True
        if self._pubsub is not None:
            with contextlib.suppress(Exception):
                self._pubsub.close()


class PostgresBackend(_ThreadBackend):
    """NOTIFY covel_events '<channel>' and one LISTEN connection per listening process."""

    name = "postgres"
    PG_CHANNEL = "covel_events"

    def __init__(self, hub: _Hub, conninfo: str) -> None:
        super().__init__(hub)
        self.conninfo = conninfo

    def publish(self, channel: str) -> None:
        from django.db import connection

        try:
            # Outside a transaction (callers publish after the commit) NOTIFY goes out at once.
            with connection.cursor() as cursor:
                cursor.execute("SELECT pg_notify(%s, %s)", [self.PG_CHANNEL, channel])
        except Exception:
            log.warning("could not publish on %s", channel, exc_info=True)

    def _listen(self) -> None:
        import psycopg

        while not self._stop:
            try:
                with psycopg.connect(self.conninfo, autocommit=True, **LISTEN_OPTIONS) as conn:
                    conn.execute(f"LISTEN {self.PG_CHANNEL}")
                    self._ready.set()
                    self.hub.wake_all()
                    while not self._stop:
                        for note in conn.notifies(timeout=5.0):
                            self.hub.wake(note.payload)
            except Exception:
                if self._stop:
                    return
                self._ready.clear()
                log.warning("notification listener lost PostgreSQL; reconnecting", exc_info=True)
                time.sleep(1.0)

    def close(self) -> None:
        self._stop = True


# The listening connection: named, so an operator sees it in pg_stat_activity; TCP keep-alives,
# so a connection a network cut left dead is noticed (a LISTEN connection never sends).
LISTEN_OPTIONS = {
    "application_name": "covel-notify",
    "keepalives": 1,
    "keepalives_idle": 30,
    "keepalives_interval": 10,
    "keepalives_count": 3,
}

_hub = _Hub()
_backend: _Backend | None = None
_backend_lock = threading.Lock()


def _local_folder() -> Path:
    folder = Path(getattr(settings, "COVEL_NOTIFY_DIR", "") or tempfile.gettempdir())
    # A Unix socket path holds at most 107 bytes; a deep folder gets a short stand-in.
    if len(str(folder)) > 60:
        digest = hashlib.sha256(str(folder).encode()).hexdigest()[:16]
        folder = Path(tempfile.gettempdir()) / f"covel-notify-{digest}"
    return folder


def _pg_conninfo() -> str:
    from django.db import connection

    return pg_conninfo(connection.get_connection_params())


def pg_conninfo(params: dict[str, Any]) -> str:
    """Django's connection parameters as a libpq conninfo: every libpq keyword among them (so
    TLS options such as sslrootcert come along), values quoted (a password may hold spaces);
    Django's own (cursor_factory, context, ...) left out."""
    from psycopg import pq
    from psycopg.conninfo import make_conninfo

    keywords = {option.keyword.decode() for option in pq.Conninfo.get_defaults()}
    return make_conninfo(
        **{k: v for k, v in params.items() if k in keywords and v not in (None, "")}
    )


def _default_kind() -> str:
    """Redis when there is one; else PostgreSQL's LISTEN/NOTIFY, which reaches every machine
    of the deployment; else (SQLite: one machine) this machine's sockets."""
    from django.db import connections

    if getattr(settings, "REDIS_URL", ""):
        return "redis"
    if connections["default"].vendor == "postgresql":
        return "postgres"
    return "local"


def backend() -> _Backend:
    global _backend
    with _backend_lock:
        if _backend is None:
            kind = getattr(settings, "COVEL_NOTIFY_BACKEND", "") or _default_kind()
            if kind == "redis":
                url = getattr(settings, "COVEL_NOTIFY_REDIS_URL", "") or settings.REDIS_URL
                _backend = RedisBackend(_hub, url)
            elif kind == "postgres":
                _backend = PostgresBackend(_hub, _pg_conninfo())
            elif kind == "local":
                _backend = LocalBackend(_hub, _local_folder())
            else:
                raise ValueError(f"COVEL_NOTIFY_BACKEND: unknown backend {kind!r}")
        return _backend


def reset() -> None:
    """Forget the backend (tests that change settings; a process after fork)."""
    global _backend
    with _backend_lock:
        if _backend is not None:
            _backend.close()
        _backend = None


def publish(channel: str) -> None:
    """Wake every subscriber of channel, in every process; never raises."""
    try:
        backend().publish(channel)
    except Exception:
        log.warning("could not publish on %s", channel, exc_info=True)


async def subscribe(channel: str) -> Subscription:
    """A subscription that sees every publish made after this returns."""
    chosen = backend()
    loop = asyncio.get_running_loop()
    sub = Subscription(_hub, channel, loop)
    _hub.add(sub)
    try:
        if not chosen.listening():
            # Once per process: start the listener and wait for its confirmation.
            await loop.run_in_executor(None, chosen.ensure_listening)
    except BaseException:
        sub.close()
        raise
    return sub


def subscribe_blocking(channel: str) -> BlockingSubscription:
    """subscribe() for a thread that waits: sees every publish made after this returns.
    Raises when the backend cannot listen (its server is down): the caller then polls."""
    chosen = backend()
    sub = BlockingSubscription(_hub, channel)
    _hub.add(sub)
    try:
        chosen.ensure_listening()
    except BaseException:
        sub.close()
        raise
    return sub


def session_channel(session_id: object) -> str:
    """The channel of one session's events: the writer and the streams name it the same."""
    return f"session:{session_id}"


def settled_channel(session_id: object) -> str:
    """The channel a session's settle waits listen on: a settle job of it has finished."""
    return f"settled:{session_id}"


def subscriber_count() -> int:
    return _hub.count()


# A forked child (Celery's prefork pool) must not share its parent's sockets and threads.
if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=lambda: _after_fork())


def _after_fork() -> None:
    global _backend, _hub, _backend_lock
    _hub = _Hub()
    _backend = None
    _backend_lock = threading.Lock()
