"""Lifecycle hooks: the one place that calls the packages' `contributes.hooks` handlers.

The pipeline (sessions.services, sessions.turns, agents.runtime through a callable) only asks
`HookDispatcher.dispatch(event, payload)` at its points; this module picks the packages, orders
the phases and reads the answers the way Covel's hook pipeline does (ackness/covel,
packages/runtime/src/hooks/): the phases run pre, then normal, then post; inside a phase the
packages run in the session's active order, and each package's handlers in registration order.

An event is either sequential (a handler sees the payload the earlier ones replaced, and the
first `abort` ends the chain: the caller decides what the abort means at its point) or parallel
(every handler runs and sees the same payload; nothing it answers changes the pipeline). As in
Covel, a handler that throws or times out in a sequential event counts as an abort with its
message; in a parallel one it is only recorded. Every abort and every failure is recorded on
the dispatcher (`log`, which the turn result carries as `hooks`) and sent as a session event
(`hook.aborted`, `hook.failed`), naming the package, event, phase and message.

Cost: only a package active in the session that declares the event in contributes.hooks is
called, one host request per package and phase; a turn of packages without hooks makes no host
round trip at all. The calls go through pluginhost.services.plugin_hook_call, so a community
package runs in its own contained host (pluginhost.pool), and only once the resolver let it in
(its approval is part of being active).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from catalogue.manifest.schema import hook_events
from catalogue.manifest.types import Manifest, thaw
from eventlog.services import event_append
from pluginhost.callbacks import HostCallbacks
from pluginhost.errors import PluginHostError
from pluginhost.services import plugin_hook_call
from sessions.callbacks import SessionCallbacks
from sessions.extensions import COMPACT, providers_of
from sessions.models import Session
from sessions.selectors import problem_notice

log = logging.getLogger("covel.sessions.hooks")

PHASES = ("pre", "normal", "post")
# Covel's HOOK_SEMANTICS (hooks/types.ts). PreStep is in our spec but not in Covel's list: it is
# a gate before each agent step, so it is sequential like the other Pre* gates.
PARALLEL = frozenset(
    {"SessionStart", "PostCompaction", "PostStateCommit", "TurnStop", "SessionEnd"}
)
# Every event the manifest schema lets a package declare; all but the parallel ones are gates.
EVENTS = frozenset(hook_events())
SEQUENTIAL = EVENTS - PARALLEL
AGENT_EVENTS = (
    "PostContextAssembly",
    "PreStep",
    "PreLLMCall",
    "PostLLMResponse",
    "PreToolUse",
    "PostToolUse",
)


@dataclass
class HookOutcome:
    """What the handlers of one event said. payload: the payload after every replace."""

    event: str
    payload: dict[str, Any]
    replaced: dict[str, Any] = field(default_factory=dict)  # the accumulated replace patches
    aborted: bool = False
    reason: str = ""
    package: str = ""  # the package whose hook aborted
    called: int = 0  # host requests made


def declared_phases(manifest: Manifest, event: str) -> list[str]:
    """The phases in which the package declared a hook for event, in phase order."""
    phases = set()
    for item in manifest.contributes.get("hooks") or ():
        entry = thaw(item)
        if isinstance(entry, str):
            entry = {"event": entry}
        if isinstance(entry, dict) and entry.get("event") == event:
            phases.add(entry.get("enforce") or "normal")
    return [p for p in PHASES if p in phases]


class HookDispatcher:
    """Dispatches the hook events of one session (and, inside a turn, of one turn).

    emit(type, payload): where the hook.aborted / hook.failed events go (the turn's emit, which
    a background turn holds until its commit); None appends them to the session stream.
    callbacks_for(manifest): what a package's hooks may ask of the session while they run (the
    turn's store decides: the session's rows, or an offline case's memory); None: the session's
    rows (SessionCallbacks without an overlay, so a hook reads committed data only).
    """

    def __init__(
        self,
        *,
        session: Session,
        manifests: Iterable[Manifest],
        turn_id: str | None = None,
        emit: Callable[[str, Mapping[str, Any]], None] | None = None,
        settings_for: Callable[[str], Mapping[str, Any]] | None = None,
        callbacks_for: Callable[[Manifest], HostCallbacks] | None = None,
    ) -> None:
        self.session = session
        self.turn_id = turn_id
        self.emit = emit
        self.settings_for = settings_for
        self.callbacks_for = callbacks_for or self._session_callbacks
        self.log: list[dict[str, Any]] = []
        manifests = list(manifests)
        # Covel's hook ctx.activePluginIds: every active package, hooked or not.
        self.active_ids = [m.id for m in manifests]
        # event -> [(manifest, phases)], only for packages that declare hooks at all.
        self.by_event: dict[str, list[tuple[Manifest, list[str]]]] = {}
        for manifest in manifests:
            if not manifest.contributes.get("hooks"):
                continue
            for event in EVENTS:
                phases = declared_phases(manifest, event)
                if phases:
                    self.by_event.setdefault(event, []).append((manifest, phases))

    def wants(self, event: str) -> bool:
        """True when some active package hooks event (so building its payload is worth it)."""
        return bool(self.by_event.get(event))

    def dispatch(
        self, event: str, payload: Mapping[str, Any], *, context: Mapping[str, Any] | None = None
    ) -> HookOutcome:
        """Run event's hooks over pre, normal and post; the outcome says what they decided."""
        outcome = HookOutcome(event=event, payload=dict(payload))
        declared = self.by_event.get(event)
        if not declared:
            return outcome
        sequential = event in SEQUENTIAL
        for phase in PHASES:
            for manifest, phases in declared:
                if phase not in phases:
                    continue
                current = outcome.payload if sequential else dict(payload)
                results = self._call(manifest, event, phase, current, context)
                outcome.called += 1
                if self._read(outcome, manifest.id, phase, results, sequential):
                    return outcome
        return outcome

    # ---------------------------------------------------------------- one package

    def _session_callbacks(self, manifest: Manifest) -> HostCallbacks:
        return SessionCallbacks(
            session=self.session, package=manifest.id, runtime=None, manifest=manifest
        )

    def _call(
        self,
        manifest: Manifest,
        event: str,
        phase: str,
        payload: Mapping[str, Any],
        context: Mapping[str, Any] | None,
    ) -> list[dict[str, Any]]:
        ctx = {
            "sessionId": str(self.session.pk),
            "turnId": self.turn_id or "",
            "activePluginIds": list(self.active_ids),
            **(context or {}),
        }
        if self.settings_for is not None:
            ctx["userSettings"] = dict(self.settings_for(manifest.id))
        try:
            return plugin_hook_call(
                manifest=manifest,
                event=event,
                payload=dict(payload),
                callbacks=self.callbacks_for(manifest),
                context=ctx,
                enforce=phase,
                sequential=event in SEQUENTIAL,
            )
        except PluginHostError as exc:
            # The package could not even be asked (its entry failed to load, its host died):
            # like Covel's failed lazy import, that is the hook's abort with the reason.
            return [{"action": "abort", "failure": exc.code, "reason": exc.message}]

    def _read(
        self,
        outcome: HookOutcome,
        package: str,
        phase: str,
        results: list[dict[str, Any]],
        sequential: bool,
    ) -> bool:
        """Fold one package's results into outcome; True when the chain stops here."""
        for result in results:
            failure = result.get("failure")
            reason = str(result.get("reason") or "")
            if failure:
                self._record("hook.failed", outcome.event, package, phase, failure, reason)
            if result.get("action") == "abort":
                if not failure:
                    self._record("hook.aborted", outcome.event, package, phase, "aborted", reason)
                if sequential:
                    outcome.aborted, outcome.reason, outcome.package = True, reason, package
                    outcome.replaced = {}
                    return True
                continue
            replace = result.get("replace")
            if sequential and isinstance(replace, dict) and not failure:
                outcome.replaced.update(replace)
                outcome.payload = {**outcome.payload, **replace}
        return False

    def _record(
        self, type: str, event: str, package: str, phase: str, outcome: str, message: str
    ) -> None:
        entry = {
            "event": event,
            "package": package,
            "phase": phase,
            "outcome": outcome,
            "message": message,
        }
        self.log.append(entry)
        log.info("%s: %s of %s (%s): %s", type, event, package, phase, message)
        # The event carries its notice line, so the page shows what the server wrote.
        payload = {**entry, "notice": problem_notice(type, entry)}
        if self.emit is not None:
            self.emit(type, payload)
        else:
            event_append(session_id=self.session.pk, type=type, payload=payload)


