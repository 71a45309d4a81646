"""The sessions API: create, list and get sessions; play turns; events; manual runs; RPC actions.

Session or bearer-token auth (core.auth.hub_auth: 401 anonymous, CSRF on cookie writes); the session's owner or staff only
(403 for anyone else). Refusals are {"detail", "code"}.
"""

from __future__ import annotations

import threading
from typing import Any

from asgiref.sync import sync_to_async
from django.db import connection, transaction
from django.http import HttpRequest
from ninja import Router
from ninja.responses import Status

from accounts.throttles import turn_throttle
from core.auth import hub_auth
from sessions import events, selectors, services
from sessions.commands import CommandError
from sessions.models import Session
from sessions.schemas import (
    ActionErrorOut,
    ActionIn,
    CommandIn,
    ErrorOut,
    InteractionErrorOut,
    InteractionSubmitIn,
    JobAcceptedOut,
    PluginDataOut,
    RpcIn,
    RpcOut,
    RunIn,
    SeatOut,
    SeatUpdateIn,
    SessionCreateIn,
    SessionListOut,
    SessionOut,
    SessionStatusIn,
    TurnOut,
    TurnRowOut,
)
from sessions.turns import TurnRequest, schema_problem, turn_run
from worlds.models import World

router = Router(tags=["sessions"], auth=hub_auth)

ERRORS: dict[int, Any] = {
    400: ErrorOut,
    403: ErrorOut,
    404: ErrorOut,
    409: ErrorOut,
    422: ErrorOut,
    502: ErrorOut,
}


class _Refusal(Exception):
    def __init__(self, status: int, detail: str, code: str) -> None:
        self.status, self.body = status, {"detail": detail, "code": code}


def _session(request: HttpRequest, session_id: str) -> Session:
    session = selectors.session_get(session_id=session_id)
    if session is None:
        raise _Refusal(404, f"no session {session_id}", "not_found")
    if not selectors.session_can_access(session=session, user=request.user):
        raise _Refusal(403, "this session belongs to another player", "forbidden")
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


def _problem(exc: services.SessionProblem) -> Status:
    return Status(exc.status, exc.as_dict())


def _wants_stream(request: HttpRequest) -> bool:
    return "text/event-stream" in request.headers.get("Accept", "") or request.GET.get(
        "stream"
    ) in ("1", "true")


@router.get("/sessions", response={200: SessionListOut})
def list_sessions(request: HttpRequest) -> dict[str, Any]:
    rows = [
        session_out(s) for s in selectors.session_list(user=request.user).select_related("owner")
    ]
    return {"items": rows, "count": len(rows)}


@router.post("/sessions", response={201: SessionOut, **ERRORS})
def create_session(request: HttpRequest, data: SessionCreateIn) -> Status:
    world = World.objects.filter(world_id=data.world).first()
    if world is None:
        return Status(404, {"detail": f"no world {data.world!r}", "code": "not_found"})
    try:
        session = services.session_create(
            owner=request.user,
            world=world,
            requested=data.plugins,
            excluded=data.excluded,
            title=data.title,
            locale=data.locale,
            character_id=data.character,
        )
    except services.SessionProblem as exc:
        return _problem(exc)
    return Status(201, session_out(session))


@router.patch("/sessions/{session_id}/seats/{seat_id}", response={200: SeatOut, **ERRORS})
def update_seat(request: HttpRequest, session_id: str, seat_id: str, data: SeatUpdateIn) -> Status:
    """Switch a seat's current character or rebind its characters; the next turn sees it."""
    try:
        seat = services.seat_update(
            session=_session(request, session_id),
            seat_id=seat_id,
            character_ids=data.characterIds,
            current_character_id=data.currentCharacterId,
        )
    except _Refusal as refusal:
        return Status(refusal.status, refusal.body)
    except services.SessionProblem as exc:
        return _problem(exc)
    return Status(200, seat)


@router.get("/sessions/{session_id}", response={200: SessionOut, **ERRORS})
def get_session(request: HttpRequest, session_id: str) -> Status:
    try:
        return Status(200, session_out(_session(request, session_id)))
    except _Refusal as refusal:
        return Status(refusal.status, refusal.body)


