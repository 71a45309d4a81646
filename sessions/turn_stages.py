"""The turn's plan and its stages: each planned runtime through its gates (the plan's gate, a
PreSchedule hook, its bound inputs, its guard, a PreRuntime hook), then run as a function or an
agent, or deferred as a detached job; the story taken from the narrative stage.

The plan is made again at each stage barrier with the topics emitted so far, so a runtime that
an event of this turn triggers joins a later stage.
"""

from __future__ import annotations

import logging
import time
from typing import Any

from catalogue.manifest.types import Manifest
from eventlog.errors import SessionProblem
from pluginhost.errors import PluginHostError
from pluginhost.services import plugin_guard_call
from sessions import hooks
from sessions.agent_runs import agent_run
from sessions.function_runs import function_run, run_callbacks
from sessions.planner import STAGES, Plan, PlannedRuntime, Skip, plan_turn
from sessions.runtime_context import runtime_ctx, runtime_inputs
from sessions.triggers import record_trigger
from sessions.turn_state import (
    DEFERRED,
    DROPPED,
    FAILED,
    SKIPPED,
    SUCCEEDED,
    RuntimeResult,
    TurnState,
    result_for,
)

log = logging.getLogger("covel.sessions.turns")


def turn_plan(state: TurnState) -> Plan:
    """The plan of the turn's runtimes, with the event topics emitted so far."""
    return plan_turn(
        manifests=state.active,
        phase=state.session.phase,
        turn=state.logical_turn,
        ledger=state.ledger,
        emitted_topics=set(state.emitted),
        manual=set(state.request.manual),
        recorded_versions=state.session.setup_versions or {},
        include_auto=state.request.include_auto,
        answering=state.request.answering,
    )


def manual_check(plan: Plan, manual: dict[str, Any]) -> None:
    """A manual run of a runtime that does not trigger now is refused (SessionProblem)."""
    for runtime in manual:
        if runtime in plan.by_id:
            continue
        why = next((d for d in [*plan.dormant, *plan.skipped] if d.runtime == runtime), None)
        raise SessionProblem(
            why.reason if why else f"{runtime} is not active in this session",
            code=why.code if why else "runtime_not_active",
        )


def stages_run(state: TurnState, first: Plan) -> None:
    """Every stage of the plan in order, each stage's levels in order."""
    state.unscheduled = hooks.pre_schedule(state, first)
    for skip in first.skipped:
        state.finish(_skip_result(skip, first))
    topics_seen = 0
    plan = first
    for stage_name in [*STAGES, "manual"]:
        if len(state.emitted) != topics_seen:
            topics_seen = len(state.emitted)
            plan = turn_plan(state)
        stage = next((s for s in plan.stages if s.stage == stage_name), None)
        if stage is None:
            continue
        for level in stage.levels:
            for planned in level:
                if planned.runtime in state.results:
                    continue
                _run_planned(state, plan, planned)
        if stage_name == "narrative":
            narrative_take(state)
    if not state.narrative_text:
        narrative_take(state)


def runtime_run_single(
    state: TurnState, planned: PlannedRuntime, inputs: dict[str, Any]
) -> RuntimeResult:
    """Run one runtime with inputs bound elsewhere (a detached job's frozen inputs)."""
    result = result_for(planned)
    manifest = state.installed[planned.package]
    if _guarded(state, manifest, planned, inputs, result) or _hook_refused(
        state, planned, inputs, result
    ):
        state.finish(result)
        return result
    _execute(state, manifest, planned, inputs, result)
    return result


def _run_planned(state: TurnState, plan: Plan, planned: PlannedRuntime) -> None:
    result = result_for(planned)
    skip = plan.gate(planned.runtime, state.statuses())
    if skip is None and planned.runtime in state.unscheduled:
        skip = Skip(
            planned.package,
            planned.runtime,
            planned.stage,
            "hook-unscheduled",
            f"{planned.runtime}: a PreSchedule hook left it out of this turn",
        )
    if skip is not None:
        result.status, result.code, result.reason = SKIPPED, skip.code, skip.reason
        state.finish(result)
        return
    manifest = state.installed[planned.package]
    inputs, missing = runtime_inputs(state, manifest, planned)
    if missing:
        result.status, result.code, result.reason = SKIPPED, "input-missing", missing
        state.finish(result)
        return
    if planned.is_detached:
        # The job runs with the inputs of this turn, frozen now (the turn is gone by then).
        state.job_inputs[planned.runtime] = inputs
        state.ledger = record_trigger(state.ledger, planned.runtime, state.logical_turn)
        state.jobs.append(planned)
        result.status, result.code = DEFERRED, "detached"
        result.reason = f"{planned.runtime} runs as a background job after this turn commits"
        state.finish(result)
        return
    if _guarded(state, manifest, planned, inputs, result) or _hook_refused(
        state, planned, inputs, result
    ):
        state.finish(result)
        return
    # A trigger counts when the runtime starts (after its gates let it through).
    state.ledger = record_trigger(state.ledger, planned.runtime, state.logical_turn)
    _execute(state, manifest, planned, inputs, result)