def hooks_dispatch(
    *, session: Session, manifests: Iterable[Manifest], event: str, payload: Mapping[str, Any]
) -> HookOutcome:
    """One event outside a turn (SessionStart, SessionEnd); its problems go to the stream."""
    return HookDispatcher(session=session, manifests=manifests).dispatch(event, payload)


# ------------------------------------------------------------------ the turn's points
#
# Each function below is one point of the turn's pipeline (sessions/turns.py): it builds the
# event's payload (only when a package hooks the event), dispatches, and applies what Covel lets
# the answer do there. `state` is the turn's sessions.turn_state.TurnState (not imported: it
# imports this module through sessions.turn_store).


def runtime_view(planned: Any) -> dict[str, Any]:
    return {
        "runtimeId": planned.runtime,
        "pluginId": planned.package,
        "stage": planned.stage,
        "kind": planned.manifest.kind,
        "activation": planned.activation,
    }


def turn_start(state: Any) -> str | None:
    """TurnStart (sequential): an abort vetoes the whole turn before any runtime runs; the
    reason, or None."""
    hooks: HookDispatcher = state.hooks
    if not hooks.wants("TurnStart"):
        return None
    outcome = hooks.dispatch(
        "TurnStart",
        {
            "playerMessage": state.request.message,
            "activeRuntimes": [r.qualified_id for m in state.active for r in m.runtimes],
        },
    )
    if not outcome.aborted:
        return None
    return f"TurnStart hook of {outcome.package} aborted the turn: {outcome.reason}"


