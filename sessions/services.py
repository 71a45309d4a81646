"""Writes of the Sessions app: create and resolve sessions, seats, settle waits, RPC actions.

Below the turn (sessions.turns), which uses them; the turn lock is sessions.locks, the event
log eventlog.services, a player's answer to a form sessions.interactions (it runs a turn).
"""

from __future__ import annotations

import contextlib
import uuid
from collections.abc import Mapping
from typing import Any

from django.conf import settings
from django.contrib.auth.models import AbstractBaseUser
from django.db import transaction
from django.utils import timezone

from approvals.selectors import packages_usability
from catalogue.manifest.types import Manifest
from catalogue.models import Package
from core.errors import issue
from eventlog.errors import SessionProblem
from eventlog.services import event_append
from pluginhost.errors import PluginHostError
from pluginhost.services import plugin_rpc_call
from sessions import selectors
from sessions.callbacks import SessionCallbacks
from sessions.commands import CommandError, ParsedCommand, find_command, parse_command
from sessions.errors import SessionNotActive
from sessions.hooks import hooks_dispatch
from sessions.models import Session
from sessions.resolver import Resolution, resolve
from worlds.models import World
from worlds.selectors import world_player_characters
from worlds.services import user_settings_for

# ------------------------------------------------------------------ resolution and creation


def _usable_from(manifests: Mapping[str, Manifest]) -> Any:
    loaded = {p.package_id: p for p in selectors.loaded_packages()}
    # The folder of each manifest: a session that runs the kept snapshot of an approved
    # version (while a newer one waits for staff) is judged by that approval.
    verdicts = packages_usability(
        package_ids=list(manifests),
        packages=loaded,
        paths={pid: m.path for pid, m in manifests.items()},
    )

    def usable(manifest: Manifest) -> tuple[bool, str | None]:
        verdict = verdicts.get(manifest.id)
        if verdict is None:
            return False, f"package {manifest.id} is not installed"
        return verdict.usable, verdict.reason or None

    return usable


def _with_story_agent(
    requested: list[str], installed: Mapping[str, Manifest], session: Session
) -> list[str]:
    """With a story model configured, the story agent narrates; without one the function narrator
    stays the provider of narrative-engine@2 (settings.COVEL_STORY_AGENT names the package)."""
    from agents.selectors import slot_configured

    agent = getattr(settings, "COVEL_STORY_AGENT", "")
    if (
        agent
        and agent in installed
        and agent not in requested
        and agent not in (session.excluded_plugins or [])
        and slot_configured(slot="story")
    ):
        return [*requested, agent]
    return requested


def session_resolve(
    *, session: Session, installed: Mapping[str, Manifest] | None = None, save: bool = True
) -> tuple[Resolution, dict[str, Manifest]]:
    """Resolve the session's requested plugins against what is installed and usable now."""
    installed = dict(installed if installed is not None else selectors.installed_manifests())
    resolution = resolve(
        requested=_with_story_agent(list(session.requested_plugins or []), installed, session),
        installed=installed,
        usable=_usable_from(installed),
        host_version=settings.COVEL_HOST_VERSION,
        excluded=set(session.excluded_plugins or []),
    )
    before = (session.resolved_plugins, session.outcomes)
    session.resolved_plugins = list(resolution.active)
    session.outcomes = {
        pid: [o.as_dict() for o in outcomes] for pid, outcomes in resolution.outcomes.items()
    }
    _explain_broken(session.outcomes)
    # Written only when it changed: a turn resolves every time, and mostly nothing moved.
    if save and before != (session.resolved_plugins, session.outcomes):
        Session.objects.filter(pk=session.pk).update(
            resolved_plugins=session.resolved_plugins, outcomes=session.outcomes
        )
    return resolution, installed


