"""Reads of the event log: a session's events after a seq (SSE replay), its last seq."""

from __future__ import annotations

import uuid
from typing import Any

from eventlog.models import SessionEvent


def events_after(*, session: Any, after: int, limit: int = 500) -> list[SessionEvent]:
    """The events of a session (a Session row or its id) with seq > after, oldest first."""
    session_id: uuid.UUID = getattr(session, "pk", session)
    return list(
        SessionEvent.objects.filter(session_id=session_id, seq__gt=after).order_by("seq")[:limit]
    )


def last_event_seq(*, session: Any) -> int:
    row = SessionEvent.objects.filter(session=session).order_by("-seq").first()
    return row.seq if row else 0