@router.patch("/sessions/{session_id}", response={200: SessionOut, **ERRORS})
def update_session(request: HttpRequest, session_id: str, data: SessionStatusIn) -> Status:
    try:
        session = _session(request, session_id)
        services.session_set_status(session=session, status=data.status)
    except _Refusal as refusal:
        return Status(refusal.status, refusal.body)
    except services.SessionProblem as exc:
        return _problem(exc)
    return Status(200, session_out(session))


@router.get("/sessions/{session_id}/plugin-data", response={200: list[PluginDataOut], **ERRORS})
def plugin_data(request: HttpRequest, session_id: str) -> Status:
    try:
        session = _session(request, session_id)
    except _Refusal as refusal:
        return Status(refusal.status, refusal.body)
    return Status(200, selectors.plugin_data_rows(session=session))


@router.get("/sessions/{session_id}/turns", response={200: list[TurnRowOut], **ERRORS})
def list_turns(request: HttpRequest, session_id: str, limit: int = 50) -> Status:
    """The latest turns, oldest first (player, manual and background turns alike)."""
    try:
        session = _session(request, session_id)
    except _Refusal as refusal:
        return Status(refusal.status, refusal.body)
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
            "error": t.error,
            "sourceTurnId": str(t.source_turn_id) if t.source_turn_id else None,
            "createdAt": t.created_at.isoformat(),
            "finishedAt": t.finished_at.isoformat() if t.finished_at else None,
        }
        for t in selectors.turn_list(session=session, limit=max(1, min(limit, 200)))
    ]
    return Status(200, rows)


@router.post(
    "/sessions/{session_id}/actions",
    response={200: TurnOut, **ERRORS, 422: ActionErrorOut},
    throttle=[turn_throttle],
)
def post_action(request: HttpRequest, session_id: str, data: ActionIn) -> Any:
    """The player's action: the turn's result, or (Accept: text/event-stream / ?stream=1) its events."""
    try:
        session = _session(request, session_id)
        services.session_require_active(session=session)
        actions = services.session_actions_resolve(
            session=session, username=request.user.get_username(), actions=data.actions
        )
    except _Refusal as refusal:
        return Status(refusal.status, refusal.body)
    except services.SessionProblem as exc:
        return _problem(exc)
    turn_request = TurnRequest(message=data.message, actions=actions)
    if _wants_stream(request):
        return _stream_turn(request, session, turn_request)
    try:
        return Status(200, turn_run(session=session, request=turn_request))
    except services.SessionProblem as exc:
        return _problem(exc)