def pre_schedule(state: Any, plan: Any) -> set[str]:
    """PreSchedule (sequential, filter-only): `replace.triggered` narrows the planned runtimes;
    the IDs it left out, which the state skips. An abort changes nothing (as in Covel)."""
    hooks: HookDispatcher = state.hooks
    if not hooks.wants("PreSchedule"):
        return set()
    planned = [p for stage in plan.stages for level in stage.levels for p in level]
    outcome = hooks.dispatch("PreSchedule", {"triggered": [runtime_view(p) for p in planned]})
    kept = outcome.replaced.get("triggered")
    if outcome.aborted or not isinstance(kept, list):
        return set()
    named = {str(k.get("runtimeId") if isinstance(k, dict) else k) for k in kept}
    return {p.runtime for p in planned if p.runtime not in named}


def pre_runtime(state: Any, planned: Any, inputs: Mapping[str, Any]) -> str | None:
    """PreRuntime (sequential): an abort skips the runtime; the reason, or None."""
    hooks: HookDispatcher = state.hooks
    if not hooks.wants("PreRuntime"):
        return None
    outcome = hooks.dispatch(
        "PreRuntime",
        {
            "manifest": runtime_view(planned),
            "input": {"playerMessage": state.request.message, "inputs": dict(inputs)},
        },
        context={"runtimeId": planned.runtime},
    )
    if not outcome.aborted:
        return None
    return f"{planned.runtime}: a PreRuntime hook of {outcome.package} aborted it: {outcome.reason}"


