"""Request shapes of the install API (Covel's packages/shared/src/schemas/plugin-install.ts)."""

from __future__ import annotations

from typing import Literal

from ninja import Schema
from pydantic import ConfigDict, Field


class Strict(Schema):
    model_config = ConfigDict(extra="forbid")


class PreviewIn(Strict):
    url: str = Field(min_length=1, max_length=2048)


class TokenIn(Strict):
    token: str = Field(min_length=1, max_length=16384)
    acceptRisk: Literal[True]  # noqa: N815 (Covel's field name)


class BatchIn(Strict):
    tokens: list[str] = Field(min_length=1, max_length=20)
    acceptRisk: Literal[True]  # noqa: N815


class UpdateCheckIn(Strict):
    id: str = Field(pattern=r"^[a-zA-Z0-9][a-zA-Z0-9_-]{0,63}$")
    url: str | None = Field(default=None, min_length=1, max_length=2048)


class DirectoryIn(Strict):
    kind: Literal["git", "folder"]
    location: str = Field(min_length=1, max_length=2000)
