"""The reads of Covel's ctx.store beyond plugin data: the session, its world, its characters and
the player's accepted form answers (docs/play.md, "ctx.store").

Covel's rule (packages/plugin-handlers-utils/src/function-runtime.ts, FunctionStoreView):
community code gets a narrow, read-only view: its own plugin data, the session record, the
accepted player inputs and the turn messages, all bound to the current session. Explicit world
and character reads are offered to bundled (trusted) packages only; a community package asking
for them is refused with a message that says where to read the world instead (ctx.world).
The reads are scoped by Python's own record of who is calling, never by what the plugin names.
"""

from __future__ import annotations

from typing import Any

from pluginhost.errors import CallbackRefused
from sessions.models import Interaction, Session

TRUSTED_ONLY = "store_trusted_only"


def require_trusted(*, trusted: bool, package: str, method: str) -> None:
    if not trusted:
        raise CallbackRefused(
            f"ctx.store.{method} is offered to bundled packages only; {package} is community "
            "code: read the world and its characters from ctx.world",
            code=TRUSTED_ONLY,
        )


def session_record(session: Session) -> dict[str, Any]:
    """ctx.store.getSession(): the session's phase, turn count, language and world."""
    return {
        "id": str(session.pk),
        "worldId": session.world.world_id,
        "title": session.title,
        "phase": session.phase,
        "status": session.status,
        "turnCount": session.turn_count,
        "locale": session.locale,
        "createdAt": session.created_at.isoformat() if session.created_at else None,
        "updatedAt": session.updated_at.isoformat() if session.updated_at else None,
    }


def world_record(session: Session, world_id: str | None) -> dict[str, Any] | None:
    """ctx.store.getWorld(worldId?): the session's own world; any other id reads nothing."""
    world = session.world
    if world_id not in (None, "", world.world_id):
        return None
    return {
        "id": world.world_id,
        "name": world.display_name,
        "description": world.description,
        "author": world.author,
        "plugins": list(world.plugins or []),
        "createdAt": world.created_at.isoformat() if world.created_at else None,
        "updatedAt": world.updated_at.isoformat() if world.updated_at else None,
    }


def characters(session: Session) -> list[dict[str, Any]]:
    """ctx.store.listCharacters(): the world's characters with the session's own over them."""
    from sessions.selectors import session_characters

    return session_characters(session=session)


def character(session: Session, character_id: str) -> dict[str, Any] | None:
    return next((c for c in characters(session) if c.get("id") == character_id), None)


def player_inputs(session: Session) -> list[dict[str, Any]]:
    """ctx.store.listPlayerInputs(): the session's submitted forms, oldest first, as
    {id, formId, turnId, values} (turnId: the turn the answer ran)."""
    rows = Interaction.objects.filter(
        session=session, status=Interaction.Status.SUBMITTED
    ).order_by("submitted_at", "id")
    return [
        {
            "id": row.interaction_id,
            "formId": str((row.form or {}).get("id") or row.interaction_id),
            "turnId": str(row.answer_turn_id) if row.answer_turn_id else None,
            "values": row.values,
        }
        for row in rows
    ]
