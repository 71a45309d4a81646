"""The refusal every session writer raises, the event log's own included."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from core.errors import ApiError


class SessionProblem(ApiError):
    """A refusal the API answers in the one error shape (core/errors.py) with an HTTP status.

    `extra` goes into the error.occurred event as it is; `details` (default: extra) is what the
    API answers in details.

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
        details: Mapping[str, Any] | None = None,
    ) -> None:
        super().__init__(
            message, code=code, status=status, details=extra if details is None else details
        )
        self.extra = dict(extra or {})

    def as_dict(self) -> dict[str, Any]:
        return {"detail": self.message, "code": self.code, **self.extra}
