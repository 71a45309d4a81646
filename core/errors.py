"""The API's one error shape, and the exception every app raises to answer with it.

Every refusal of /api/ is `{"code", "message", "details"}` (plus `detail`, the message again,
for clients written against the shapes before it). `code` is stable and machine-readable,
`message` is for people, `details` is an object: `details.issues` lists field-level problems
as `{path, code, message}` with `path` a JSON Pointer (RFC 6901) into the request whose first
token says where (`/body/...`, `/query/<name>`, `/path/<name>`, `/header/<name>`). See
docs/api.md.

An app raises `ApiError` (or one of its own subclasses with a fixed status and code); the API
root (config/api.py) turns it, ninja's own errors and Django's 404 into this shape.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from core.pointer import format as pointer  # noqa: F401  (callers build issue paths with it)


class ApiError(Exception):
    """A refusal the API answers as {code, message, details} with an HTTP status."""

    status = 400
    code = "bad_request"

    def __init__(
        self,
        message: str,
        *,
        code: str | None = None,
        status: int | None = None,
        details: Mapping[str, Any] | None = None,
        headers: Mapping[str, str] | None = None,
    ) -> None:
        super().__init__(message)
        self.message = message
        if code:
            self.code = code
        if status:
            self.status = status
        self.details = dict(details or {})
        self.headers = dict(headers or {})

    def body(self) -> dict[str, Any]:
        return error_body(self.code, self.message, self.details)


class NotAuthenticated(ApiError):
    """401: no (valid) credentials. Raised by the auth classes; the API root says so too."""

    status = 401
    code = "not_authenticated"


class Forbidden(ApiError):
    status = 403
    code = "forbidden"


class NotFound(ApiError):
    status = 404
    code = "not_found"


class Conflict(ApiError):
    status = 409
    code = "conflict"


class Invalid(ApiError):
    """422 with field-level issues: Invalid("...", issues=[issue("/query/world", ...)])."""

    status = 422
    code = "invalid"

    def __init__(
        self,
        message: str,
        *,
        issues: Sequence[Mapping[str, Any]] = (),
        code: str | None = None,
        details: Mapping[str, Any] | None = None,
    ) -> None:
        super().__init__(
            message, code=code, details={**(details or {}), "issues": [dict(i) for i in issues]}
        )


class Throttled(ApiError):
    """429: too many requests; `retry_after` seconds go to details.retryAfter and Retry-After."""

    status = 429
    code = "throttled"

    def __init__(self, message: str = "too many requests", *, retry_after: int | None = None):
        super().__init__(
            message,
            details={"retryAfter": retry_after} if retry_after is not None else {},
            headers={"Retry-After": str(retry_after)} if retry_after is not None else {},
        )


def error_body(code: str, message: str, details: Mapping[str, Any] | None = None) -> dict[str, Any]:
    # "detail" repeats the message: every earlier error shape had it, and clients read it.
    return {"code": code, "message": message, "details": dict(details or {}), "detail": message}


def issue(path: str, code: str, message: str) -> dict[str, str]:
    return {"path": path, "code": code, "message": message}
