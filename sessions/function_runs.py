"""A function runtime's run: its call into the plugin host, its answer settled into a status,
and the nested runs its ctx.recursiveCall starts (each in a Frame of its owner's execution).

The run sets its RuntimeResult (status, code, reason, output); its writes are staged as the
owner's (sessions.staged_writes), its forms and notices held for the commit
(sessions.runtime_checks), its events sent once it succeeded.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import Any

from catalogue.manifest.types import Manifest, RuntimeManifest
from pluginhost.callbacks import HostCallbacks
from pluginhost.errors import CallbackRefused, PluginHostError
from pluginhost.services import function_timeout, plugin_function_call
from sessions.planner import PlannedRuntime
from sessions.proposals import ProposalRefused, effects_proposals
from sessions.runtime_checks import effects_take, output_problem
from sessions.runtime_context import runtime_ctx, runtime_inputs
from sessions.staged_writes import writes_stage
from sessions.turn_state import (
    DEFAULT_MAX_RECURSION_DEPTH,
    DROPPED,
    FAILED,
    SKIPPED,
    SUCCEEDED,
    Frame,
    RuntimeResult,
    TurnState,
)


def run_callbacks(
    state: TurnState, planned: PlannedRuntime, frame: Frame | None = None
) -> HostCallbacks:
    """The callbacks of one run. With a frame, ctx.recursiveCall is served; a nested run
    reads and writes as its owner and its emitted events wait for the owner's success."""

    def emit(topic: str, payload: Mapping[str, Any]) -> None:
        if frame is not None and frame.depth > 0:
            frame.events.append((topic, dict(payload)))
        else:
            state.plugin_event(planned, topic, payload)

    def recurse(**call: Any) -> dict[str, Any]:
        assert frame is not None
        return _recurse(state, frame, **call)

    return state.store.callbacks(
        package=planned.package,
        runtime=frame.owner if frame is not None else planned.runtime,
        overlay=state.overlay,
        on_emit=emit,
        manifest=state.installed[planned.package],
        on_recurse=recurse if frame is not None else None,
    )


def function_run(
    state: TurnState,
    manifest: Manifest,
    planned: PlannedRuntime,
    inputs: dict[str, Any],
    result: RuntimeResult,
) -> None:
    context = runtime_ctx(state, planned, inputs)
    frame = Frame(
        owner=planned.runtime,
        package=planned.package,
        runtime=planned.manifest,
        depth=0,
        seed=context["seed"],
        player_message=state.request.message,
        deadline=time.monotonic() + function_timeout(planned.manifest),
        result=result,
    )
    try:
        answer = plugin_function_call(
            manifest=manifest,
            runtime=planned.manifest.id,
            callbacks=run_callbacks(state, planned, frame),
            context={**context, "recursionDepth": 0, "nestedCalls": True},
        )
    except PluginHostError as exc:
        result.status, result.code = FAILED, exc.code
        result.reason = f"{planned.runtime}: {exc.message}"
        return
    status, code, reason, output = _settle(state, manifest, planned, frame, answer)
    result.status, result.code, result.reason = status, code, reason
    if status in (SUCCEEDED, DROPPED):
        result.output = output
    if status == SUCCEEDED:
        # The nested runs' events, held until their owner succeeded.
        for topic, payload in frame.events:
            state.plugin_event(planned, topic, payload)


def _settle(
    state: TurnState, manifest: Manifest, planned: PlannedRuntime, frame: Frame, answer: Any
) -> tuple[str, str, str, Any]:
    """(status, code, reason, output) of a function run's answer. Its forms, notices and
    writes are taken as frame.owner's; a nested run's events are held in its frame."""
    value = answer.result if isinstance(answer.result, dict) else {}
    outcome = value.get("outcome", "success")
    for event in list(answer.emitted_events) + list(
        (value.get("effects") or {}).get("events") or []
    ):
        if isinstance(event, dict) and event.get("topic"):
            # Covel's events carry `data` (commit-event.ts); `payload` is the hub's older name.
            body = event.get("data", event.get("payload"))
            topic, payload = str(event["topic"]), dict(body if isinstance(body, dict) else {})
            if frame.depth == 0:
                state.plugin_event(planned, topic, payload)
            else:
                frame.events.append((topic, payload))
    if outcome == "failed":
        reason = str(value.get("error") or f"{planned.runtime} reported failure")
        return FAILED, "runtime-failed", reason, None
    if outcome == "skipped":
        reason = str(value.get("reason") or f"{planned.runtime} skipped itself")
        return SKIPPED, "runtime-skipped", reason, None
    output = value.get("value")
    problem = output_problem(manifest, planned, output)
    if problem:
        return FAILED, "output-invalid", problem, None
    effects = value.get("effects") if isinstance(value.get("effects"), dict) else {}
    refused = effects_take(state, manifest, planned, effects, owner=frame.owner)
    if refused:
        return FAILED, *refused, None
    try:
        proposals = [*answer.proposals, *effects_proposals(effects.get("pluginData"))]
    except ProposalRefused as exc:
        return DROPPED, exc.code, exc.message, output
    refused = frame.refused or writes_stage(
        state, frame.owner, planned.package, answer.operations, proposals, frame.events
    )
    if refused:
        return DROPPED, *refused, output
    return SUCCEEDED, "", "", output


# ------------------------------------------------------------------ nested calls


