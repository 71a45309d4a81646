"""What a runtime is given when it runs: its bound inputs and its ctx.

Plain reads of the turn's state (sessions.turn_state): the inputs bound from earlier outputs,
committed exports and the turn digest (sessions.inputs.bind_inputs), and the context object
plugin code receives (seed, trigger event, settings, world).
"""

from __future__ import annotations

from typing import Any

from catalogue.manifest.types import Manifest
from sessions.inputs import bind_inputs, committed_sources, staged_operations
from sessions.models import Turn
from sessions.operations import MISSING
from sessions.planner import PlannedRuntime
from sessions.turn_state import TurnState


def runtime_inputs(
    state: TurnState, manifest: Manifest, planned: PlannedRuntime, *, reader: str | None = None
) -> tuple[dict[str, Any], str]:
    """ctx.inputs ({name: {"value": ...}}), or a reason when a required input is missing.

    reader: whose execution reads them (a nested run's owner), planned.runtime by default.
    """
    committed: dict[tuple[str, str], Any] = {}
    for plugin, record_as in committed_sources(
        manifest=manifest, runtime=planned.manifest, active=state.active
    ):
        value = state.store.export_latest(plugin, record_as)
        if value is not MISSING:
            committed[(plugin, record_as)] = value
    binding = bind_inputs(
        manifest=manifest,
        runtime=planned.manifest,
        active=state.active,
        outputs=state.outputs,
        committed=committed,
        digest={
            "playerMessage": state.request.message,
            "narrativeText": state.narrative_text,
            "actions": list(state.request.actions),
        },
        operations=staged_operations(state.overlay, planned.package),
    )
    for producer in binding.dependencies:
        state.overlay.record_dependency(reader=reader or planned.runtime, source=producer)
    if binding.problem:
        return {}, binding.problem
    return {name: {"value": value} for name, value in binding.values.items()}, ""


def runtime_ctx(
    state: TurnState, planned: PlannedRuntime, inputs: dict[str, Any]
) -> dict[str, Any]:
    """The ctx plugin code receives (its guard and its handler alike)."""
    request = state.request
    return {
        "sessionId": str(state.session.pk),
        "turnId": str(state.turn.pk),
        "runtimeId": planned.manifest.id,
        "inputs": inputs,
        "playerMessage": request.message,
        "playerActions": list(request.actions),
        "manualPayload": request.manual.get(planned.runtime),
        "world": state.world,
        "userSettings": dict(state.settings_of(planned.package)),
        "locale": state.session.locale,
        # One seed per turn and runtime: a retried turn or job draws the same numbers.
        "seed": runtime_seed(state, planned),
        "logicalTurn": state.logical_turn,
        "turnNumber": state.logical_turn,
        "sourceTurnId": source_turn_id(state),
        "triggerEvent": trigger_event(state, planned),
    }


def runtime_seed(state: TurnState, planned: PlannedRuntime) -> str:
    return f"{state.request.execution_source or str(state.turn.pk)}:{planned.runtime}"


def trigger_event(state: TurnState, planned: PlannedRuntime) -> dict[str, Any] | None:
    """ctx.triggerEvent of a runtime the event trigger woke: {topic, data, payload, source}
    of the first emission of its topic this turn; None for any other activation."""
    if planned.activation == "detached":
        return state.request.trigger_event
    if planned.activation != "event":
        return None
    topic = (planned.manifest.schedule.get("trigger") or {}).get("topic")
    return state.trigger_events.get(str(topic)) if topic else None


def agent_activation(state: TurnState, planned: PlannedRuntime) -> dict[str, Any] | None:
    """What an agent woken by an event reads of it (Covel's runtime activation): the
    event's data as payload; detached when the event's job runs it."""
    event = trigger_event(state, planned)
    if event is None:
        return None
    detached = planned.activation == "detached"
    return {"source": "event", "detached": detached, "payload": event.get("data")}


def source_turn_id(state: TurnState) -> str | None:
    """ctx.execution.sourceTurnId: the turn this run belongs to. A background turn's is its
    source turn; a manual background run has none (its seed still comes from its first
    attempt, see sessions/background.py); a regenerated turn's is the turn it replays
    (sessions/rewind.py), as Covel's retry keeps its source turn."""
    if state.request.kind != Turn.Kind.BACKGROUND:
        return state.request.execution_source or str(state.turn.pk)
    return str(state.turn.source_turn_id) if state.turn.source_turn_id else None
