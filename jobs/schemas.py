"""API schemas of the jobs app (keys in camelCase, like the session's events)."""

from __future__ import annotations

from typing import Any, Literal

from ninja import Schema

from core.schemas import PageOut, PageQuery
from jobs.models import JobState

StateName = Literal[tuple(JobState.values)]  # type: ignore[valid-type]


class JobOut(Schema):
    jobId: str
    sessionId: str
    pluginId: str
    runtimeId: str
    sourceTurnId: str | None
    state: str
    reason: str | None
    error: str | None
    attempt: int
    retryOf: str | None
    settle: bool
    maxSettleWaitMs: int
    maxQueueMs: int | None
    maxExecutionMs: int | None
    packageVersion: str | None
    leaseOwner: str | None
    leaseExpiresAt: str | None
    queuedAt: str | None
    claimedAt: str | None
    startedAt: str | None
    finishedAt: str | None
    updatedAt: str | None
    queueMs: int | None
    runMs: int | None
    result: Any = None


class JobListOut(PageOut):
    items: list[JobOut]


class JobListFilter(PageQuery):
    state: StateName | None = None  # type: ignore[valid-type]
