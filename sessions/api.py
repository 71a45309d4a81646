"""The sessions API: create, list and get sessions; play turns; events; manual runs; RPC actions.

Session or bearer-token auth (core.auth.hub_auth: 401 anonymous, CSRF on cookie writes); the
session's owner or staff only (403 for anyone else). Refusals are the one error shape of
core/errors.py: SessionProblem and the slash commands' CommandError are answered by the API
root's handlers (config/api.py). Turn-starting operations are throttled per user (429).
"""

from __future__ import annotations

import threading
from typing import Any

from asgiref.sync import sync_to_async
from django.db import connection, transaction
from django.http import HttpRequest
from ninja import Header, Query, Router
from ninja.responses import Status

from accounts.throttles import turn_throttle
from core.auth import hub_auth
from core.errors import Conflict, Forbidden, Invalid, NotFound, issue
from core.schemas import PageQuery, errors, page
from eventlog.selectors import events_after, last_event_seq
from eventlog.services import event_append
from sessions import events, interactions, locks, selectors, services
from sessions.models import Session
from sessions.schemas import (
    ActionIn,
    CommandIn,
    EventsQuery,
    InteractionSubmitIn,
    JobAcceptedOut,
    LorebookOut,
    PluginDataPageOut,
    PluginDataQuery,
    RpcIn,
    RpcOut,
    RunIn,
    SeatOut,
    SeatUpdateIn,
    SessionCreateIn,
    SessionListOut,
    SessionOut,
    SessionStatusIn,
    SlotOut,
    TurnOut,
    TurnPageOut,
)
from sessions.turns import TurnRequest, schema_problem, turn_run
from worlds.models import World

router = Router(tags=["sessions"], auth=hub_auth)

# What a session operation may answer besides its success: 400 a body that is not JSON, 401
# anonymous, 403 someone else's session (or a failed CSRF check on a write), 404, 409 busy or
# ended, 422 invalid input.
ERRORS = errors(400, 401, 403, 404, 409, 422)
# A read has no body and changes nothing: no 400, no 409.
READ_ERRORS = errors(401, 403, 404, 422)
# Operations that run plugin code also answer 502 when the plugin host fails.
RUN_ERRORS = errors(400, 401, 403, 404, 409, 422, 429, 502)


def _session(request: HttpRequest, session_id: str) -> Session:
    session = selectors.session_get(session_id=session_id)
    if session is None:
        raise NotFound(f"no session {session_id}")
    if not selectors.session_can_access(session=session, user=request.user):
        raise Forbidden("this session belongs to another player")
    return session


def session_out(session: Session) -> dict[str, Any]:
    return {
        "id": str(session.pk),
        "title": session.title,
        "world": session.world.world_id,
        "owner": session.owner.get_username(),
        "phase": session.phase,
        "status": session.status,
        "turn_count": session.turn_count,
        "seats": session.seats or [],
        "requested_plugins": session.requested_plugins or [],
        "excluded_plugins": session.excluded_plugins or [],
        "resolved_plugins": session.resolved_plugins or [],
        "outcomes": session.outcomes or {},
        "package_versions": session.package_versions or {},
        "created_at": session.created_at.isoformat(),
    }


def _wants_stream(request: HttpRequest, stream: bool) -> bool:
    return stream or "text/event-stream" in request.headers.get("Accept", "")


@router.get("/sessions", response={200: SessionListOut, **errors(401, 422)})
def list_sessions(request: HttpRequest, paging: Query[PageQuery]) -> dict[str, Any]:
    """Your own sessions, newest first; ?limit=&offset= page."""
    sessions = selectors.session_list(user=request.user).select_related("owner")
    rows = sessions[paging.offset : paging.offset + paging.limit]
    return page(
        [session_out(s) for s in rows],
        count=sessions.count(),
        limit=paging.limit,
        offset=paging.offset,
    )


