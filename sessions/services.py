"""Writes of the Sessions app: create and resolve sessions, the turn lock, events, RPC actions."""

from __future__ import annotations

import contextlib
import secrets
import threading
import time
import uuid
from collections.abc import Iterator, Mapping
from datetime import timedelta
from typing import Any

from django.conf import settings
from django.contrib.auth.models import AbstractBaseUser
from django.db import transaction
from django.utils import timezone

from approvals.selectors import packages_usability
from catalogue.manifest.types import Manifest
from catalogue.models import Package
from core import notify
from core.sql import Table
from pluginhost.errors import PluginHostError
from pluginhost.services import plugin_form_validate, plugin_rpc_call
from sessions import selectors
from sessions.callbacks import SessionCallbacks
from sessions.commands import CommandError, ParsedCommand, find_command, parse_command
from sessions.forms import form_check_values, form_player_line
from sessions.models import Interaction, Session, SessionEvent, Turn
from sessions.resolver import Resolution, resolve
from worlds.models import World
from worlds.selectors import world_player_characters
from worlds.services import user_settings_for

# A turn renews its lease at every runtime boundary; a crashed process frees the session this soon.
LOCK_LEASE_SECONDS = 300
# "Waits briefly, then 409": long enough to absorb a double click, short enough to feel immediate.
LOCK_WAIT_SECONDS = 2.0
LOCK_POLL_SECONDS = 0.05


class SessionProblem(Exception):
    """A refusal the API shows as {"detail", "code"} with an HTTP status."""

    status = 409
    code = "session_problem"

    def __init__(
        self,
        message: str,
        *,
        code: str | None = None,
        status: int | None = None,
        extra: Mapping[str, Any] | None = None,
    ) -> None:
        super().__init__(message)
        self.message = message
        if code:
            self.code = code
        if status:
            self.status = status
        self.extra = dict(extra or {})

    def as_dict(self) -> dict[str, Any]:
        return {"detail": self.message, "code": self.code, **self.extra}


class SessionBusy(SessionProblem):
    code = "session_busy"


class SessionNotActive(SessionProblem):
    code = "session_not_active"


class FormRejected(SessionProblem):
    """A submission the form's checks or its validator refused: nothing stored, no turn."""

    status = 422
    code = "form_rejected"


# ------------------------------------------------------------------ events


def event_append(*, session_id: uuid.UUID, type: str, payload: Mapping[str, Any]) -> None:
    """Append one event with the next seq (inside events_batched(): at the end of that block).

    One statement, INSERT ... SELECT MAX(seq) + 1: events are written on every job transition,
    so a round trip saved here is saved many times. Two writers racing for the same seq do not
    fail: ON CONFLICT DO NOTHING leaves the loser with no row (and its transaction intact), and
    it simply tries again. On SQLite writers are serialised, so the race cannot happen there.

    On PostgreSQL the same statement first locks the session row (FOR NO KEY UPDATE, held to the
    end of the transaction). Without it, a writer whose uncommitted event holds seq N in the
    unique index and who then waits for the session row (a turn's or a job's commit holds it)
    deadlocks with that commit's own event, which waits to learn whether seq N is taken. Taking
    the session row before writing an event, as every commit does, leaves no cycle. (A writer
    that had to wait for the lock still reads MAX(seq) as of the start of its statement, so its
    first try may collide and it tries once more.)
    """
    held = getattr(_batch, "events", None)
    if held is not None:
        held.append((session_id, type, dict(payload)))
        return
    _events_write(session_id, [(type, dict(payload))])


_batch = threading.local()


@contextlib.contextmanager
def events_batched() -> Iterator[None]:
    """Inside the caller's transaction: the events appended in the block are written together,
    one statement per session, when the block ends without an error (a job's commit writes
    three or four). A block inside another block joins the outer one.

    On PostgreSQL the transaction must already hold the session row lock (a job's commit takes
    it in its staleness re-check): a batch that first had to wait for the lock could find some
    of its seqs taken by then, and is refused rather than written with a gap."""
    if getattr(_batch, "events", None) is not None:
        yield
        return
    _batch.events = held = []
    try:
        yield
    finally:
        _batch.events = None
    sessions: dict[Any, list[tuple[str, dict[str, Any]]]] = {}
    for session_id, type, payload in held:
        sessions.setdefault(session_id, []).append((type, payload))
    for session_id, events in sessions.items():
        _events_write(session_id, events)