def _explain_broken(outcomes: dict[str, list[dict[str, Any]]]) -> None:
    """An installed package the loader refused is "unknown" to the resolver; say why instead.

    The loader refuses a package outside the host range, so its verdict becomes host-range with
    the loader's own sentence; any other load error keeps unknown-plugin with the first error.
    """
    unknown = [p for p, o in outcomes.items() if o and o[-1]["code"] == "unknown-plugin"]
    if not unknown:
        return
    for package in Package.objects.filter(package_id__in=unknown).exclude(
        state=Package.State.LOADED
    ):
        errors = list(package.errors or [])
        if not errors:
            continue
        verdict = dict(outcomes[package.package_id][-1])
        ranges = [e for e in errors if e.get("code") == "host-version-unsupported"]
        if ranges:
            verdict.update(code="host-range", message=str(ranges[0].get("message")))
        else:
            first = errors[0]
            verdict["message"] = (
                f"{package.package_id} is installed but does not load: {first.get('message')} "
                f"({first.get('file', 'PLUGIN.md')}:{first.get('path', '')})"
            )
        outcomes[package.package_id][-1] = verdict


def _owner_seat(
    *,
    owner: AbstractBaseUser,
    world: World,
    character_id: str | None,
    also_character_ids: list[str] | None = None,
) -> dict[str, Any]:
    """The owner's primary seat, bound to one of the world's player characters (if it has any).

    The keys are the ones the SDK's actingCharacterOf and seatCharacterIds read. also_character_ids
    binds more of the world's player characters to the seat; the chosen one stays current.
    """
    players = world_player_characters(world=world)
    by_id = {c.get("id"): c for c in players}
    for wanted in [character_id, *(also_character_ids or [])]:
        if wanted and wanted not in by_id:
            raise SessionProblem(
                f"{wanted!r} is not a player character of world {world.world_id}",
                code="unknown_character",
                status=422,
            )
    chosen = by_id[character_id] if character_id else (players[0] if players else None)
    bound = [chosen["id"]] if chosen else []
    bound += [cid for cid in dict.fromkeys(also_character_ids or []) if cid not in bound]
    return {
        "id": "seat-1",
        "user": owner.get_username(),
        "role": "player",
        "primary": True,
        "characterIds": bound,
        "currentCharacterId": chosen["id"] if chosen else None,
    }


def session_create(
    *,
    owner: AbstractBaseUser,
    world: World,
    requested: list[str] | None = None,
    excluded: list[str] | None = None,
    title: str = "",
    locale: str = "en",
    character_id: str | None = None,
    also_character_ids: list[str] | None = None,
) -> Session:
    """A new session of a world. requested=None takes the world's plugins.

    Core packages are requested by default; the player leaves one out with `excluded`. The
    owner's seat plays `character_id` (one of the world's player characters; SessionProblem
    otherwise), or the world's first player character when none is named; also_character_ids
    binds more player characters to the seat, to switch to later.
    """
    seat = _owner_seat(
        owner=owner,
        world=world,
        character_id=character_id,
        also_character_ids=also_character_ids,
    )
    wanted = list(dict.fromkeys(requested if requested is not None else list(world.plugins or [])))
    session = Session(
        world=world,
        owner=owner,
        title=title.strip()[:200] or world.display_name,
        requested_plugins=wanted,
        excluded_plugins=sorted(set(excluded or []) - set(wanted)),
        seats=[seat],
        locale=locale or "en",
    )
    resolution, installed = session_resolve(session=session, save=False)
    session.save()
    event_append(
        session_id=session.pk,
        type="session.created",
        payload={"active": session.resolved_plugins, "requested": session.requested_plugins},
    )
    # Covel's SessionStart observes a session already saved: it cannot veto the creation.
    hooks_dispatch(
        session=session,
        manifests=_active_manifests(resolution, installed),
        event="SessionStart",
        payload={"sessionId": str(session.pk), "worldId": world.world_id},
    )
    return session


def _active_manifests(resolution: Resolution, installed: Mapping[str, Manifest]) -> list[Manifest]:
    return [installed[p] for p in resolution.active if p in installed]


def session_set_status(*, session: Session, status: str) -> Session:
    if status not in Session.Status.values:
        raise SessionProblem(
            f"status must be one of {', '.join(Session.Status.values)}",
            code="invalid_status",
            status=422,
        )
    if session.status == Session.Status.ENDED and status != Session.Status.ENDED:
        raise SessionProblem("an ended session cannot be reopened", code="session_ended")
    ending = status == Session.Status.ENDED and session.status != Session.Status.ENDED
    Session.objects.filter(pk=session.pk).update(status=status)
    session.status = status
    event_append(session_id=session.pk, type="session.status", payload={"status": status})
    if ending:
        # Cleanup only (Covel's SessionEnd is parallel): the session has already ended.
        resolution, installed = session_resolve(session=session, save=False)
        hooks_dispatch(
            session=session,
            manifests=_active_manifests(resolution, installed),
            event="SessionEnd",
            payload={"sessionId": str(session.pk), "reason": "ended"},
        )
    return session


