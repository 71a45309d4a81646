"""Settings panels and world presets over HTTP.

Paths are absolute from /api/. The session PUT lives here (not in sessions/api.py) because it
is the same settings machinery at another level. Refusals are the one error shape
(core/errors.py); invalid values are details.issues with a pointer per key (/body/<key>).
"""

from __future__ import annotations

import uuid
from typing import Any

from django.http import HttpRequest
from ninja import Body, Query, Router

from catalogue.models import Package
from core.auth import hub_auth
from core.errors import Conflict, Forbidden, Invalid, NotAuthenticated, NotFound, issue, pointer
from core.schemas import PageQuery, errors, page
from worlds import selectors
from worlds.models import World
from worlds.schemas import PackageSettingsOut, WorldListOut, WorldOut
from worlds.selectors import Session
from worlds.services import (
    SettingsInvalid,
    WorldFileConflict,
    WorldFileError,
    session_plugin_settings_update,
    world_plugin_settings_update,
)

router = Router(tags=["worlds"])


def _package(package_id: str) -> Package:
    package = selectors.package_get_loaded(package_id=package_id)
    if package is None:
        raise NotFound(f"no loaded package {package_id!r}")
    return package


def _world(world_id: str) -> World:
    world = selectors.world_get(world_id=world_id)
    if world is None:
        raise NotFound(f"no world {world_id!r}")
    return world


def _session(request: HttpRequest, session_id: str, *, where: str) -> Session:
    """A session its caller may see: 401 anonymous, 404 unknown, 403 someone else's."""
    if not request.user.is_authenticated:
        raise NotAuthenticated("log in to see a session's settings")
    try:
        key = uuid.UUID(session_id)
    except ValueError:
        raise Invalid(
            f"{session_id!r} is not a session ID (UUID)",
            issues=[issue(where, "uuid", "is not a session ID (UUID)")],
        ) from None
    session = selectors.session_get(session_id=key)
    if session is None:
        raise NotFound(f"no session {session_id}")
    if not selectors.session_can_edit(session=session, user=request.user):
        raise Forbidden("this session belongs to another player")
    return session


def _panel(
    request: HttpRequest, package: Package, world: World | None, session: Session | None
) -> dict[str, Any]:
    if session is not None:
        level, can_edit = "session", selectors.session_can_edit(session=session, user=request.user)
    elif world is not None:
        level, can_edit = "world", selectors.world_can_edit(world=world, user=request.user)
    else:
        level, can_edit = "default", False
    fields = selectors.settings_resolve(package=package, world=world, session=session)
    return {
        "package": package.package_id,
        "world": world.world_id if world else None,
        "session": str(session.pk) if session else None,
        "level": level,
        "can_edit": can_edit,
        "fields": [f.as_dict() for f in fields],
    }


def _invalid(exc: SettingsInvalid) -> Invalid:
    return Invalid(
        str(exc),
        issues=[issue(pointer(["body", e.key]), e.code, e.message) for e in exc.errors],
    )


@router.get(
    "/packages/{package_id}/settings",
    response={200: PackageSettingsOut, **errors(401, 403, 404, 422)},
)
def package_settings(
    request: HttpRequest, package_id: str, world: str | None = None, session: str | None = None
) -> dict[str, Any]:
    """A package's settings panel with each field's effective value and its origin."""
    package = _package(package_id)
    world_obj = _world(world) if world else None
    session_obj = _session(request, session, where="/query/session") if session else None
    if session_obj is not None:
        if world_obj is not None and world_obj.pk != session_obj.world_id:
            mismatch = f"session {session} plays world {session_obj.world.world_id}, not {world}"
            raise Invalid(mismatch, issues=[issue("/query/world", "mismatch", mismatch)])
        world_obj = session_obj.world
    return _panel(request, package, world_obj, session_obj)


@router.put(
    "/worlds/{world_id}/plugin-settings/{package_id}",
    auth=hub_auth,
    response={200: PackageSettingsOut, **errors(400, 401, 403, 404, 409, 422)},
)
def world_plugin_settings_put(
    request: HttpRequest, world_id: str, package_id: str, payload: Body[dict[str, Any]]
) -> dict[str, Any]:
    """Set a world's presets for a package: {key: value}; null resets a key to the default."""
    world = _world(world_id)
    package = _package(package_id)
    if not selectors.world_can_edit(world=world, user=request.user):
        raise Forbidden(f"only the owner of {world.world_id} or staff may edit its presets")
    try:
        world = world_plugin_settings_update(
            world=world, package=package, values=payload, actor=request.user
        )
    except SettingsInvalid as exc:
        raise _invalid(exc) from None
    except WorldFileConflict as exc:
        raise Conflict(str(exc), code="world_file_changed") from None
    except WorldFileError as exc:
        raise Conflict(str(exc), code="world_file_error") from None
    return _panel(request, package, world, None)


@router.put(
    "/sessions/{session_id}/plugin-settings/{package_id}",
    auth=hub_auth,
    response={200: PackageSettingsOut, **errors(400, 401, 403, 404, 422)},
)
def session_plugin_settings_put(
    request: HttpRequest, session_id: str, package_id: str, payload: Body[dict[str, Any]]
) -> dict[str, Any]:
    """Set the player's own values for a package: {key: value}; null resets a key."""
    session = _session(request, session_id, where="/path/session_id")
    package = _package(package_id)
    try:
        session_plugin_settings_update(
            session=session, package=package, values=payload, actor=request.user
        )
    except SettingsInvalid as exc:
        raise _invalid(exc) from None
    return _panel(request, package, session.world, session)


def _world_out(world: World) -> dict[str, Any]:
    return {
        "id": world.world_id,
        "name": world.display_name,
        "description": world.description,
        "author": world.author,
        "plugins": world.plugins or [],
        "plugin_settings": world.plugin_settings or {},
        "characters": world.characters or [],
        "character_schema": world.character_schema or [],
        "lorebook": world.lorebook or [],
        "state": world.state,
        "owner": world.owner.get_username() if world.owner else None,
        "errors": world.errors or [],
        "warnings": world.warnings or [],
    }


@router.get("/worlds", response={200: WorldListOut, **errors(422)})
def worlds_list(request: HttpRequest, paging: Query[PageQuery]):
    """The indexed worlds with their author cards, by id, one page ({items, count, limit, offset})."""
    worlds = selectors.world_list()
    items = worlds[paging.offset : paging.offset + paging.limit]
    return page(
        [_world_out(w) for w in items],
        count=worlds.count(),
        limit=paging.limit,
        offset=paging.offset,
    )


@router.get("/worlds/{world_id}", response={200: WorldOut, **errors(404, 422)})
def world_detail(request: HttpRequest, world_id: str):
    return _world_out(_world(world_id))