def _events_write(session_id: uuid.UUID, events: list[tuple[str, dict[str, Any]]]) -> None:
    """INSERT the events with seqs MAX+1, MAX+2, ... in one statement (see event_append)."""
    table = Table(SessionEvent)
    col = table.col
    columns = ", ".join(col(name) for name in ("session", "seq", "type", "payload", "created_at"))
    last = f"SELECT MAX({col('seq')}) FROM {table} WHERE {col('session')} = %s"
    rows = ", ".join(["(%s, %s, %s, %s)"] * len(events))
    select = (
        f"SELECT %s, COALESCE(({last}), 0) + v.column1, v.column2, v.column3, v.column4 "
        f"FROM (VALUES {rows}) AS v"
    )
    conflict = f"ON CONFLICT ({col('session')}, {col('seq')}) DO NOTHING"
    session = table.value("session", session_id)
    now = table.value("created_at", timezone.now())
    values: list[Any] = []
    for offset, (type, payload) in enumerate(events, start=1):
        values += [offset, type, table.value("payload", payload), now]
    if table.connection.vendor == "postgresql":
        sessions = Table(Session)
        sql = (
            f"WITH locked AS (SELECT {sessions.col('id')} FROM {sessions} "
            f"WHERE {sessions.col('id')} = %s FOR NO KEY UPDATE) "
            f"INSERT INTO {table} ({columns}) {select}, locked {conflict}"
        )
        params = [session, session, session, *values]
    else:
        # "WHERE true" tells SQLite's parser the ON CONFLICT belongs to the INSERT.
        sql = f"INSERT INTO {table} ({columns}) {select} WHERE true {conflict}"
        params = [session, session, *values]
    for _attempt in range(50):
        with table.connection.cursor() as cursor:
            cursor.execute(sql, params)
            written = cursor.rowcount
        if written == len(events):
            # The one publish of session events: streams in every process wake after the commit.
            transaction.on_commit(lambda: notify.publish(notify.session_channel(session_id)))
            return
        if written:
            # Part of a batch collided (see events_batched): refuse rather than leave a gap;
            # the caller's transaction rolls back.
            raise SessionProblem("session events collided", code="event_conflict")
    raise SessionProblem("could not append a session event", code="event_conflict")


# ------------------------------------------------------------------ resolution and creation


def _usable_from(manifests: Mapping[str, Manifest]) -> Any:
    verdicts = packages_usability(package_ids=list(manifests))

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
    session.resolved_plugins = list(resolution.active)
    session.outcomes = {
        pid: [o.as_dict() for o in outcomes] for pid, outcomes in resolution.outcomes.items()
    }
    _explain_broken(session.outcomes)
    if save:
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
    session_resolve(session=session, save=False)
    session.save()
    event_append(
        session_id=session.pk,
        type="session.created",
        payload={"active": session.resolved_plugins, "requested": session.requested_plugins},
    )
    return session


def session_set_status(*, session: Session, status: str) -> Session:
    if status not in Session.Status.values:
        raise SessionProblem(
            f"status must be one of {', '.join(Session.Status.values)}",
            code="invalid_status",
            status=422,
        )
    if session.status == Session.Status.ENDED and status != Session.Status.ENDED:
        raise SessionProblem("an ended session cannot be reopened", code="session_ended")
    Session.objects.filter(pk=session.pk).update(status=status)
    session.status = status
    event_append(session_id=session.pk, type="session.status", payload={"status": status})
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


# ------------------------------------------------------------------ the turn lock