def post_runtime(state: Any, planned: Any, result: Any) -> None:
    """PostRuntime (sequential): `replace.result.output` rewrites a succeeded runtime's output
    (Covel rewrites the RuntimeResult; its status is the state's to decide, so only the
    output is taken). An abort is recorded only: the runtime has already run."""
    hooks: HookDispatcher = state.hooks
    if not hooks.wants("PostRuntime"):
        return
    outcome = hooks.dispatch(
        "PostRuntime", {"result": result.as_dict()}, context={"runtimeId": planned.runtime}
    )
    rewritten = outcome.replaced.get("result")
    if isinstance(rewritten, dict) and "output" in rewritten and result.status == "succeeded":
        result.output = rewritten["output"]


def turn_stop(state: Any, started: float) -> None:
    """TurnStop (parallel, observe only), when the runtimes are done and before the commit,
    where Covel's executeTurn sends it."""
    hooks: HookDispatcher = state.hooks
    if not hooks.wants("TurnStop"):
        return
    import time

    hooks.dispatch(
        "TurnStop",
        {
            "runtimeResults": [state.results[r].as_dict() for r in state.order],
            "durationMs": int((time.monotonic() - started) * 1000),
        },
    )


def _proposals(state: Any, runtime: str) -> list[dict[str, Any]]:
    """A runtime's staged writes as Covel's plugin.data proposals (one per write)."""
    result = state.results.get(runtime)
    out = []
    for write in state.overlay.writes:
        if write.runtime != runtime:
            continue
        payload: dict[str, Any] = {
            "namespace": write.namespace,
            "key": write.key,
            "ops": [dict(op) for op in write.ops],
        }
        if len(write.ops) == 1 and write.ops[0].get("op") == "set":
            payload["value"] = write.ops[0].get("value")
        out.append(
            {
                "id": f"{state.turn.pk}:{write.seq}",
                "type": "plugin.data",
                "source": {"pluginId": write.plugin, "runtimeId": runtime},
                "payload": payload,
                "turnId": str(state.turn.pk),
                "story": bool(result and result.story),
            }
        )
    return out


def _writers(state: Any) -> list[str]:
    failed = state.overlay.failed
    staged = {w.runtime for w in state.overlay.writes}
    return [r for r in state.overlay.completed if r in staged and r not in failed]


def pre_state_commit(state: Any) -> None:
    """PreStateCommit (sequential), before the commit, once per runtime with staged writes:
    payload {proposals} (that runtime's plugin.data writes). An abort vetoes them all (a
    runtime's writes apply all or nothing here): they are thrown away and the runtime is
    dropped (`hook-vetoed`); a story runtime keeps its story and loses only its writes, as a
    refused write does. Covel asks per proposal and skips the vetoed one; the rest commit. The
    runtimes that read the vetoed one's writes or used its result drop with it at the commit
    (TurnOverlay.veto), as Covel drops a rejected runtime's hard dependants."""
    hooks: HookDispatcher = state.hooks
    if not hooks.wants("PreStateCommit"):
        return
    for runtime in _writers(state):
        outcome = hooks.dispatch(
            "PreStateCommit",
            {"proposals": _proposals(state, runtime)},
            context={"runtimeId": runtime},
        )
        if not outcome.aborted:
            continue
        result = state.results[runtime]
        why = f"a PreStateCommit hook of {outcome.package} vetoed its writes: {outcome.reason}"
        state.overlay.veto(runtime, why)
        if result.story:
            result.reason = f"its writes were not saved: {why}"
        else:
            result.status, result.code, result.reason = "dropped", "hook-vetoed", why
        state.emit("runtime.status", result.as_dict())


def state_commit_sources(state: Any) -> dict[str, list[dict[str, Any]]]:
    """What PostStateCommit will report, read before the commit (which may drop some)."""
    if not state.hooks.wants("PostStateCommit"):
        return {}
    return {r: _proposals(state, r) for r in _writers(state)}