@router.post("/sessions", response={201: SessionOut, **ERRORS})
def create_session(request: HttpRequest, data: SessionCreateIn) -> Status:
    world = World.objects.filter(world_id=data.world).first()
    if world is None:
        raise NotFound(f"no world {data.world!r}")
    session = services.session_create(
        owner=request.user,
        world=world,
        requested=data.plugins,
        excluded=data.excluded,
        title=data.title,
        locale=data.locale,
        character_id=data.character,
    )
    return Status(201, session_out(session))


@router.patch("/sessions/{session_id}/seats/{seat_id}", response={200: SeatOut, **ERRORS})
def update_seat(
    request: HttpRequest, session_id: str, seat_id: str, data: SeatUpdateIn
) -> dict[str, Any]:
    """Switch a seat's current character or rebind its characters; the next turn sees it."""
    return services.seat_update(
        session=_session(request, session_id),
        seat_id=seat_id,
        character_ids=data.characterIds,
        current_character_id=data.currentCharacterId,
    )


@router.get("/sessions/{session_id}", response={200: SessionOut, **READ_ERRORS})
def get_session(request: HttpRequest, session_id: str) -> dict[str, Any]:
    return session_out(_session(request, session_id))


@router.patch("/sessions/{session_id}", response={200: SessionOut, **ERRORS})
def update_session(request: HttpRequest, session_id: str, data: SessionStatusIn) -> dict:
    session = _session(request, session_id)
    services.session_set_status(session=session, status=data.status)
    return session_out(session)


@router.get("/sessions/{session_id}/plugin-data", response={200: PluginDataPageOut, **READ_ERRORS})
def plugin_data(
    request: HttpRequest, session_id: str, query: Query[PluginDataQuery]
) -> dict[str, Any]:
    """The session's committed plugin data by plugin, namespace and key; ?limit=&offset= page,
    ?plugin=&namespace=&key= narrow it (the play page fetches the keys an event names)."""
    rows, count = selectors.plugin_data_page(
        session=_session(request, session_id),
        limit=query.limit,
        offset=query.offset,
        plugin=query.plugin,
        namespace=query.namespace,
        key=query.key,
    )
    return page(rows, count=count, limit=query.limit, offset=query.offset)


@router.get("/sessions/{session_id}/lorebook", response={200: LorebookOut, **READ_ERRORS})
def session_lorebook(request: HttpRequest, session_id: str) -> dict[str, Any]:
    """The session's own lore (what packages wrote with lorebook.upsert), enabled entries by
    insertionOrder then id; the world's data/lorebook.yaml is on GET /worlds/{id}."""
    return {"entries": selectors.session_lore(session=_session(request, session_id))}


@router.get("/sessions/{session_id}/slots", response={200: list[SlotOut], **READ_ERRORS})
def slots(request: HttpRequest, session_id: str, turn: str | None = None) -> list[dict[str, Any]]:
    """The UI slots the session's ui.slot@1 providers fill; the play page asks again when a
    watched namespace changes, and with ?turn= when that turn emits a `preview` topic (the
    providers then see its events). A failing provider is listed in `failures`."""
    from sessions.extensions import session_slots
    from sessions.package_ui.selectors import package_ui_slots

    session = _session(request, session_id)
    return session_slots(session=session, turn_id=turn) + package_ui_slots(session=session)


@router.get("/sessions/{session_id}/turns", response={200: TurnPageOut, **READ_ERRORS})
def list_turns(request: HttpRequest, session_id: str, paging: Query[PageQuery]) -> dict:
    """The latest turns, oldest first (player, manual and background turns alike); ?offset=
    skips that many of the latest, so the next page back is offset + limit."""
    from sessions.package_ui.selectors import turn_message_blocks

    session = _session(request, session_id)
    turns = selectors.turn_list(session=session, limit=paging.limit, offset=paging.offset)
    drawn = turn_message_blocks(session=session, turns=turns)
    rows = [
        {
            "turnId": str(t.pk),
            "number": t.number,
            "kind": t.kind,
            "status": t.status,
            "playerMessage": t.player_message,
            "narrativeText": t.narrative_text,
            "runtimes": t.results or [],
            "commit": t.commit or {},
            "blocks": [*(t.blocks or []), *drawn.get(str(t.pk), [])],
            "error": t.error,
            "sourceTurnId": str(t.source_turn_id) if t.source_turn_id else None,
            "createdAt": t.created_at.isoformat(),
            "finishedAt": t.finished_at.isoformat() if t.finished_at else None,
        }
        for t in turns
    ]
    count = selectors.turn_count(session=session)
    return page(rows, count=count, limit=paging.limit, offset=paging.offset)


