"""The refusal every session writer raises, the event log's own included."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any


class SessionProblem(Exception):
    """A refusal the API shows as {"detail", "code"} with an HTTP status.

    Defined here, at the floor of the session apps, so that the event log's refusal
    (event_conflict) is one the sessions API and pages already answer; sessions.services and
    sessions.errors hand it on with its subclasses (SessionBusy, SessionNotActive, ...).
    """

    status = 409
    code = "session_problem"

    def __init__(
        self,
        message: str,
        *,
        code: str | None = None,
        status: int | None = None,
        extra: Mapping[str, Any] | None = None,
    ) -> None:
        super().__init__(message)
        self.message = message
        if code:
            self.code = code
        if status:
            self.status = status
        self.extra = dict(extra or {})

    def as_dict(self) -> dict[str, Any]:
        return {"detail": self.message, "code": self.code, **self.extra}
