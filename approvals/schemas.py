from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

from ninja import Field, Schema

from core.schemas import PageOut, PageQuery


class ApprovalFilter(PageQuery):
    state: Literal["pending", "approved", "denied", "revoked", "superseded", "withdrawn"] | None = (
        None
    )


class DecisionIn(Schema):
    decision: Literal["allow", "deny", "revoke"]
    note: str = Field("", max_length=2000)


class JournalEntryOut(Schema):
    id: int
    request_id: int
    package_id: str
    version: str
    action: str
    actor: str
    note: str
    permissions: dict[str, Any]
    permissions_hash: str
    created_at: datetime


class ApprovalOut(Schema):
    id: int
    package_id: str
    version: str
    state: str
    is_current: bool
    code_error: str | None = Field(
        None,
        description="The package's code error when its code does not load; such a request "
        "cannot be approved (409 approval_code_error).",
    )
    content_hash: str
    permissions: dict[str, Any]
    permissions_hash: str
    asks: list[str]
    baseline_id: int | None
    baseline_permissions: dict[str, Any] | None
    diff: dict[str, list[dict[str, Any]]]
    decided_by: str | None
    decided_at: datetime | None
    note: str
    created_at: datetime


class ApprovalDetailOut(ApprovalOut):
    journal: list[JournalEntryOut]


class ApprovalPageOut(PageOut):
    items: list[ApprovalOut]