# An SSE answer; its events are described in docs/play.md, not as a JSON schema.
STREAM = {"text/event-stream": {}}
TURN_OR_STREAM = {
    "application/json": {"schema": {"$ref": "#/components/schemas/TurnOut"}},
    **STREAM,
}


@router.post(
    "/sessions/{session_id}/actions",
    response={200: TurnOut, **RUN_ERRORS},
    openapi_extra={"responses": {200: {"description": "OK", "content": TURN_OR_STREAM}}},
    throttle=[turn_throttle],
)
def post_action(
    request: HttpRequest,
    session_id: str,
    data: ActionIn,
    stream: bool = Query(False, description="Answer the turn's events (SSE), not its result."),
) -> Any:
    """The player's action: the turn's result, or (Accept: text/event-stream / ?stream=1) its events."""
    session = _session(request, session_id)
    services.session_require_active(session=session)
    actions = services.session_actions_resolve(
        session=session, username=request.user.get_username(), actions=data.actions
    )
    turn_request = TurnRequest(message=data.message, actions=actions)
    if _wants_stream(request, stream):
        return _stream_turn(request, session, turn_request)
    return turn_run(session=session, request=turn_request)


def _stream_turn(request: HttpRequest, session: Session, turn_request: TurnRequest) -> Any:
    """Take the lock now (a busy session still answers 409), run the turn in a thread, stream.

    Settle jobs are waited for first, without the lock (their commits need the session row).
    """
    turn_request.settle = services.session_settle(session_id=session.pk, session=session)
    token = locks.session_lock_acquire(session_id=session.pk)  # SessionBusy: 409
    after = last_event_seq(session=session)
    turn_id = str(turn_request.turn_id)

    def work() -> None:
        try:
            turn_run(session=session, request=turn_request, token=token)
        except Exception as exc:  # the stream must end even when the turn could not start
            if not any(e.type == "turn.failed" for e in events_after(session=session, after=after)):
                event_append(
                    session_id=session.pk,
                    type="turn.failed",
                    payload={"turnId": turn_id, "error": str(exc)},
                )
        finally:
            connection.close()

    threading.Thread(target=work, daemon=True, name=f"turn-{turn_id}").start()

    def done(event: dict[str, Any]) -> bool:
        return (
            event["type"] in ("turn.committed", "turn.failed")
            and event["payload"].get("turnId") == turn_id
        )

    return events.stream_response(
        request=request,
        session_id=session.pk,
        after=after,
        wait=events.MAX_WAIT_SECONDS * 2,
        until=done,
    )


@router.get(
    "/sessions/{session_id}/events",
    response={200: None, **READ_ERRORS},
    openapi_extra={"responses": {200: {"description": "Server-sent events", "content": STREAM}}},
)
async def session_events(
    request: HttpRequest,
    session_id: str,
    query: Query[EventsQuery],
    last_event_id: int | None = Header(
        None,
        alias="Last-Event-ID",
        ge=0,
        le=2**62,
        description="Resume after this event (EventSource).",
    ),
) -> Any:
    """SSE: the events after Last-Event-ID (or ?after=), then new ones for ?wait= seconds.

    Async: an open stream waits on the session's notification channel (sessions/events.py)."""
    session = await sync_to_async(_session)(request, session_id)
    return events.stream_response(
        request=request,
        session_id=session.pk,
        after=events.last_event_id(request),
        wait=events.wait_seconds(request),
    )