def _stream_turn(request: HttpRequest, session: Session, turn_request: TurnRequest) -> Any:
    """Take the lock now (a busy session still answers 409), run the turn in a thread, stream.

    Settle jobs are waited for first, without the lock (their commits need the session row).
    """
    turn_request.settle = services.session_settle(session_id=session.pk)
    try:
        token = services.session_lock_acquire(session_id=session.pk)
    except services.SessionProblem as exc:
        return _problem(exc)
    after = selectors.last_event_seq(session=session)
    turn_id = str(turn_request.turn_id)

    def work() -> None:
        try:
            turn_run(session=session, request=turn_request, token=token)
        except Exception as exc:  # the stream must end even when the turn could not start
            if not any(
                e.type == "turn.failed"
                for e in selectors.events_after(session=session, after=after)
            ):
                services.event_append(
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


@router.get("/sessions/{session_id}/events", response={200: None, **ERRORS})
async def session_events(request: HttpRequest, session_id: str) -> Any:
    """SSE: the events after Last-Event-ID (or ?after=), then new ones for ?wait= seconds.

    Async: an open stream waits on the session's notification channel (sessions/events.py)."""
    try:
        session = await sync_to_async(_session)(request, session_id)
    except _Refusal as refusal:
        return Status(refusal.status, refusal.body)
    return events.stream_response(
        request=request,
        session_id=session.pk,
        after=events.last_event_id(request),
        wait=events.wait_seconds(request),
    )


@router.post(
    "/sessions/{session_id}/runtimes/{plugin}/{runtime}/run",
    response={200: TurnOut, 202: JobAcceptedOut, **ERRORS},
    throttle=[turn_throttle],
)
def run_runtime(
    request: HttpRequest, session_id: str, plugin: str, runtime: str, data: RunIn
) -> Any:
    """A manual trigger with a payload, checked against io.payloadSchema."""
    try:
        session = _session(request, session_id)
        services.session_require_active(session=session)
        resolution, installed = services.session_resolve(session=session)
    except _Refusal as refusal:
        return Status(refusal.status, refusal.body)
    except services.SessionProblem as exc:
        return _problem(exc)
    manifest = installed.get(plugin) if plugin in resolution.active else None
    target = manifest.runtime(runtime) if manifest else None
    if manifest is None or target is None:
        return Status(
            404,
            {
                "detail": f"no runtime {plugin}/{runtime} is active in this session",
                "code": "not_found",
            },
        )
    if target.trigger != "manual":
        return Status(
            409,
            {
                "detail": f"{target.qualified_id} is triggered {target.trigger}, not by hand; only a runtime "
                "with trigger: manual runs from this endpoint",
                "code": "not-manual",
            },
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
            return Status(422, {"detail": problem, "code": "payload-invalid"})
    if target.schedule.get("background") is True:
        return _enqueue_background(
            session, manifest.id, target.qualified_id, data.payload, manifest.version
        )
    try:
        result = turn_run(
            session=session,
            request=TurnRequest(kind="manual", manual={target.qualified_id: data.payload}),
        )
    except services.SessionProblem as exc:
        return _problem(exc)
    return Status(200, result)


def _enqueue_background(
    session: Session, plugin: str, runtime: str, payload: Any, version: str
) -> Status:
    try:
        from jobs.events import accepted_payload
        from jobs.services import job_enqueue
    except ImportError:
        return Status(
            409, {"detail": "background runs need the jobs app", "code": "jobs_unavailable"}
        )
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
    response={200: RpcOut, **ERRORS},
    throttle=[turn_throttle],
)
def rpc(request: HttpRequest, session_id: str, plugin: str, action: str, data: RpcIn) -> Status:
    """An RPC action with a payload, or a slash command (`command`) parsed per contributes.commands."""
    try:
        session = _session(request, session_id)
        return Status(
            200,
            services.session_rpc(
                session=session,
                plugin=plugin,
                action=action,
                payload=data.payload,
                command_text=data.command,
            ),
        )
    except _Refusal as refusal:
        return Status(refusal.status, refusal.body)
    except CommandError as exc:
        return Status(422, exc.as_dict())
    except services.SessionProblem as exc:
        return _problem(exc)


@router.post(
    "/sessions/{session_id}/commands", response={200: RpcOut, **ERRORS}, throttle=[turn_throttle]
)
def command(request: HttpRequest, session_id: str, data: CommandIn) -> Status:
    """A slash command typed in the composer; the active package that declares it runs it."""
    try:
        session = _session(request, session_id)
        return Status(200, services.session_command(session=session, text=data.text))
    except _Refusal as refusal:
        return Status(refusal.status, refusal.body)
    except CommandError as exc:
        return Status(422, exc.as_dict())
    except services.SessionProblem as exc:
        return _problem(exc)


@router.post(
    "/sessions/{session_id}/interactions/{path:interaction_id}",
    response={
        200: TurnOut,
        **{status: InteractionErrorOut for status in (404, 409, 422, 502)},
    },
    throttle=[turn_throttle],
)
def submit_interaction(
    request: HttpRequest, session_id: str, interaction_id: str, data: InteractionSubmitIn
) -> Status:
    """The player's answer to a pending form; the follow-up turn's result.

    Another player gets the same 404 as for a session that does not exist: a form's ID says
    nothing about whose it is.
    """
    session = selectors.session_get(session_id=session_id)
    if session is None or not selectors.session_can_access(session=session, user=request.user):
        return Status(404, {"detail": f"no form {interaction_id!r} here", "code": "not_found"})
    try:
        return Status(
            200,
            services.interaction_submit(
                session=session,
                interaction_id=interaction_id,
                values=data.values,
                username=request.user.get_username(),
            ),
        )
    except services.SessionProblem as exc:
        return _problem(exc)
