"""A run's writes, staged in the turn's overlay as its owner's until the commit.

Operations (ctx.pluginData) and proposals (checked and sorted by sessions.proposals) become
staged writes; story text, forms and UI blocks of proposals are held in the turn's asks. Either
every write of a run is staged, or the refusal says which one could not be and why.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from sessions.errors import WriteRefused
from sessions.planner import PlannedRuntime
from sessions.proposals import (
    ProposalRefused,
    lore_writes,
    proposal_batch,
    reserved_namespace,
    session_writes,
)
from sessions.runtime_checks import forms_checked
from sessions.turn_state import TurnState


def writes_stage(
    state: TurnState,
    owner: str,
    package: str,
    operations: list[dict[str, Any]],
    proposals: list[dict[str, Any]],
    events: list[tuple[str, dict[str, Any]]] | None = None,
) -> tuple[str, str] | None:
    """Stage a run's writes in the overlay as owner's; (code, message) of a refusal, or None.

    Proposals are checked and sorted by sessions.proposals: plugin data, session lore,
    the session's records (SESSION_DATA) and events (added to `events`, which the caller
    sends when the run succeeds); story text, forms and UI blocks are held as owner's, like
    effects, once every write staged. After a refusal the caller throws away what was
    staged: a function run is dropped, an agent's tool call discards its writes
    (tool_proposals_stage).
    """
    try:
        batch = proposal_batch(proposals, package=package, runtime=owner)
    except ProposalRefused as exc:
        return exc.code, exc.message
    staged: list[tuple[str, str, list[Mapping[str, Any]]]] = []
    for op in operations:
        kind, namespace = op.get("kind"), str(op.get("namespace"))
        if kind in ("set", "update", "delete") and reserved_namespace(namespace):
            return "namespace-reserved", (
                f"{owner}: ctx.pluginData cannot write namespace {namespace!r}, which is "
                "reserved for the framework [namespace-reserved]"
            )
        if kind == "set":
            staged.append((namespace, op["key"], [{"op": "set", "value": op.get("value")}]))
        elif kind == "update":
            staged.append((namespace, op["key"], list(op.get("ops") or [])))
        elif kind == "delete":
            staged.append((namespace, op["key"], [{"op": "delete"}]))
    now = state.store.now()
    overlay = state.overlay
    staged.extend(batch.writes)
    staged.extend(lore_writes(overlay, runtime=owner, plugin=package, lore=batch.lore, now=now))
    try:
        shared = session_writes(
            overlay,
            batch,
            runtime=owner,
            package=package,
            world_characters=list(state.session.world.characters or []),
            turn_id=str(state.turn.pk),
            now=now,
        )
    except ProposalRefused as exc:
        return exc.code, exc.message
    forms, problem = forms_checked(state, state.installed[package], batch.forms)
    if problem:
        return "form-invalid", f"{owner}: a form {problem} [form-invalid]"
    writes = [(package, *w) for w in staged] + shared
    for plugin, namespace, key, ops in writes:
        try:
            overlay.stage(runtime=owner, plugin=plugin, namespace=namespace, key=key, ops=ops)
        except WriteRefused as exc:
            return "write-refused", str(exc)
    if events is not None:
        events.extend(batch.events)
    # Forms, story text and UI blocks of proposals, committed with owner's writes.
    asks = state.asks
    if forms:
        asks.forms.setdefault(owner, []).extend(forms)
    if batch.narrative:
        asks.appended.setdefault(owner, []).extend(batch.narrative)
    if batch.blocks:
        asks.blocks.setdefault(owner, []).extend(batch.blocks)
    return None


def tool_proposals_stage(
    state: TurnState, planned: PlannedRuntime, package: str, proposals: list[dict[str, Any]]
) -> str | None:
    """An agent's tool call's proposals: staged as the agent's, or none of them (the
    refusal goes back to the model as the tool's error); their events are sent at once,
    as the agent's other events are."""
    mark = len(state.overlay.writes)
    events: list[tuple[str, dict[str, Any]]] = []
    refused = writes_stage(state, planned.runtime, package, [], proposals, events)
    if refused:
        state.overlay.discard_since(mark)
        return refused[1]
    for topic, payload in events:
        state.plugin_event(planned, topic, payload)
    return None
