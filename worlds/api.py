"""Settings panels and world presets over HTTP.

Paths are absolute from /api/. The session PUT lives here (not in sessions/api.py) because it
is the same settings machinery at another level.
"""

from __future__ import annotations

import uuid
from typing import Any

from django.http import HttpRequest
from ninja import Body, Router
from ninja.responses import Status

from catalogue.models import Package
from core.auth import hub_auth
from sessions.models import Session
from worlds import selectors
from worlds.models import World
from worlds.schemas import (
    MessageOut,
    PackageSettingsOut,
    ValidationErrorOut,
    WorldOut,
)
from worlds.services import (
    SettingsInvalid,
    WorldFileError,
    session_plugin_settings_update,
    world_plugin_settings_update,
)

router = Router(tags=["worlds"])


class _Refusal(Exception):
    def __init__(self, status: int, body: dict[str, Any]) -> None:
        self.status, self.body = status, body


def _package(package_id: str) -> Package:
    package = selectors.package_get_loaded(package_id=package_id)
    if package is None:
        raise _Refusal(404, {"detail": f"no loaded package {package_id!r}"})
    return package


def _world(world_id: str) -> World:
    world = selectors.world_get(world_id=world_id)
    if world is None:
        raise _Refusal(404, {"detail": f"no world {world_id!r}"})
    return world


def _session(request: HttpRequest, session_id: str) -> Session:
    """A session its caller may see: 401 anonymous, 404 unknown, 403 someone else's."""
    if not request.user.is_authenticated:
        raise _Refusal(401, {"detail": "log in to see a session's settings"})
    try:
        key = uuid.UUID(session_id)
    except ValueError:
        raise _Refusal(
            422,
            {
                "detail": [
                    {
                        "loc": ["query", "session"],
                        "msg": "is not a session ID (UUID)",
                        "type": "uuid",
                    }
                ]
            },
        ) from None
    session = Session.objects.select_related("world", "owner").filter(pk=key).first()
    if session is None:
        raise _Refusal(404, {"detail": f"no session {session_id}"})
    if not selectors.session_can_edit(session=session, user=request.user):
        raise _Refusal(403, {"detail": "this session belongs to another player"})
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


def _invalid(exc: SettingsInvalid) -> dict[str, Any]:
    return {"detail": [e.as_detail() for e in exc.errors]}


@router.get(
    "/packages/{package_id}/settings",
    response={
        200: PackageSettingsOut,
        401: MessageOut,
        403: MessageOut,
        404: MessageOut,
        422: ValidationErrorOut,
    },
)
def package_settings(
    request: HttpRequest, package_id: str, world: str | None = None, session: str | None = None
):
    """A package's settings panel with each field's effective value and its origin."""
    try:
        package = _package(package_id)
        world_obj = _world(world) if world else None
        session_obj = _session(request, session) if session else None
        if session_obj is not None:
            if world_obj is not None and world_obj.pk != session_obj.world_id:
                mismatch = (
                    f"session {session} plays world {session_obj.world.world_id}, not {world}"
                )
                return Status(
                    422,
                    {"detail": [{"loc": ["query", "world"], "msg": mismatch, "type": "mismatch"}]},
                )
            world_obj = session_obj.world
        return Status(200, _panel(request, package, world_obj, session_obj))
    except _Refusal as refusal:
        return Status(refusal.status, refusal.body)


@router.put(
    "/worlds/{world_id}/plugin-settings/{package_id}",
    auth=hub_auth,
    response={
        200: PackageSettingsOut,
        401: MessageOut,
        403: MessageOut,
        404: MessageOut,
        409: MessageOut,
        422: ValidationErrorOut,
    },
)
def world_plugin_settings_put(
    request: HttpRequest, world_id: str, package_id: str, payload: Body[dict[str, Any]]
):
    """Set a world's presets for a package: {key: value}; null resets a key to the default."""
    try:
        world = _world(world_id)
        package = _package(package_id)
    except _Refusal as refusal:
        return Status(refusal.status, refusal.body)
    if not selectors.world_can_edit(world=world, user=request.user):
        return Status(
            403, {"detail": f"only the owner of {world.world_id} or staff may edit its presets"}
        )
    try:
        world = world_plugin_settings_update(
            world=world, package=package, values=payload, actor=request.user
        )
    except SettingsInvalid as exc:
        return Status(422, _invalid(exc))
    except WorldFileError as exc:
        return Status(409, {"detail": str(exc)})
    return Status(200, _panel(request, package, world, None))


@router.put(
    "/sessions/{session_id}/plugin-settings/{package_id}",
    auth=hub_auth,
    response={
        200: PackageSettingsOut,
        401: MessageOut,
        403: MessageOut,
        404: MessageOut,
        422: ValidationErrorOut,
    },
)
def session_plugin_settings_put(
    request: HttpRequest, session_id: str, package_id: str, payload: Body[dict[str, Any]]
):
    """Set the player's own values for a package: {key: value}; null resets a key."""
    try:
        session = _session(request, session_id)
        package = _package(package_id)
    except _Refusal as refusal:
        return Status(refusal.status, refusal.body)
    try:
        session_plugin_settings_update(
            session=session, package=package, values=payload, actor=request.user
        )
    except SettingsInvalid as exc:
        return Status(422, _invalid(exc))
    return Status(200, _panel(request, package, session.world, session))


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


@router.get("/worlds", response=list[WorldOut])
def worlds_list(request: HttpRequest):
    """Every indexed world with its author card."""
    return [_world_out(w) for w in selectors.world_list()]


@router.get("/worlds/{world_id}", response={200: WorldOut, 404: MessageOut})
def world_detail(request: HttpRequest, world_id: str):
    try:
        return Status(200, _world_out(_world(world_id)))
    except _Refusal as refusal:
        return Status(refusal.status, refusal.body)