@router.post(
    "/sessions/{session_id}/runtimes/{plugin}/{runtime}/run",
    response={200: TurnOut, 202: JobAcceptedOut, **RUN_ERRORS},
    throttle=[turn_throttle],
)
def run_runtime(
    request: HttpRequest, session_id: str, plugin: str, runtime: str, data: RunIn
) -> Any:
    """A manual trigger with a payload, checked against io.payloadSchema."""
    session = _session(request, session_id)
    services.session_require_active(session=session)
    resolution, installed = services.session_resolve(session=session)
    manifest = installed.get(plugin) if plugin in resolution.active else None
    target = manifest.runtime(runtime) if manifest else None
    if manifest is None or target is None:
        raise NotFound(f"no runtime {plugin}/{runtime} is active in this session")
    if target.trigger != "manual":
        raise Conflict(
            f"{target.qualified_id} is triggered {target.trigger}, not by hand; only a runtime "
            "with trigger: manual runs from this endpoint",
            code="not-manual",
        )
    payload_schema = target.data.get("io", {}).get("payloadSchema")
    if payload_schema:
        problem = schema_problem(
            manifest,
            target,
            str(payload_schema),
            data.payload if data.payload is not None else {},
            what="payload",
        )
        if problem:
            raise Invalid(
                problem,
                code="payload-invalid",
                issues=[issue("/body/payload", "payload-invalid", problem)],
            )
    if target.schedule.get("background") is True:
        return _enqueue_background(
            session, manifest.id, target.qualified_id, data.payload, manifest.version
        )
    return turn_run(
        session=session,
        request=TurnRequest(kind="manual", manual={target.qualified_id: data.payload}),
    )


def _enqueue_background(
    session: Session, plugin: str, runtime: str, payload: Any, version: str
) -> Status:
    try:
        from jobs.events import accepted_payload
        from jobs.services import job_enqueue
    except ImportError:
        raise Conflict("background runs need the jobs app", code="jobs_unavailable") from None
    with transaction.atomic():
        job = job_enqueue(
            session_id=session.pk,
            plugin_id=plugin,
            runtime_id=runtime,
            inputs={"manualPayload": payload},
            package_version=version,
        )
    return Status(202, accepted_payload(job))


@router.post(
    "/sessions/{session_id}/rpc/{plugin}/{action}",
    response={200: RpcOut, **RUN_ERRORS},
    throttle=[turn_throttle],
)
def rpc(request: HttpRequest, session_id: str, plugin: str, action: str, data: RpcIn) -> Any:
    """An RPC action with a payload, or a slash command (`command`) parsed per contributes.commands."""
    return services.session_rpc(
        session=_session(request, session_id),
        plugin=plugin,
        action=action,
        payload=data.payload,
        command_text=data.command,
    )


@router.post(
    "/sessions/{session_id}/commands",
    response={200: RpcOut, **RUN_ERRORS},
    throttle=[turn_throttle],
)
def command(request: HttpRequest, session_id: str, data: CommandIn) -> Any:
    """A slash command typed in the composer; the active package that declares it runs it."""
    return services.session_command(session=_session(request, session_id), text=data.text)


@router.post(
    "/sessions/{session_id}/interactions/{path:interaction_id}",
    response={200: TurnOut, **RUN_ERRORS},
    throttle=[turn_throttle],
)
def submit_interaction(
    request: HttpRequest, session_id: str, interaction_id: str, data: InteractionSubmitIn
) -> Any:
    """The player's answer to a pending form; the follow-up turn's result.

    Another player gets the same 404 as for a session that does not exist: a form's ID says
    nothing about whose it is.
    """
    session = selectors.session_get(session_id=session_id)
    if session is None or not selectors.session_can_access(session=session, user=request.user):
        raise NotFound(f"no form {interaction_id!r} here")
    return interactions.interaction_submit(
        session=session,
        interaction_id=interaction_id,
        values=data.values,
        username=request.user.get_username(),
    )