def _execute(
    state: TurnState,
    manifest: Manifest,
    planned: PlannedRuntime,
    inputs: dict[str, Any],
    result: RuntimeResult,
) -> None:
    """Run a runtime its gates let through, then record its output, export and result."""
    state.emit("runtime.status", {**result.as_dict(), "status": "running"})
    started = time.monotonic()
    try:
        if planned.manifest.is_function:
            function_run(state, manifest, planned, inputs, result)
        else:
            agent_run(state, manifest, planned, inputs, result)
    except Exception as exc:  # a bug in one runtime's wiring must not take the turn down
        log.exception("runtime %s crashed the executor", planned.runtime)
        result.status, result.code, result.reason = FAILED, "internal-error", str(exc)
    result.duration_ms = int((time.monotonic() - started) * 1000)
    hooks.post_runtime(state, planned, result)
    state.overlay.complete(planned.runtime, succeeded=result.status == SUCCEEDED)
    if result.status == SUCCEEDED:
        state.outputs[planned.runtime] = result.output
        record_as = planned.manifest.data.get("io", {}).get("output", {}).get("recordAs")
        if record_as:
            state.exports.append((planned.package, planned.runtime, str(record_as), result.output))
    state.finish(result)


def _skip_result(skip: Skip, plan: Plan) -> RuntimeResult:
    planned = plan.by_id.get(skip.runtime)
    runtime = planned.manifest if planned else None
    return RuntimeResult(
        runtime=skip.runtime,
        package=skip.package,
        stage=skip.stage,
        kind=runtime.kind if runtime else "function",
        activation=planned.activation if planned else "auto",
        status=SKIPPED,
        code=skip.code,
        reason=skip.reason,
    )


def _guarded(
    state: TurnState,
    manifest: Manifest,
    planned: PlannedRuntime,
    inputs: dict[str, Any],
    result: RuntimeResult,
) -> bool:
    """Run the runtime's guard, if it has one; True (and result set) when it must not run.

    A guard that fails stops its runtime too: its author meant it to be able to say no.
    """
    if not planned.manifest.data.get("guard"):
        return False
    try:
        verdict = plugin_guard_call(
            manifest=manifest,
            runtime=planned.manifest.id,
            callbacks=run_callbacks(state, planned),
            context=runtime_ctx(state, planned, inputs),
        )
    except PluginHostError as exc:
        result.status, result.code = FAILED, "guard-failed"
        result.reason = f"{planned.runtime}: its guard failed: {exc.message}"
        return True
    if not verdict.skip:
        return False
    result.status, result.code = SKIPPED, "guard-skipped"
    result.reason = f"{planned.runtime}: {verdict.reason or 'its guard skipped it'}"
    return True


def _hook_refused(
    state: TurnState, planned: PlannedRuntime, inputs: dict[str, Any], result: RuntimeResult
) -> bool:
    """A PreRuntime hook's abort skips the runtime (True, result set)."""
    reason = hooks.pre_runtime(state, planned, inputs)
    if reason is None:
        return False
    result.status, result.code, result.reason = SKIPPED, "hook-aborted", reason
    return True


def narrative_take(state: TurnState) -> None:
    """The story so far: the first story runtime's text that is new, shown at once."""
    for rid in state.order:
        result = state.results[rid]
        if result.status not in (SUCCEEDED, DROPPED) or not result.story:
            continue
        output = result.output
        text = output.get("narrativeOutput") if isinstance(output, dict) else output
        if isinstance(text, str) and text and text != state.narrative_text:
            state.narrative_text, state.narrative_source = text, rid
            state.emit("narrative", {"runtime": rid, "text": text})
            return
