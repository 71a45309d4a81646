"""An agent runtime's run: the context agents.runtime needs (history, prompt segments, tools
that stage into the turn's overlay), the run itself, and what it asked to show.

Writes (tool proposals, dataset tools, write services) are staged in the turn's overlay as the
run goes; a failed run is marked failed, which throws them away.
"""

from __future__ import annotations

import time
from typing import Any

from catalogue.manifest.types import Manifest
from sessions import hooks, selectors
from sessions.forms import form_normalise
from sessions.operations import proposal_ops
from sessions.planner import PlannedRuntime
from sessions.runtime_context import agent_activation, runtime_seed
from sessions.staged_writes import tool_proposals_stage
from sessions.turn_state import FAILED, SKIPPED, SUCCEEDED, RuntimeResult, TurnState


def agent_run(
    state: TurnState,
    manifest: Manifest,
    planned: PlannedRuntime,
    inputs: dict[str, Any],
    result: RuntimeResult,
) -> None:
    """Through agents.runtime (the Agent runtimes issue): slot, prompt, tools, output checks."""
    from agents.runtime import AgentRuntimeContext, OverlayData, run_agent_runtime
    from agents.tools import event_directory, service_providers

    runtime = planned.manifest
    refused = state.store.agent_refused(manifest, runtime)
    if refused is not None:
        result.status, result.code, result.reason = SKIPPED, "mock-skipped", refused
        return
    user_settings = state.store.user_settings(planned.package, manifest)
    stream = StoryStream(state, planned) if runtime.visibility == "story" else None
    bounds = (runtime.data.get("agent") or {}).get("history") or {}  # none: the whole game
    history, compacted = _agent_history(state, planned, bounds.get("maxTurns"), result)
    context = AgentRuntimeContext(
        data=OverlayData(overlay=state.overlay, runtime=planned.runtime),
        callbacks_for=lambda plugin: state.store.callbacks(
            package=plugin,
            runtime=planned.runtime,
            overlay=state.overlay,
            on_emit=lambda topic, payload: state.plugin_event(planned, topic, payload),
            manifest=state.installed.get(plugin),
        ),
        session_id=str(state.session.pk),
        turn_id=str(state.turn.pk),
        player_message=state.request.message,
        story_text=state.narrative_text or None,
        history=history,
        history_windowed=True,
        compacted=compacted,
        segments=_extension_segments(state, planned, result),
        inputs={name: bound["value"] for name, bound in inputs.items()},
        payload=state.request.manual.get(planned.runtime),
        activation=agent_activation(state, planned),
        variables={"world": state.world, "settings": user_settings},
        user_settings=user_settings,
        world=state.world,
        locale=state.session.locale,
        seed=runtime_seed(state, planned),
        events=event_directory(state.active),
        services=service_providers(state.active),
        emit=lambda topic, payload: state.plugin_event(planned, topic, payload),
        stage_proposals=lambda plugin, proposals: tool_proposals_stage(
            state, planned, plugin, list(proposals)
        ),
        on_text=stream.add if stream is not None else None,
        tool_context={"turnNumber": state.logical_turn},
        proposal_ops=proposal_ops,
        hooks=hooks.agent_hooks(state, planned),
    )
    run = run_agent_runtime(
        manifest=manifest,
        runtime=runtime,
        context=context,
        endpoint=state.store.agent_endpoint(runtime, user_settings),
    )
    state.store.agent_ran(planned.runtime, run)
    result.warnings += list(run.warnings)
    if stream is not None:
        stream.flush()
    if run.status != "success":
        result.status, result.code = FAILED, run.code or "agent-failed"
        result.reason = run.error or f"{planned.runtime} failed"
        return
    result.status, result.output = SUCCEEDED, run.output if run.output is not None else run.text
    # create-form checked each form when the model called it (a bad one was refused to the
    # model, which may try again); its generated id carries this turn's id.
    for form in run.forms:
        asked = {k: v for k, v in form.items() if k not in ("id", "plugin", "runtime")}
        state.asks.forms.setdefault(planned.runtime, []).append(
            (str(form["id"]), form_normalise(asked))
        )
    for notice in run.notifications:
        state.asks.notifications.setdefault(planned.runtime, []).append(
            {k: notice[k] for k in ("title", "body", "level") if k in notice}
        )


# ------------------------------------------------------------------ extension points