def session_lock_acquire(*, session_id: uuid.UUID, wait: float = LOCK_WAIT_SECONDS) -> str:
    """Take the session's turn lease, waiting up to `wait` seconds; raises SessionBusy.

    The check-and-set runs in a transaction that locks the row (FOR UPDATE on PostgreSQL, an
    IMMEDIATE transaction on SQLite), so two callers can never both see the session free.
    """
    token = secrets.token_hex(16)
    deadline = time.monotonic() + max(0.0, wait)
    while True:
        with transaction.atomic():
            row = (
                Session.objects.select_for_update(no_key=True)
                .only("id", "lock_token", "lock_expires")
                .filter(pk=session_id)
                .first()
            )
            if row is None:
                raise SessionProblem("no such session", code="not_found", status=404)
            now = timezone.now()
            if not row.lock_token or (row.lock_expires is not None and row.lock_expires < now):
                Session.objects.filter(pk=session_id).update(
                    lock_token=token, lock_expires=now + timedelta(seconds=LOCK_LEASE_SECONDS)
                )
                return token
        if time.monotonic() >= deadline:
            raise SessionBusy(
                "another action is running in this session; try again when it has finished"
            )
        time.sleep(LOCK_POLL_SECONDS)


def session_lock_renew(*, session_id: uuid.UUID, token: str) -> bool:
    return bool(
        Session.objects.filter(pk=session_id, lock_token=token).update(
            lock_expires=timezone.now() + timedelta(seconds=LOCK_LEASE_SECONDS)
        )
    )


def session_lock_release(*, session_id: uuid.UUID, token: str) -> None:
    Session.objects.filter(pk=session_id, lock_token=token).update(lock_token="", lock_expires=None)


@contextlib.contextmanager
def session_locked(*, session_id: uuid.UUID, wait: float = LOCK_WAIT_SECONDS) -> Iterator[str]:
    token = session_lock_acquire(session_id=session_id, wait=wait)
    try:
        yield token
    finally:
        session_lock_release(session_id=session_id, token=token)


def session_require_active(*, session: Session) -> None:
    if session.status != Session.Status.ACTIVE:
        raise SessionNotActive(f"this session is {session.status}; only an active session plays")


# ------------------------------------------------------------------ settle waits


def session_settle(*, session_id: uuid.UUID) -> dict[str, Any] | None:
    """Before an action: wait for the session's unfinished settle jobs (the Jobs issue).

    Runs without the session lock, so the jobs can commit meanwhile. Returns what happened, or
    None when there was nothing to wait for (or the jobs app is not installed).
    """
    try:
        from jobs.models import UNFINISHED_STATES, RuntimeJob
        from jobs.settle import settle_wait
    except ImportError:
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
            str(exc), code="action_invalid", status=422, extra={"path": exc.path, "rule": exc.rule}
        ) from None


# ------------------------------------------------------------------ RPC actions and commands


