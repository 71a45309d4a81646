"""Player actions: each submitted action is checked against its kind, then resolved for
ctx.playerActions as (seat, kind, character, text, fields).

A plugin kind is written `<pluginId>/<name>` and comes from an active package's
contributes.actionKinds. The spec calls the declaration "pure": the server checks each action
against it. So, in this order: the kind exists, the submitting seat's role is one of its `roles`,
the `text` rule, the `fields` against its JSON Schema (no schema: no fields), and the actor (the
seat's current character, or another character bound to the seat; none when `actor: false`).

A kind without a slash is a base kind. The spec names base kinds without listing them, so the
hub takes any base-kind name and checks only the shape: text optional, no fields (a base kind
has no declaration to check them against), the actor rule as for a plugin kind.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from jsonschema import exceptions as schema_exceptions

from catalogue.manifest.types import Manifest, thaw
from sessions.forms import PLAYER_MESSAGE_MAX_LENGTH  # an action's text is a player's words too
from sessions.schema_files import schema_validator

MAX_ACTIONS = 20
BASE_KIND = re.compile(r"[a-z][a-z0-9-]{0,63}")
ACTION_KEYS = frozenset({"kind", "text", "fields", "actorId"})


class ActionInvalid(ValueError):
    """A submitted action breaks a rule; the message names the action's path and the rule."""

    def __init__(self, path: str, message: str, rule: str) -> None:
        super().__init__(f"{path}: {message} [{rule}]")
        self.path = path
        self.rule = rule


def _kinds(active: Mapping[str, Manifest]) -> dict[str, tuple[Manifest, dict[str, Any]]]:
    """Wire kind -> (package, its actionKinds entry), over the active packages."""
    found: dict[str, tuple[Manifest, dict[str, Any]]] = {}
    for manifest in active.values():
        for entry in thaw(manifest.contributes.get("actionKinds") or []):
            if isinstance(entry, dict) and isinstance(entry.get("name"), str):
                found[f"{manifest.id}/{entry['name']}"] = (manifest, entry)
    return found


def _schema_problem(manifest: Manifest, schema_path: str, fields: Any) -> str | None:
    """Why fields do not match the kind's schema (pointer and rule), or None."""
    path = Path(os.path.normpath(os.path.join(manifest.path, schema_path)))
    try:
        error = schema_exceptions.best_match(schema_validator(path).iter_errors(fields))
    except (OSError, ValueError, schema_exceptions.SchemaError) as exc:
        # A schema that cannot be used refuses every action rather than letting fields through.
        return f"the kind's schema {schema_path} cannot be used ({exc})"
    if error is None:
        return None
    where = "".join(f"/{p}" for p in error.absolute_path)
    return f"at {where or '/'}: {error.message} (rule {error.validator!r} of {schema_path})"


def _actor(seat: Mapping[str, Any], written: Any, path: str) -> str | None:
    bound = [c for c in seat.get("characterIds") or [] if isinstance(c, str)]
    if written is None:
        current = seat.get("currentCharacterId")
        return current if isinstance(current, str) else None
    if not isinstance(written, str) or written not in bound:
        raise ActionInvalid(
            f"{path}/actorId",
            f"{written!r} is not a character bound to seat {seat.get('id')!r} ({', '.join(bound) or 'none'})",
            "actor",
        )
    return written


