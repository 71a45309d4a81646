"""A turn, top-down: resolve → plan → stages → commit (with its deferred jobs).

A turn holds the session's lease (sessions.locks) from start to end, so two actions never
interleave; it holds a database transaction only for the final commit, whose session UPDATE
frees the lease. Runtime statuses are held and written with the commit, or within a quarter
second by sessions.live_events when the turn runs longer, so a page still sees them live.
Catalogue rows, model slots and settings are read once a turn (core.memo).

Each step is a module of its own, over the one TurnState record (sessions/turn_state.py):

    resolve      sessions.services.session_resolve      the active packages
    plan         sessions.turn_stages.turn_plan         stages, DAG levels, triggers, gates
    stages       sessions.turn_stages.stages_run        each runtime through its gates, then
                   sessions.runtime_context               its inputs and ctx
                   sessions.function_runs                 a function (and its recursive calls)
                   sessions.agent_runs                    an agent (history, segments, tools)
                   sessions.runtime_checks                its output and effects checked
                   sessions.staged_writes                 its writes staged in the overlay
    commit       sessions.turn_commit.turn_commit       one transaction: data, exports, turn row,
                   sessions.deferred_jobs.jobs_defer      detached runtimes as jobs, forms, events

Above it: the API, sessions.interactions (a form's answer runs a turn) and sessions.background
(a job's runtime as a background turn, which runs one runtime and the same commit).
"""

from __future__ import annotations

import logging
import time
from typing import Any

from django.utils import timezone

from core.memo import memo_scope
from core.sql import insert
from sessions import hooks, services
from sessions.locks import (
    LOCK_WAIT_SECONDS,
    session_lock_acquire,
    session_lock_forget,
    session_lock_release,
)
from sessions.models import Session, Turn
from sessions.planner import Plan
from sessions.runtime_checks import schema_problem
from sessions.turn_commit import turn_commit
from sessions.turn_stages import manual_check, stages_run, turn_plan
from sessions.turn_state import SUCCEEDED, LeaseLost, RuntimeResult, TurnRequest, TurnState

__all__ = [
    "SUCCEEDED",
    "LeaseLost",
    "RuntimeResult",
    "TurnRequest",
    "TurnState",
    "schema_problem",
    "turn_run",
]

log = logging.getLogger("covel.sessions.turns")


def turn_run(
    *,
    session: Session,
    request: TurnRequest,
    wait: float = LOCK_WAIT_SECONDS,
    token: str | None = None,
) -> dict[str, Any]:
    """Run one turn of the session under its lock and commit it; returns the turn's result.

    Raises SessionBusy (another action runs), SessionNotActive, SessionProblem (a manual run of
    a runtime that does not trigger now). token: a lock the caller already holds (and this
    call releases), for the streaming action.
    """
    with memo_scope():  # the catalogue, model slots and settings: read once a turn
        return _turn_leased(session=session, request=request, wait=wait, token=token)


def _turn_leased(
    *, session: Session, request: TurnRequest, wait: float, token: str | None
) -> dict[str, Any]:
    fresh = False
    if token is None:
        if request.kind != Turn.Kind.BACKGROUND:
            request.settle = services.session_settle(session_id=session.pk, session=session)
        # The session as the lease was taken: read by the same statement that takes it.
        token = session_lock_acquire(session_id=session.pk, wait=wait, fresh=session)
        fresh = True
    lease = {"released": False}
    try:
        if not fresh:
            session.refresh_from_db()
        return _turn_locked(session=session, request=request, token=token, lease=lease)
    finally:
        if lease["released"]:
            session_lock_forget(token=token)  # the commit freed it
        else:
            session_lock_release(session_id=session.pk, token=token)


def _turn_locked(
    *, session: Session, request: TurnRequest, token: str, lease: dict[str, bool]
) -> dict[str, Any]:
    state = _turn_resolved(session=session, request=request, token=token)  # resolve
    state.release_with_commit = True  # the commit's session UPDATE frees the lease
    plan = turn_plan(state)  # plan
    manual_check(plan, request.manual)
    _turn_started(state)
    try:
        try:
            # TurnStart, stages, TurnStop, commit
            aborted = turn_steps(state, plan, committed_event=True)
        except Exception as exc:
            _turn_failed(state, exc)
            raise
        if aborted is not None:
            return _turn_aborted(state, aborted)
        summary = state.summary()
        if not state.committed_told:  # the commit could not tell it (PostStateCommit hooks ran)
            state.emit("turn.committed", summary)
        return summary
    finally:
        lease["released"] = state.lease_released
        # What the turn still holds of its events (its start, a failure): written now. The
        # error that ended the turn (the database gone, say) is the one to answer, not this.
        try:
            state.store.events_flush()
        except Exception:
            log.warning("could not write the events of turn %s", state.turn.pk, exc_info=True)


def turn_steps(state: TurnState, plan: Plan, *, committed_event: bool = False) -> str | None:
    """The turn after its plan, as every turn runs it: a live one (above) and an offline
    runtime case's over memory (sessions/cases.py). Returns a TurnStart abort's reason (nothing
    ran, nothing is committed), or None once the turn is committed. committed_event: as
    turn_commit's."""
    started = time.monotonic()
    aborted = hooks.turn_start(state)
    if aborted is not None:
        return aborted
    stages_run(state, plan)  # each runtime through its gates, run, checked and staged
    hooks.turn_stop(state, started)
    # data, exports, the turn row, forms, events; detached runtimes as jobs
    turn_commit(state, committed_event=committed_event)
    return None


def _turn_resolved(*, session: Session, request: TurnRequest, token: str) -> TurnState:
    """The session's active packages and the turn's record (its row is saved once planned)."""
    services.session_require_active(session=session)
    resolution, installed = services.session_resolve(session=session)
    number = session.turn_count + 1 if request.kind == Turn.Kind.PLAYER else session.turn_count
    turn = Turn(
        id=request.turn_id,
        session=session,
        number=number,
        kind=request.kind,
        player_message=request.message,
    )
    return TurnState(
        session=session,
        turn=turn,
        resolution=resolution,
        installed=installed,
        request=request,
        token=token,
    )


def _turn_started(state: TurnState) -> None:
    insert(state.turn)  # one plain INSERT: compiling the ORM's cost more than running it
    state.emit(
        "turn.started",
        {
            "number": state.turn.number,
            "kind": state.request.kind,
            "playerMessage": state.request.message,
            "active": list(state.resolution.active),
        },
    )


def _turn_failed(state: TurnState, exc: Exception) -> None:
    turn = state.turn
    log.exception("turn %s of session %s failed", turn.pk, state.session.pk)
    Turn.objects.filter(pk=turn.pk).update(
        status=Turn.Status.FAILED,
        error=str(exc),
        finished_at=timezone.now(),
        results=[state.results[r].as_dict() for r in state.order],
    )
    turn.status = Turn.Status.FAILED
    state.emit("turn.failed", {"error": str(exc)})


def _turn_aborted(state: TurnState, reason: str) -> dict[str, Any]:
    """A TurnStart hook vetoed the turn (Covel: no runtime runs, the result carries the reason).
    Nothing is committed; the turn row says failed, with the reason as its error."""
    turn = state.turn
    turn.status, turn.error, turn.finished_at = Turn.Status.FAILED, reason, timezone.now()
    turn.commit = {"hooks": state.hooks.log}
    Turn.objects.filter(pk=turn.pk).update(
        status=turn.status, error=reason, finished_at=turn.finished_at, commit=turn.commit
    )
    state.emit("turn.failed", {"error": reason, "abortReason": reason})
    return {**state.summary(), "abortReason": reason}