# ------------------------------------------------------------------ seats


def seat_update(
    *,
    session: Session,
    seat_id: str,
    character_ids: list[str] | None = None,
    current_character_id: str | None = None,
) -> dict[str, Any]:
    """Rebind a seat's characters and/or switch its current one; returns the seat.

    character_ids (when given) is the seat's whole new list: player characters of the world, no
    repeats, none bound to another seat. current_character_id must be bound to the seat (after
    the rebinding); when the rebinding drops the current one, the first bound one takes over.
    A running turn keeps the seats it started with; the next turn reads the new ones. Records
    `seat.changed` on the session stream when something changed.
    """
    with transaction.atomic():
        row = (
            Session.objects.select_for_update(no_key=True)
            .only("id", "status", "seats")
            .get(pk=session.pk)
        )
        if row.status == Session.Status.ENDED:
            raise SessionProblem("an ended session cannot change its seats", code="session_ended")
        seats = [dict(s) for s in row.seats or []]
        seat = next((s for s in seats if s.get("id") == seat_id), None)
        if seat is None:
            raise SessionProblem(
                f"no seat {seat_id!r} in this session", code="not_found", status=404
            )
        bound = list(seat.get("characterIds") or [])
        current = seat.get("currentCharacterId")
        if character_ids is not None:
            bound = _seat_characters(
                session=session, seats=seats, seat_id=seat_id, character_ids=character_ids
            )
            if current not in bound:
                current = bound[0] if bound else None
        if current_character_id is not None:
            if current_character_id not in bound:
                raise SessionProblem(
                    f"{current_character_id!r} is not bound to seat {seat_id}",
                    code="not_bound",
                    status=422,
                )
            current = current_character_id
        previous = seat.get("currentCharacterId")
        if bound == list(seat.get("characterIds") or []) and current == previous:
            return seat
        seat["characterIds"], seat["currentCharacterId"] = bound, current
        Session.objects.filter(pk=session.pk).update(seats=seats)
        event_append(
            session_id=session.pk,
            type="seat.changed",
            payload={
                "seatId": seat_id,
                "characterIds": bound,
                "currentCharacterId": current,
                "previousCharacterId": previous,
            },
        )
    session.seats = seats
    return seat


def _seat_characters(
    *, session: Session, seats: list[dict[str, Any]], seat_id: str, character_ids: list[str]
) -> list[str]:
    """Check a seat's new character list: the world's player characters, each on one seat."""
    players = {c.get("id") for c in world_player_characters(world=session.world)}
    elsewhere = {
        cid: s.get("id")
        for s in seats
        if s.get("id") != seat_id
        for cid in s.get("characterIds") or []
    }
    for cid in character_ids:
        if cid not in players:
            raise SessionProblem(
                f"{cid!r} is not a player character of world {session.world.world_id}",
                code="unknown_character",
                status=422,
            )
        if cid in elsewhere:
            raise SessionProblem(
                f"{cid!r} is already bound to seat {elsewhere[cid]}",
                code="bound_elsewhere",
                status=422,
            )
    if len(set(character_ids)) != len(character_ids):
        raise SessionProblem("a character is listed twice", code="duplicate", status=422)
    if not character_ids and players:
        raise SessionProblem("a seat plays at least one character", code="required", status=422)
    return list(character_ids)


# ------------------------------------------------------------------ the session's state


def session_require_active(*, session: Session) -> None:
    if session.status != Session.Status.ACTIVE:
        raise SessionNotActive(f"this session is {session.status}; only an active session plays")


# ------------------------------------------------------------------ settle waits


def _settle_possible(session: Session) -> bool:
    """Whether the session may have settle jobs at all: some package it ran or runs now has a
    detached runtime with `settle` (one no longer loaded may have left jobs: counted in)."""
    installed = selectors.installed_manifests()
    for package_id in {*(session.package_versions or {}), *(session.resolved_plugins or [])}:
        manifest = installed.get(package_id)
        if manifest is None or any(
            (runtime.detached or {}).get("settle") for runtime in manifest.runtimes
        ):
            return True
    return False


