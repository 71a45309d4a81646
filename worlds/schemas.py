from __future__ import annotations

from typing import Any

from ninja import Schema

from core.schemas import PageOut


class OptionOut(Schema):
    value: str
    label: str


class IgnoredOut(Schema):
    key: str
    msg: str
    type: str


class SettingFieldOut(Schema):
    key: str
    type: str
    label: str
    description: str
    default: Any = None
    has_default: bool
    min: int | float | None = None
    max: int | float | None = None
    step: int | float | None = None
    options: list[OptionOut]
    max_chars: int | None = None
    value: Any = None
    origin: str
    reset_value: Any = None
    reset_origin: str
    set_here: bool
    ignored: list[IgnoredOut]


class PackageSettingsOut(Schema):
    package: str
    world: str | None = None
    session: str | None = None
    # The level a save at this address changes: "session", "world", or "default" (read-only).
    level: str
    can_edit: bool
    fields: list[SettingFieldOut]


class WorldAuthorLinkOut(Schema):
    label: str
    url: str


class WorldAuthorOut(Schema):
    name: str | None = None
    url: str | None = None
    about: str | None = None
    links: list[WorldAuthorLinkOut] = []


class WorldOut(Schema):
    id: str
    name: str
    description: str
    author: WorldAuthorOut | None = None
    plugins: list[str]
    plugin_settings: dict[str, dict[str, Any]]
    # characters/characters.json as synced: [{id, name, type, description, fields}]
    characters: list[dict[str, Any]] = []
    # data/world.data.yaml's characterSchema: [{id, name, type, description, min, max, options,
    # default}]
    character_schema: list[dict[str, Any]] = []
    # data/lorebook.yaml: [{id, title, keys, text}]
    lorebook: list[dict[str, Any]] = []
    state: str
    owner: str | None = None
    errors: list[dict[str, str]]
    warnings: list[dict[str, str]]


class WorldListOut(PageOut):
    items: list[WorldOut]
