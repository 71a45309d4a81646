"""API schemas every router shares: the error shape and the paging of lists (docs/api.md)."""

from __future__ import annotations

from typing import Any

from ninja import Field, Schema
from pydantic import ConfigDict

# An offset past any real table; bounded so a database never sees a number it cannot hold.
MAX_OFFSET = 1_000_000


class ErrorIssueOut(Schema):
    path: str = Field(
        description="JSON Pointer (RFC 6901) into the request; the first token says where: "
        "/body/..., /query/<name>, /path/<name>, /header/<name>."
    )
    code: str = Field(description="The rule broken, machine-readable.")
    message: str


class ErrorDetailsOut(Schema):
    """Always an object; `issues` for field-level problems, other keys per error code."""

    model_config = ConfigDict(extra="allow")

    issues: list[ErrorIssueOut] | None = None


class ErrorOut(Schema):
    code: str = Field(description="Stable and machine-readable, e.g. not_found, session_busy.")
    message: str = Field(description="For people.")
    details: ErrorDetailsOut
    detail: str = Field(
        json_schema_extra={"deprecated": True},
        description="The message again, for clients of the error shapes before this one.",
    )


def errors(*statuses: int) -> dict[int, Any]:
    """response={200: X, **errors(404, 422)}: the error statuses an operation may answer."""
    return {status: ErrorOut for status in statuses}


class PageQuery(Schema):
    limit: int = Field(50, ge=1, le=200, description="At most this many items.")
    offset: int = Field(0, ge=0, le=MAX_OFFSET, description="Skip this many items first.")


class PageOut(Schema):
    """The one paging shape: a list's `items` plus `count` (all matches), `limit`, `offset`."""

    count: int = Field(description="How many items match in all, over every page.")
    limit: int
    offset: int


def page(items: list[Any], *, count: int, limit: int, offset: int) -> dict[str, Any]:
    return {"items": items, "count": count, "limit": limit, "offset": offset}
