"""The "runtime" job runner: a detached runtime runs as a background turn of its session.

The jobs app calls run_detached(job, ctx) in a worker. It runs the runtime with the inputs its
source turn froze, and returns a RunResult whose commit() the job calls inside its own commit
transaction: plugin data (applied to the latest stored values, with drop-on-rejection), the
recordAs export, a Turn(kind="background") linked to the source turn, and events. A job that
times out, is cancelled or goes stale therefore saves nothing.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from typing import Any

from catalogue.manifest.types import Manifest, RuntimeManifest
from core.sql import read_by_pk, read_by_pk_related
from jobs.runners import JobContext, RunResult
from sessions import selectors
from sessions.models import Session, Turn
from sessions.planner import PlannedRuntime
from sessions.resolver import Resolution
from sessions.turn_commit import turn_commit
from sessions.turn_stages import runtime_run_single
from sessions.turn_state import SUCCEEDED, TurnRequest, TurnState
from sessions.turn_store import TurnStore


class DetachedRuntimeFailed(RuntimeError):
    """The runtime ran and did not succeed; the job fails with this message."""


def _source_turn(job: Any) -> Turn | None:
    try:
        key = uuid.UUID(str(job.source_turn))
    except ValueError:
        return None
    # Only what the background turn copies; a turn's results can be large.
    return read_by_pk(Turn, key, fields=("number", "player_message"))


def _first_attempt_id(job: Any) -> str:
    """The job id of the first attempt of a retry chain: what a run with no source turn (a
    manual background run) keys its dice by, so that retrying it does not draw again."""
    from jobs.models import RuntimeJob

    first = job
    while first.retry_of_id is not None:
        first = RuntimeJob.objects.only("job_id", "retry_of").get(pk=first.retry_of_id)
    return str(first.job_id)


def _session(session_id: Any) -> Session:
    # A plain read of the session and its world in one statement (core/sql.py): compiling a
    # Session query with its world cost more than a trivial runtime's whole run.
    session = read_by_pk_related(Session, session_id, related="world")
    if session is None:
        raise DetachedRuntimeFailed(f"session {session_id} does not exist any more")
    return session


def run_detached(job: Any, ctx: JobContext) -> RunResult:
    session = _session(job.session_id)
    installed = selectors.installed_manifests()
    manifest = installed.get(job.plugin_id)
    runtime = manifest.runtime(job.runtime_id) if manifest is not None else None
    if manifest is None or runtime is None:
        raise DetachedRuntimeFailed(f"{job.plugin_id}/{job.runtime_id} is not installed any more")
    source = _source_turn(job)
    frozen = dict(job.inputs or {})
    # The active set the source turn resolved; the job's staleness check guards the version.
    active = tuple(p for p in (session.resolved_plugins or []) if p in installed) or (manifest.id,)
    state, planned = background_turn(
        session=session,
        installed=installed,
        resolution=Resolution(active=active, outcomes={}),
        package=manifest.id,
        runtime=runtime,
        frozen=frozen,
        source=source,
        source_turn=str(job.source_turn),
        execution_source=str(source.pk) if source else _first_attempt_id(job),
    )
    result = runtime_run_single(state, planned, dict(frozen.get("inputs") or {}))
    ctx.check()
    if result.status != SUCCEEDED:
        raise DetachedRuntimeFailed(
            result.reason or f"{runtime.qualified_id} ended {result.status}"
        )

    def commit() -> None:
        # The job's commit transaction already holds the session row (its staleness re-check).
        turn_commit(state, session_locked=True)
        state.emit("turn.committed", state.summary())

    return RunResult(result=result.as_dict(), commit=commit)


def background_turn(
    *,
    session: Session,
    installed: Mapping[str, Manifest],
    resolution: Resolution,
    package: str,
    runtime: RuntimeManifest,
    frozen: Mapping[str, Any],
    source: Turn | None,
    source_turn: str,
    execution_source: str,
    store: TurnStore | None = None,
    turn_id: Any = None,
) -> tuple[TurnState, PlannedRuntime]:
    """The background turn of one detached runtime with the inputs its source turn froze, and
    the runtime planned in it: what a worker runs, and what an offline case runs over its
    memory store (sessions/cases.py) once the case's turn is committed."""
    request = TurnRequest(
        kind=Turn.Kind.BACKGROUND,
        message=str(frozen.get("playerMessage") or (source.player_message if source else "")),
        actions=list(frozen.get("playerActions") or []),
        # A manual background run's payload (ctx.manualPayload), frozen when it was accepted.
        manual={runtime.qualified_id: frozen["manualPayload"]} if "manualPayload" in frozen else {},
        execution_source=execution_source,
        trigger_event=frozen.get("triggerEvent"),
    )
    if turn_id is not None:
        request.turn_id = turn_id
    turn = Turn(
        id=request.turn_id,
        session=session,
        number=source.number if source else session.turn_count,
        kind=Turn.Kind.BACKGROUND,
        player_message=request.message,
        source_turn=source,
    )
    state = TurnState(
        session=session,
        turn=turn,
        resolution=resolution,
        installed=installed,
        request=request,
        token=None,
        store=store,
    )
    planned = PlannedRuntime(
        package=package,
        runtime=runtime.qualified_id,
        stage=runtime.stage or "post-turn",
        activation="detached",
        reason=f"{runtime.qualified_id} runs as a background job of turn {source_turn}",
        manifest=runtime,
        detached=runtime.detached,
    )
    return state, planned