def _extension_failed(
    state: TurnState, failures: list[dict[str, Any]], result: RuntimeResult
) -> None:
    """A failing provider is skipped (Covel's onError "skip"), never silently: the runtime's
    warnings and an extension.failed event say which one and why."""
    for failure in failures:
        result.warnings.append(
            f"{failure['point']} {failure['plugin']}/{failure['extension']} was skipped "
            f"[{failure['code']}]: {failure['message']}"
        )
        payload = {**failure, "runtime": result.runtime}
        state.emit(
            "extension.failed",
            {**payload, "notice": selectors.problem_notice("extension.failed", payload)},
        )


def _extension_segments(
    state: TurnState, planned: PlannedRuntime, result: RuntimeResult
) -> list[dict[str, Any]]:
    """prompt.segment@1: collected once a turn, then chosen by each runtime's audience."""
    from sessions import extensions

    if state.segments is None:
        failures: list[dict[str, Any]] = []
        state.segments = extensions.static_segments(state.active) + state.store.prompt_segments(
            active=state.active,
            turn_id=str(state.turn.pk),
            message=state.request.message,
            world=state.world,
            failures=failures,
            runtime=planned.runtime,
            overlay=state.overlay,
        )
        _extension_failed(state, failures, result)
    output = (planned.manifest.data.get("io") or {}).get("output") or {}
    return extensions.segments_for(
        state.segments,
        package=planned.package,
        story=planned.manifest.visibility == "story",
        contract=output.get("contract"),
    )


def _agent_history(
    state: TurnState, planned: PlannedRuntime, max_turns: int | None, result: RuntimeResult
) -> tuple[list[Any], str | None]:
    """The agent's history, and the compacted summaries that stand for its oldest part.

    With no history.compact@2 or prompt.history-transform@1 provider and no summary saved,
    this is _history's one query; otherwise the whole log goes through the points
    (compaction once a turn), then agent.history bounds it.
    """
    from agents.prompt import Turn as PromptTurn
    from sessions import extensions

    if state.extended_history is None:
        state.extended_history = state.store.history_extended(state.active)
    if not state.extended_history or max_turns == 0:
        return _history(state, max_turns=max_turns), None
    failures: list[dict[str, Any]] = []
    turns, compacted = extensions.agent_history(
        session=state.session,
        active=state.active,
        rows=state.store.history_log(),
        system_prompt=planned.manifest.prompt,
        turn_id=str(state.turn.pk),
        compact=not state.compacted,
        failures=failures,
        gate=lambda count: hooks.compaction_allowed(state, count),
        observe=lambda done, ids: hooks.compaction_observed(state, done, ids),
    )
    state.compacted = True
    _extension_failed(state, failures, result)
    history = [PromptTurn(messages=tuple(t)) for t in turns]
    if max_turns is not None:
        max_turns = hooks.history_window(state, len(history), max_turns)
    return (history[-max_turns:] if max_turns is not None else history), compacted


def _history(state: TurnState, *, max_turns: int | None = None) -> list[Any]:
    """The session's committed player turns, oldest first, as the prompt's history.

    Without agent.history (max_turns None) that is the whole game; one query either way.
    """
    from agents.prompt import Turn as PromptTurn

    if max_turns == 0:
        return []
    window = None
    if max_turns is not None and (
        state.hooks.wants("PreCompaction") or state.hooks.wants("PostCompaction")
    ):
        limit = max_turns
        window = lambda total: hooks.history_window(state, total, limit)  # noqa: E731
    rows = state.store.history_rows(max_turns, window)
    return [
        PromptTurn(
            messages=tuple(
                m
                for m in (
                    {"role": "user", "content": said},
                    {"role": "assistant", "content": told},
                )
                if m["content"]
            )
        )
        for said, told in rows
    ]


class StoryStream:
    """A story agent's streamed text as `narrative.delta` events, at most one per interval.

    Each event is one database row, so chunks are batched: the page still sees the story grow.
    """

    INTERVAL = 0.25

    def __init__(self, state: TurnState, planned: PlannedRuntime) -> None:
        self.state = state
        self.planned = planned
        self.buffer: list[str] = []
        self.last = time.monotonic()

    def add(self, text: str) -> None:
        self.buffer.append(text)
        if time.monotonic() - self.last >= self.INTERVAL:
            self.flush()

    def flush(self) -> None:
        if self.buffer:
            self.state.emit(
                "narrative.delta", {"runtime": self.planned.runtime, "text": "".join(self.buffer)}
            )
            self.buffer = []
        self.last = time.monotonic()