def _environment(session: Session, scopes: tuple[str, ...]) -> dict[str, Any]:
    env: dict[str, Any] = {}
    if "session" in scopes:
        env["session"] = {
            "id": str(session.pk),
            "phase": session.phase,
            "turnCount": session.turn_count,
            "locale": session.locale,
        }
    if "active-runtimes" in scopes:
        env["activeRuntimes"] = list(session.resolved_plugins or [])
    if "models" in scopes:
        from worlds.selectors import model_slots

        env["models"] = model_slots()
    return env


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
    with session_locked(session_id=session.pk):
        written: list[dict[str, Any]] = []
        callbacks = SessionCallbacks(
            session=session,
            package=plugin,
            runtime=None,
            manifest=manifest,
            on_write=lambda ns, key, value: written.append(
                {"plugin": plugin, "namespace": ns, "key": key, "value": value}
            ),
        )
        context = {
            "sessionId": str(session.pk),
            "locale": session.locale,
            "userSettings": user_settings_for(package_id=plugin, session=session),
            "command": parsed.as_ctx() if parsed else None,
            "environment": _environment(session, parsed.context if parsed else ()),
        }
        try:
            value = plugin_rpc_call(
                manifest=manifest,
                action=action,
                payload=parsed.args if parsed else payload,
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


# ------------------------------------------------------------------ forms


def interaction_submit(
    *, session: Session, interaction_id: str, values: Mapping[str, Any], username: str = ""
) -> dict[str, Any]:
    """The player's answer to a pending form; returns the follow-up turn's result.

    Like a player action it first waits for the settle jobs, then takes the session lock. Under
    the lock: an answered form is refused (409 interaction_already_submitted); then the field
    checks and the package's validator run, and a refusal is FormRejected (422, its issues) with
    nothing stored. Accepted values are stored and the follow-up turn runs with a plain line as
    the player's message and the answer as its action. Each refusal is also an error.occurred
    event on the session stream.
    """
    from sessions.actions import acting_seat, form_answer_action
    from sessions.turns import TurnRequest, turn_run  # sessions.turns imports this module

    if selectors.interaction_get(session=session, interaction_id=interaction_id) is None:
        raise SessionProblem(
            f"no form {interaction_id!r} in this session", code="not_found", status=404
        )
    settle = session_settle(session_id=session.pk)
    token = session_lock_acquire(session_id=session.pk)
    try:
        session.refresh_from_db()
        session_require_active(session=session)
        # Read again under the lock: the answer that held it before us may have been this one.
        interaction = selectors.interaction_get(session=session, interaction_id=interaction_id)
        if interaction is None:
            raise SessionProblem(
                f"no form {interaction_id!r} in this session", code="not_found", status=404
            )
        if interaction.status == Interaction.Status.SUBMITTED:
            raise _form_refusal(
                session,
                interaction_id,
                SessionProblem(
                    "this form was already answered; a form is answered once",
                    code="interaction_already_submitted",
                ),
            )
        kept, issues = form_check_values(interaction.form, values)
        if not issues:
            try:
                issues = _validator_issues(session=session, interaction=interaction, values=kept)
            except SessionProblem as exc:
                raise _form_refusal(session, interaction_id, exc) from None
        if issues:
            raise _form_refusal(
                session,
                interaction_id,
                FormRejected("the form was not accepted", extra={"issues": issues}),
            )
        request = TurnRequest(
            message=form_player_line(interaction.form, kept),
            actions=[
                form_answer_action(
                    seat=acting_seat(session.seats or [], username),
                    interaction_id=interaction_id,
                    values=kept,
                )
            ],
            settle=settle,
        )
        Interaction.objects.filter(pk=interaction.pk).update(
            status=Interaction.Status.SUBMITTED, values=kept, submitted_at=timezone.now()
        )
    except BaseException:
        session_lock_release(session_id=session.pk, token=token)
        raise
    try:
        return turn_run(session=session, request=request, token=token)  # releases the lock
    finally:
        # The answer stays answered even when its turn fails: the row names that turn.
        if Turn.objects.filter(pk=request.turn_id).exists():
            Interaction.objects.filter(pk=interaction.pk).update(answer_turn_id=request.turn_id)


def _form_refusal(session: Session, interaction_id: str, problem: SessionProblem) -> SessionProblem:
    event_append(
        session_id=session.pk,
        type="error.occurred",
        payload={
            "code": problem.code,
            "interactionId": interaction_id,
            "message": problem.message,
            **problem.extra,
        },
    )
    return problem


def _validator_issues(
    *, session: Session, interaction: Interaction, values: Mapping[str, Any]
) -> list[dict[str, Any]]:
    """The issues of the form's named validator (none without one), as {"field", "message"}.

    The validator is the package's code, so it runs only while the package is active in the
    session; its context carries the session's locale and the package's translations for it.
    """
    name = (interaction.form.get("validation") or {}).get("name")
    if not name:
        return []
    plugin = interaction.plugin_id
    resolution, installed = session_resolve(session=session, save=False)
    if plugin not in resolution.active or plugin not in installed:
        raise SessionProblem(
            f"package {plugin}, whose validator {name} checks this form, is not active in this "
            "session",
            code="plugin_not_active",
        )
    manifest = installed[plugin]
    context: dict[str, Any] = {"locale": session.locale}
    translations = selectors.package_messages(manifest=manifest, locale=session.locale)
    if translations is not None:
        context["messages"] = {"translations": translations}
    try:
        verdict = plugin_form_validate(
            manifest=manifest,
            name=str(name),
            values=values,
            data={"interactionId": interaction.interaction_id, **interaction.form},
            context=context,
        )
    except PluginHostError as exc:
        raise SessionProblem(
            f"the validator {name} of {plugin} failed: {exc.message}",
            code="form_validator_failed",
            status=502,
        ) from None
    if verdict.ok:
        return []
    issues = [{"field": None, "message": verdict.form_error}] if verdict.form_error else []
    issues += [
        {"field": item.get("field") or None, "message": str(item.get("message") or "")}
        for item in verdict.field_errors
    ]
    # A validator that says no without saying why still refuses, with a sentence of ours.
    return issues or [{"field": None, "message": f"The form was refused by {name}."}]