def _recurse(
    state: TurnState,
    frame: Frame,
    *,
    runtime_id: str,
    player_message: str | None,
    payload: Any,
    operations: list[dict[str, Any]],
    proposals: list[dict[str, Any]],
) -> dict[str, Any]:
    """ctx.recursiveCall of the run in frame: run runtime_id of the same package, nested.

    Answers {outcome: "success", value}, {outcome: "failed", error, code} or
    {outcome: "skipped", reason}; refuses (the caller's promise rejects) a call that cannot
    run: runtime_not_found, recursive_call_invalid, recursion_too_deep, write_refused.
    """
    # The caller's writes so far left its handler with this call: they are staged first,
    # as the owner's, so the nested run reads them.
    if frame.refused is None:
        frame.refused = writes_stage(
            state, frame.owner, frame.package, operations, proposals, frame.events
        )
    if frame.refused:
        raise CallbackRefused(
            f"recursiveCall: a write of {frame.runtime.qualified_id} was refused, so it "
            f"cannot succeed: {frame.refused[1]}",
            code="write_refused",
        )
    manifest = state.installed[frame.package]
    # Only the caller's own package is searched: another package's runtime is not found.
    target = manifest.runtime(runtime_id)
    if target is None:
        raise CallbackRefused(
            f"recursiveCall: {frame.package} has no runtime {runtime_id!r} (it reaches the "
            "runtimes of its own package only; use services or events across packages)",
            code="runtime_not_found",
        )
    if not target.is_function:
        raise CallbackRefused(
            f"recursiveCall: {target.qualified_id} is an agent runtime; recursiveCall runs "
            "function runtimes only",
            code="recursive_call_invalid",
        )
    limit = recursion_limit(frame.runtime)
    if frame.depth + 1 > limit:
        raise CallbackRefused(
            f"recursiveCall: {target.qualified_id} would run at depth {frame.depth + 1}, "
            f"above the limit of {limit} for {frame.runtime.qualified_id}",
            code="recursion_too_deep",
        )
    frame.calls += 1  # the n-th nested run of this run: its seed (see docs/play.md)
    started = time.monotonic()
    # Never longer than the caller may still run: it waits for this answer.
    timeout = max(min(function_timeout(target), frame.deadline - started), 0.001)
    child = Frame(
        owner=frame.owner,
        package=frame.package,
        runtime=target,
        depth=frame.depth + 1,
        seed=f"{frame.seed}#{frame.calls}",
        player_message=frame.player_message if player_message is None else player_message,
        deadline=started + timeout,
        result=frame.result,
    )
    trace = {"runtimeId": target.id, "depth": child.depth, "outcome": "running", "code": ""}
    frame.result.nested.append(trace)
    held = state.asks.kinds()
    marks = (len(state.overlay.writes), *(len(h.get(frame.owner, [])) for h in held))
    answer: dict[str, Any] = {"outcome": "failed", "error": "", "code": "internal-error"}
    try:
        answer = _run_nested(state, manifest, child, payload, timeout)
    finally:
        if answer["outcome"] == "success":
            frame.events.extend(child.events)
        else:
            # Not part of the owner's execution after all: its writes and asks go.
            state.overlay.discard_since(marks[0])
            for kept, mark in zip(held, marks[1:], strict=True):
                del kept.get(frame.owner, [])[mark:]
        trace["outcome"], trace["code"] = answer["outcome"], answer.get("code", "")
        trace["durationMs"] = int((time.monotonic() - started) * 1000)
    return answer


def _run_nested(
    state: TurnState, manifest: Manifest, frame: Frame, payload: Any, timeout: float
) -> dict[str, Any]:
    target = frame.runtime
    planned = PlannedRuntime(
        package=frame.package,
        runtime=target.qualified_id,
        stage=target.stage or "manual",
        activation="nested",
        reason=f"ctx.recursiveCall of {frame.owner}",
        manifest=target,
    )
    inputs, missing = runtime_inputs(state, manifest, planned, reader=frame.owner)
    if missing:
        return {"outcome": "failed", "error": missing, "code": "input-missing"}
    context = {
        **runtime_ctx(state, planned, inputs),
        "playerMessage": frame.player_message,
        "manualPayload": payload,
        "seed": frame.seed,
        "recursionDepth": frame.depth,
        "nestedCalls": True,
    }
    try:
        answer = plugin_function_call(
            manifest=manifest,
            runtime=target.id,
            callbacks=run_callbacks(state, planned, frame),
            context=context,
            timeout=timeout,
        )
    except PluginHostError as exc:
        return {
            "outcome": "failed",
            "error": f"{planned.runtime}: {exc.message}",
            "code": exc.code,
        }
    status, code, reason, output = _settle(state, manifest, planned, frame, answer)
    if status == SUCCEEDED:
        return {"outcome": "success", "value": output}
    if status == SKIPPED:
        return {"outcome": "skipped", "reason": reason, "code": code}
    return {"outcome": "failed", "error": reason, "code": code}


def recursion_limit(runtime: RuntimeManifest) -> int:
    """How deep ctx.recursiveCall may nest below runtime: its agent.loop.maxRecursionDepth (the
    normalised manifest writes the default in); a function runtime has no loop section, so the
    spec's default applies."""
    if runtime.is_function:
        return DEFAULT_MAX_RECURSION_DEPTH
    loop = (runtime.data.get("agent") or {}).get("loop") or {}
    return int(loop.get("maxRecursionDepth", DEFAULT_MAX_RECURSION_DEPTH))
