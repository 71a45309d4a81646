"""API schemas of the sources app."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from ninja import Schema


class SourceIssueOut(Schema):
    file: str
    path: str
    code: str
    message: str


class SourcePluginSummaryOut(Schema):
    id: str
    name: str
    state: str
    errors: int
    warnings: int
    url: str


class SourceJobOut(Schema):
    name: str
    every: str
    every_from: str
    timeout: str
    retry: str
    active: bool
    state: str
    failures: int
    next_run_at: datetime


class SourcePluginOut(Schema):
    id: str
    name: str
    state: str
    # The server's own path: staff only (null for everyone else).
    folder: str | None
    content_hash: str
    synced_at: datetime
    manifest: dict[str, Any]
    errors: list[SourceIssueOut]
    warnings: list[SourceIssueOut]
    jobs: list[SourceJobOut]


class ResolveIn(Schema):
    key: str | None = None
    url: str | None = None


class ResolveOut(Schema):
    key: str
    url: str | None
    label: str
    fields: dict[str, str]