def actions_resolve(
    *,
    actions: Sequence[Any],
    seat: Mapping[str, Any],
    active: Mapping[str, Manifest],
) -> list[dict[str, Any]]:
    """The submitted actions, checked and resolved; raises ActionInvalid at the first refusal."""
    if len(actions) > MAX_ACTIONS:
        raise ActionInvalid("/actions", f"at most {MAX_ACTIONS} actions per turn", "maxItems")
    kinds = _kinds(active)
    resolved = []
    for index, action in enumerate(actions):
        path = f"/actions/{index}"
        if not isinstance(action, Mapping):
            raise ActionInvalid(path, "an action is an object", "type")
        extra = sorted(set(action) - ACTION_KEYS)
        if extra:
            raise ActionInvalid(
                f"{path}/{extra[0]}", "an action takes no such field", "unknown-field"
            )
        kind = action.get("kind")
        if not isinstance(kind, str) or not kind:
            raise ActionInvalid(f"{path}/kind", "every action names its kind", "required")
        text = action.get("text")
        if text is not None and not isinstance(text, str):
            raise ActionInvalid(f"{path}/text", "text is a string", "type")
        if isinstance(text, str) and len(text) > PLAYER_MESSAGE_MAX_LENGTH:
            raise ActionInvalid(
                f"{path}/text",
                f"text is at most {PLAYER_MESSAGE_MAX_LENGTH} characters",
                "maxLength",
            )
        fields = action.get("fields")
        declared = kinds.get(kind)
        if declared is None:
            if "/" in kind or not BASE_KIND.fullmatch(kind):
                raise ActionInvalid(
                    f"{path}/kind",
                    f"{kind!r} is no action kind of this session's active packages",
                    "kind",
                )
            if fields is not None:
                raise ActionInvalid(f"{path}/fields", "a base kind takes no fields", "fields")
            actor = _actor(seat, action.get("actorId"), path)
        else:
            manifest, entry = declared
            roles = entry.get("roles") or ["player"]
            role = seat.get("role", "player")
            if role not in roles:
                raise ActionInvalid(
                    f"{path}/kind",
                    f"a {role} seat may not submit {kind} (roles: {', '.join(roles)})",
                    "roles",
                )
            rule = entry.get("text", "optional")
            if rule == "required" and not (text or "").strip():
                raise ActionInvalid(f"{path}/text", f"{kind} needs text", "text")
            if rule == "none" and text is not None:
                raise ActionInvalid(f"{path}/text", f"{kind} carries no text", "text")
            if "schema" in entry:
                problem = _schema_problem(
                    manifest, entry["schema"], fields if fields is not None else {}
                )
                if problem:
                    raise ActionInvalid(f"{path}/fields", problem, "schema")
            elif fields is not None:
                raise ActionInvalid(
                    f"{path}/fields", f"{kind} declares no schema, so it takes no fields", "fields"
                )
            if entry.get("actor", True) is False:
                if action.get("actorId") is not None:
                    raise ActionInvalid(
                        f"{path}/actorId", f"{kind} is not taken as a character", "actor"
                    )
                actor = None
            else:
                actor = _actor(seat, action.get("actorId"), path)
        resolved.append(
            {
                "seat": seat.get("id"),
                "kind": kind,
                "character": actor,
                "actorId": actor,  # the SDK's actingCharacterOf reads actorId
                "text": text,
                "fields": fields if declared is not None and fields is not None else None,
            }
        )
    return resolved


def form_answer_action(
    *, seat: Mapping[str, Any], interaction_id: str, values: Mapping[str, Any]
) -> dict[str, Any]:
    """The resolved action of a player's answer to a form: base kind "form", the answer as its
    fields, the form's id beside them, taken by the seat's current character."""
    current = seat.get("currentCharacterId")
    character = current if isinstance(current, str) else None
    return {
        "seat": seat.get("id"),
        "kind": "form",
        "character": character,
        "actorId": character,
        "text": None,
        "fields": dict(values),
        "interactionId": interaction_id,
    }


def acting_seat(seats: Sequence[Mapping[str, Any]], username: str) -> dict[str, Any]:
    """The seat the user submits from: theirs, or for staff acting in another's session the
    primary seat (staff may act in any session, as the owner would)."""
    seats = [s for s in seats if isinstance(s, Mapping)]
    for seat in seats:
        if seat.get("user") == username:
            return dict(seat)
    primary = next((s for s in seats if s.get("primary")), seats[0] if seats else None)
    return dict(primary) if primary else {"id": None, "role": "player", "characterIds": []}