def session_settle(
    *, session_id: uuid.UUID, session: Session | None = None
) -> dict[str, Any] | None:
    """Before an action: wait for the session's unfinished settle jobs (the Jobs issue).

    Runs without the session lock, so the jobs can commit meanwhile. Returns what happened, or
    None when there was nothing to wait for (or the jobs app is not installed). session: its
    row, to skip the jobs' query when none of its packages defers settle jobs (most turns).
    """
    try:
        from jobs.models import UNFINISHED_STATES, RuntimeJob
        from jobs.settle import settle_wait
    except ImportError:
        return None
    if session is not None and not _settle_possible(session):
        return None
    pending = list(
        RuntimeJob.objects.filter(
            session_id=session_id, settle=True, state__in=UNFINISHED_STATES
        ).values_list("job_id", flat=True)
    )
    if not pending:
        return None
    event_append(
        session_id=session_id,
        type="settle.waiting",
        payload={"count": len(pending), "jobIds": sorted(str(j) for j in pending)},
    )
    outcome = settle_wait(session_id=session_id)
    info = {
        "waitedMs": outcome.waited_ms,
        "limitMs": outcome.limit_ms,
        "waitedFor": outcome.waited_for,
        "pendingJobIds": outcome.pending_job_ids,
        "timedOut": outcome.timed_out,
    }
    if outcome.timed_out:
        # The action proceeds; the stream and the turn's trace say what it did not wait for.
        event_append(session_id=session_id, type="settle-timeout", payload=info)
    return info


def session_actions_resolve(
    *, session: Session, username: str, actions: list[Any]
) -> list[dict[str, Any]]:
    """A player's submitted actions, checked against their kinds and resolved for
    ctx.playerActions (sessions/actions.py); 422 action_invalid naming the action, field and
    rule. The kinds are those of the session's active packages as last resolved."""
    from sessions.actions import ActionInvalid, acting_seat, actions_resolve

    if not actions:
        return []
    installed = selectors.installed_manifests()
    active = {p: installed[p] for p in session.resolved_plugins or [] if p in installed}
    try:
        return actions_resolve(
            actions=actions, seat=acting_seat(session.seats or [], username), active=active
        )
    except ActionInvalid as exc:
        raise SessionProblem(
            str(exc),
            code="action_invalid",
            status=422,
            details={"issues": [issue("/body" + exc.path, exc.rule, str(exc))]},
        ) from None


# ------------------------------------------------------------------ RPC actions and commands


def _environment(
    session: Session, scopes: tuple[str, ...], active: list[Manifest]
) -> dict[str, Any] | None:
    """A command's ctx.environment, Covel's least-privilege snapshot (apps/server
    .../session/commands.ts buildCommandEnvironment): nothing without scopes; `session`;
    `activeRuntimes` (with `models`, each runtime's slot and the model staff set for it).
    No keys, URLs, prompts or plugin data."""
    if not scopes:
        return None
    env: dict[str, Any] = {"capturedAt": timezone.now().isoformat()}
    if "session" in scopes:
        env["session"] = {
            "id": str(session.pk),
            "worldId": session.world.world_id,
            "status": session.status,
            "phase": session.phase,
            "locale": session.locale,
            "turnCount": session.turn_count,  # ours: the spec's session field
        }
    if "active-runtimes" in scopes or "models" in scopes:
        models: dict[str, str] | None = None
        if "models" in scopes:
            from agents.selectors import slot_models

            models = slot_models()
        env["activeRuntimes"] = [
            _runtime_record(runtime, manifest.id, models)
            for manifest in active
            for runtime in manifest.runtimes
        ]
    return env


def _runtime_record(runtime: Any, plugin: str, models: dict[str, str] | None) -> dict[str, Any]:
    output = (runtime.data.get("io") or {}).get("output") or {}
    record: dict[str, Any] = {
        "id": runtime.qualified_id,
        "pluginId": plugin,
        "runtimeType": runtime.kind,
        "outputKind": "story" if runtime.visibility == "story" else "plugin",
    }
    if runtime.stage:
        record["stage"] = runtime.stage
    if output.get("contract"):
        record["outputContract"] = output["contract"]
    if models is not None and not runtime.is_function:
        written = (runtime.data.get("agent") or {}).get("model")
        slot = str(written or ("story" if runtime.visibility == "story" else "plugin"))
        record["model"] = {"slot": slot, "source": "manifest" if written else "default"}
        if slot in models:
            record["model"]["resolved"] = models[slot]
    return record


