"""Settle notifications: how a waiting action learns, promptly, that a job finished.

With REDIS_URL set, a job publishes on its session's channel once it reaches a terminal state
(after the commit); a waiter subscribes before it reads the database, so a job that finishes in
between is never missed. Without Redis (the embedded default) there is nothing to subscribe to,
and the waiter polls the database with a short back-off instead (see settle.py).
"""

from __future__ import annotations

import json
import logging
import threading
import uuid
from typing import Any

from django.conf import settings

log = logging.getLogger(__name__)

CHANNEL_PREFIX = "covel:jobs:settled:"
_clients: dict[str, Any] = {}
_lock = threading.Lock()


def redis_url() -> str:
    return str(getattr(settings, "COVEL_JOBS_NOTIFY_URL", "") or getattr(settings, "REDIS_URL", ""))


def channel_for(session_id: uuid.UUID | str) -> str:
    return f"{CHANNEL_PREFIX}{session_id}"


def _client(url: str) -> Any:
    # One connection pool per process and URL; redis-py resets a pool inherited across fork.
    with _lock:
        client = _clients.get(url)
        if client is None:
            import redis

            client = redis.Redis.from_url(url)
            _clients[url] = client
        return client


def publish_settled(*, session_id: uuid.UUID | str, job_id: uuid.UUID | str, state: str) -> None:
    url = redis_url()
    if not url:
        return
    message = json.dumps({"jobId": str(job_id), "state": state})
    try:
        _client(url).publish(channel_for(session_id), message)
    except Exception:
        # The waiter still wakes at its deadline; a lost notification only costs latency.
        log.exception("could not publish the settle of job %s", job_id)


class Subscription:
    """A confirmed subscription to one session's settle channel."""

    def __init__(self, *, session_id: uuid.UUID | str, url: str) -> None:
        self.pubsub = _client(url).pubsub(ignore_subscribe_messages=False)
        channel = channel_for(session_id)
        self.pubsub.subscribe(channel)
        # Wait for Redis to confirm: only then is every later PUBLISH guaranteed to reach us.
        while True:
            message = self.pubsub.get_message(timeout=5.0)
            if message is None:
                raise TimeoutError(f"Redis did not confirm the subscription to {channel}")
            if message.get("type") == "subscribe":
                return

    def wait(self, timeout: float) -> bool:
        """Block up to timeout seconds for a notification; True when one arrived."""
        message = self.pubsub.get_message(timeout=max(0.0, timeout))
        return message is not None and message.get("type") == "message"

    def close(self) -> None:
        try:
            self.pubsub.close()
        except Exception:
            log.debug("closing a settle subscription failed", exc_info=True)


def subscribe(*, session_id: uuid.UUID | str) -> Subscription | None:
    url = redis_url()
    if not url:
        return None
    return Subscription(session_id=session_id, url=url)