def post_state_commit(
    state: Any, sources: Mapping[str, list[dict[str, Any]]], kept: Iterable[str]
) -> None:
    """PostStateCommit (parallel, observe only), after the commit, once per runtime whose
    writes were saved (kept: the commit's kept runtimes): {proposals, result: {committed}}."""
    hooks: HookDispatcher = state.hooks
    if not sources:
        return
    before = len(hooks.log)
    saved = set(kept)
    for runtime, proposals in sources.items():
        if runtime in saved:
            hooks.dispatch(
                "PostStateCommit",
                {"proposals": proposals, "result": {"committed": True}},
                context={"runtimeId": runtime},
            )
    if len(hooks.log) != before:
        state.record_hooks()


def history_window(state: Any, total: int, max_turns: int) -> int | None:
    """PreCompaction (sequential) before agent.history.maxTurns trims the prompt's history: an
    abort keeps the whole history this time (None). PostCompaction (parallel) observes the
    outcome. Only dispatched when some package hooks either event."""
    hooks: HookDispatcher = state.hooks
    if not (hooks.wants("PreCompaction") or hooks.wants("PostCompaction")):
        return max_turns
    pre = hooks.dispatch("PreCompaction", {"messageCount": total, "keepTurns": max_turns})
    keep = None if pre.aborted else max_turns
    kept = total if keep is None else min(total, keep)
    hooks.dispatch(
        "PostCompaction",
        {"compacted": kept < total, "keptTurns": kept, "droppedTurns": total - kept},
    )
    return keep


def _compactor(state: Any) -> str:
    return ", ".join(p.name for p in providers_of(state.active, COMPACT))


def compaction_allowed(state: Any, message_count: int) -> bool:
    """PreCompaction (sequential) before the history.compact@2 provider is asked, once a turn,
    where Covel asks it before its compactor runs: an abort skips the compaction this turn
    (the history stays as the saved summaries leave it). messageCount: uncompacted messages."""
    hooks: HookDispatcher = state.hooks
    if not hooks.wants("PreCompaction"):
        return True
    outcome = hooks.dispatch(
        "PreCompaction", {"messageCount": message_count, "compactor": _compactor(state)}
    )
    return not outcome.aborted


def compaction_observed(state: Any, compacted: bool, summary_ids: list[str]) -> None:
    """PostCompaction (parallel) after the provider compaction: {compacted, summaryId?, ...}."""
    hooks: HookDispatcher = state.hooks
    if not hooks.wants("PostCompaction"):
        return
    payload: dict[str, Any] = {
        "compacted": compacted,
        "summaryIds": summary_ids,
        "compactor": _compactor(state),
    }
    if summary_ids:
        payload["summaryId"] = summary_ids[0]
    hooks.dispatch("PostCompaction", payload)


@dataclass
class AgentHooks:
    """The callable agents.runtime and agents.loop dispatch through (they import no sessions):
    PostContextAssembly, PreStep, PreLLMCall, PostLLMResponse, PreToolUse, PostToolUse, with
    pluginId and runtimeId added to the payload as Covel's wire helpers add them."""

    hooks: HookDispatcher
    package: str
    runtime: str

    def wants(self, event: str) -> bool:
        return self.hooks.wants(event)

    def __call__(self, event: str, payload: Mapping[str, Any]) -> HookOutcome:
        return self.hooks.dispatch(
            event,
            {**payload, "pluginId": self.package, "runtimeId": self.runtime},
            context={"runtimeId": self.runtime},
        )


def agent_hooks(state: Any, planned: Any) -> AgentHooks | None:
    """The agent run's hooks, or None when no active package hooks an agent event."""
    hooks: HookDispatcher = state.hooks
    if not any(hooks.wants(e) for e in AGENT_EVENTS):
        return None
    return AgentHooks(hooks=hooks, package=planned.package, runtime=planned.runtime)