def session_rpc(
    *,
    session: Session,
    plugin: str,
    action: str,
    payload: Any = None,
    command_text: str | None = None,
) -> dict[str, Any]:
    """Run an RPC action of an active package (or a slash command naming one); its writes are immediate."""
    session_require_active(session=session)
    resolution, installed = session_resolve(session=session)
    if plugin not in resolution.active:
        verdict = resolution.verdict(plugin)
        why = f": {verdict.message}" if verdict is not None and not verdict.active else ""
        raise SessionProblem(
            f"package {plugin} is not active in this session{why}",
            code="plugin_not_active",
            status=404,
        )
    manifest = installed[plugin]
    parsed: ParsedCommand | None = None
    if command_text is not None:
        parsed = parse_command(command_text, [manifest], package=plugin)
        if parsed.action != action:
            raise CommandError(
                f"/{parsed.name} runs action {parsed.action}, not {action}", code="unknown-command"
            )
    elif action not in list(manifest.contributes.get("actions") or []):
        raise SessionProblem(
            f"package {plugin} declares no action {action!r}", code="unknown_action", status=404
        )
    # An RPC action is a player's action too: it sees what the session's settle jobs wrote.
    settle = session_settle(session_id=session.pk)
    # No session lease around the plugin call: a hung action held it for its whole limit, and
    # every other action of the session answered 409 meanwhile. Each immediate write takes the
    # lease for itself (lock_writes), so writes still never land inside a running turn.
    with contextlib.nullcontext():
        written: list[dict[str, Any]] = []
        callbacks = SessionCallbacks(
            session=session,
            package=plugin,
            runtime=None,
            manifest=manifest,
            # The event names what changed, never the values: a reader fetches the keys it shows
            # (GET .../plugin-data?plugin=&namespace=&key=), so one RPC cannot flood every stream.
            lock_writes=True,
            on_write=lambda ns, key, value: written.append(
                {"plugin": plugin, "namespace": ns, "key": key, "deleted": value is None}
            ),
        )
        # A command hands its action Covel's invocation, {args, ...}, as payload and ctx.command.
        invocation = parsed.invocation(invocation_id=str(uuid.uuid4())) if parsed else None
        context = {
            "sessionId": str(session.pk),
            "locale": session.locale,
            "userSettings": user_settings_for(package_id=plugin, session=session),
            "command": invocation,
            "environment": _environment(
                session,
                parsed.context if parsed else (),
                [installed[p] for p in resolution.active if p in installed],
            ),
        }
        try:
            value = plugin_rpc_call(
                manifest=manifest,
                action=action,
                payload=invocation if invocation is not None else payload,
                callbacks=callbacks,
                context=context,
            )
        except PluginHostError as exc:
            event_append(
                session_id=session.pk,
                type="rpc.failed",
                payload={
                    "plugin": plugin,
                    "action": action,
                    "code": exc.code,
                    "error": exc.message,
                },
            )
            raise SessionProblem(
                f"{plugin}/{action} failed: {exc.message}", code=exc.code, status=502
            ) from None
        if written:
            event_append(
                session_id=session.pk, type="plugin-data.changed", payload={"changes": written}
            )
        event_append(
            session_id=session.pk,
            type="rpc.completed",
            payload={"plugin": plugin, "action": action, "command": parsed.raw if parsed else None},
        )
    return {
        "plugin": plugin,
        "action": action,
        "value": value,
        "command": parsed.as_ctx() if parsed else None,
        "settle": settle,
    }


def session_command(*, session: Session, text: str) -> dict[str, Any]:
    """A slash command typed in the composer: find the active package that declares it."""
    resolution, installed = session_resolve(session=session)
    active = [installed[p] for p in resolution.active if p in installed]
    stripped = text.strip()
    name = stripped[1:].split(maxsplit=1)[0] if len(stripped) > 1 else ""
    manifest, command = find_command(name, active)
    return session_rpc(
        session=session, plugin=manifest.id, action=str(command["action"]), command_text=stripped
    )
