"""The turn executor: resolve, plan, run each stage's runtimes, then commit once.

A turn holds the session's lease (sessions.locks) from start to end, so two
actions never interleave; it holds a database transaction only for the final commit. Runtime
statuses are appended to the event stream as they happen, so a page sees them live.

Below it: sessions.services (resolution, settle waits), sessions.locks, sessions.schema_files,
eventlog (events) and jobs.services.job_defer, the one function through which detached runtimes
leave the turn. Above it: the API, sessions.interactions (a form's answer runs a turn) and
sessions.background (a job's runtime as a background turn).

One piece, past 800 lines: it is one class, TurnExecutor, whose state (the overlay of staged
writes, the frames of nested calls, results, story, jobs, events) every stage reads and
writes; split by stage, each part would need all of it.
"""

from __future__ import annotations

import logging
import os
import time
import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from django.db import transaction
from django.utils import timezone
from jsonschema import exceptions as schema_exceptions

from catalogue.manifest.types import Manifest, RuntimeManifest, thaw
from core.sql import insert
from eventlog.errors import SessionProblem
from eventlog.services import event_append
from pluginhost.errors import CallbackRefused, PluginHostError
from pluginhost.services import function_timeout, plugin_function_call, plugin_guard_call
from sessions import hooks, selectors, services
from sessions.callbacks import SessionCallbacks
from sessions.errors import WriteRefused
from sessions.forms import form_normalise
from sessions.inputs import bind_inputs, committed_sources, staged_operations
from sessions.locks import (
    LOCK_WAIT_SECONDS,
    session_lock_acquire,
    session_lock_release,
    session_lock_renew,
)
from sessions.models import Interaction, PluginData, RecordedExport, Session, Turn
from sessions.operations import MISSING, TurnOverlay, datasets_of, proposal_ops
from sessions.planner import STAGES, Plan, PlannedRuntime, Skip, plan_turn
from sessions.proposals import (
    ProposalRefused,
    effects_proposals,
    lore_writes,
    proposal_batch,
    reserved_namespace,
    session_writes,
)
from sessions.resolver import Resolution
from sessions.schema_files import schema_validator
from sessions.triggers import record_trigger
from worlds.services import user_settings_for

log = logging.getLogger("covel.sessions.turns")

SUCCEEDED = "succeeded"
FAILED = "failed"
SKIPPED = "skipped"
DROPPED = "dropped"
DEFERRED = "deferred"
STORY_CONTRACT = "narrative-engine@2"
KERNEL_INPUTS = ("turn-digest@1", "operations@1")
# ctx.recursiveCall's depth limit when the caller has no agent.loop (a function runtime): the
# spec's default of agent.loop.maxRecursionDepth.
DEFAULT_MAX_RECURSION_DEPTH = 10


@dataclass
class RuntimeResult:
    runtime: str  # qualified ID
    package: str
    stage: str
    kind: str  # function | agent
    activation: str
    status: str
    code: str = ""
    reason: str = ""
    output: Any = None
    duration_ms: int = 0
    story: bool = False
    concealed: bool = False
    job_id: str | None = None  # the job's public id (RuntimeJob.job_id), as the jobs API takes it
    # Notices of an agent run the player should be able to see in the trace (a tool that could
    # not be offered, reasoning that could not be turned off for the slot...).
    warnings: list[str] = field(default_factory=list)
    # The nested runs its ctx.recursiveCall made, at any depth, in start order:
    # {runtimeId, depth, outcome, code, durationMs}.
    nested: list[dict[str, Any]] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        return {
            "runtime": self.runtime,
            "package": self.package,
            "stage": self.stage,
            "kind": self.kind,
            "activation": self.activation,
            "status": self.status,
            "code": self.code,
            "reason": self.reason,
            # A concealed runtime's output never leaves the server.
            "output": None if self.concealed else self.output,
            "durationMs": self.duration_ms,
            "story": self.story,
            "jobId": self.job_id,
            "warnings": list(self.warnings),
            "nested": [dict(n) for n in self.nested],
        }


@dataclass
class _Frame:
    """One function run inside a runtime's execution: the top-level run, or a nested one that
    ctx.recursiveCall started. Everything a nested run writes, asks or emits is its owner's."""

    owner: str  # the top-level runtime's qualified ID
    package: str
    runtime: RuntimeManifest  # what runs in this frame
    depth: int  # ctx.recursionDepth
    seed: str
    player_message: str
    deadline: float  # time.monotonic() when this run's limit passes
    result: RuntimeResult  # the owner's result, which lists the nested runs
    calls: int = 0  # nested runs started so far
    events: list[tuple[str, dict[str, Any]]] = field(default_factory=list)  # held nested events
    # (code, message) of a write of this run refused while it was handed over: it cannot succeed
    refused: tuple[str, str] | None = None


@dataclass
class TurnRequest:
    kind: str = Turn.Kind.PLAYER
    message: str = ""
    actions: list[dict[str, Any]] = field(default_factory=list)
    manual: dict[str, Any] = field(default_factory=dict)  # qualified runtime -> payload
    turn_id: uuid.UUID = field(default_factory=uuid.uuid4)
    settle: dict[str, Any] | None = None  # the settle wait before the turn, if any
    # What this run re-runs, when it re-runs something: a detached job runs for its source turn,
    # and a retried job for the same one. ctx.execution.sourceTurnId and the dice seed are keyed
    # by it, so a retry draws the same numbers. Empty: the turn itself.
    execution_source: str = ""
    # The qualified runtime whose form this turn answers (sessions.interactions): the planner
    # runs it even when it is a setup runtime that already ran, so the answer reaches it.
    answering: str = ""
    # A detached job's ctx.triggerEvent, frozen by the turn whose event woke it.
    trigger_event: dict[str, Any] | None = None

    @property
    def include_auto(self) -> bool:
        return self.kind == Turn.Kind.PLAYER


class LeaseLost(Exception):
    pass


# ------------------------------------------------------------------ schemas


def _schema_file(manifest: Manifest, runtime: RuntimeManifest, written: str) -> Path | None:
    """A path the manifest wrote: package-relative first, then relative to the runtime's file."""
    root = Path(manifest.path)
    for candidate in (root / written, (root / runtime.file).parent / written):
        if candidate.is_file():
            return candidate
    return None


def schema_problem(
    manifest: Manifest, runtime: RuntimeManifest, written: str, value: Any, *, what: str
) -> str | None:
    """None when value matches the schema file; else a sentence naming the file, path and rule."""
    path = _schema_file(manifest, runtime, written)
    if path is None:
        return f"{what} schema {written} of {runtime.qualified_id} cannot be found"
    try:
        validator = schema_validator(path)
    except (OSError, ValueError) as exc:
        return f"{what} schema {written} of {runtime.qualified_id} cannot be read: {exc}"
    error = schema_exceptions.best_match(validator.iter_errors(value))
    if error is None:
        return None
    pointer = "".join(f"/{p}" for p in error.absolute_path) or "/"
    relative = os.path.relpath(path, manifest.path)
    return f"{what} of {runtime.qualified_id} does not match {relative} at {pointer}: {error.message} [{error.validator}]"


# ------------------------------------------------------------------ the executor


class TurnExecutor:
    def __init__(
        self,
        *,
        session: Session,
        turn: Turn,
        resolution: Resolution,
        installed: Mapping[str, Manifest],
        request: TurnRequest,
        token: str | None,
    ) -> None:
        self.session = session
        self.turn = turn
        self.resolution = resolution
        self.installed = installed
        self.active = [installed[p] for p in resolution.active if p in installed]
        self.request = request
        self.token = token
        self.logical_turn = turn.number
        self.results: dict[str, RuntimeResult] = {}
        self.order: list[str] = []
        self.outputs: dict[str, Any] = {}
        self.emitted: list[str] = []
        self.ledger: dict[str, Any] = dict(session.trigger_ledger or {"runtimes": {}})
        self.narrative_text = ""
        self.datasets = {m.id: datasets_of(m) for m in self.active}
        self.overlay = TurnOverlay(
            load=self._load_stored,
            datasets=self.datasets,
            lister=self._list_stored,
            usage=selectors.plugin_data_usage_reader(session_id=session.pk),
        )
        self.exports: list[tuple[str, str, str, Any]] = []  # (plugin, runtime, recordAs, value)
        # What each runtime asked to show the player: committed only if the runtime succeeds
        # and keeps its writes. forms: runtime -> [(interactionId, form)].
        self.forms: dict[str, list[tuple[str, dict[str, Any]]]] = {}
        self.notifications: dict[str, list[dict[str, Any]]] = {}
        # narrative.append and ui.render proposals, held the same way: runtime -> [...].
        self.appended: dict[str, list[dict[str, Any]]] = {}
        self.blocks: dict[str, list[dict[str, Any]]] = {}
        self.narrative_source: str | None = None  # the story runtime narrative_text came from
        self.jobs: list[PlannedRuntime] = []
        self.job_inputs: dict[str, dict[str, Any]] = {}
        self.world = self._world()
        # Extension points (sessions.extensions): segments collected and compaction asked
        # once a turn; whether the agent history goes through them at all.
        self._segments: list[dict[str, Any]] | None = None
        self._compacted = False
        self._extended_history: bool | None = None
        self.user_settings: dict[str, dict[str, Any]] = {}
        # A background turn (a detached job) holds its events until its commit: a job that times
        # out, is cancelled or goes stale announces nothing it never saved (its
        # job-status.updated events tell what became of it).
        self.held_events: list[tuple[str, dict[str, Any]]] | None = (
            [] if request.kind == Turn.Kind.BACKGROUND else None
        )
        # Lifecycle hooks of the active packages (sessions/hooks.py); its log is the turn's
        # record of hook aborts and failures.
        self.hooks = hooks.HookDispatcher(
            session=session,
            manifests=self.active,
            turn_id=str(turn.pk),
            emit=self.emit,
            settings_for=self._user_settings,
        )
        self.unscheduled: set[str] = set()  # runtimes a PreSchedule hook left out
        # The events emitted so far: {topic, data, source}, the first of each topic is what an
        # event-triggered runtime gets as ctx.triggerEvent (Covel: first emission wins).
        self.trigger_events: dict[str, dict[str, Any]] = {}

    # -------------------------------------------------------------- stored data

    def _load_stored(self, plugin: str, namespace: str, key: str) -> Any:
        row = (
            PluginData.objects.filter(
                session_id=self.session.pk, plugin_id=plugin, namespace=namespace, key=key
            )
            .only("value")
            .first()
        )
        return MISSING if row is None else row.value

    def _list_stored(self, plugin: str, namespace: str) -> dict[str, Any]:
        return dict(
            PluginData.objects.filter(
                session_id=self.session.pk, plugin_id=plugin, namespace=namespace
            ).values_list("key", "value")
        )

    def _world(self) -> dict[str, Any]:
        world = self.session.world
        return {
            "id": world.world_id,
            "name": world.display_name,
            "description": world.description,
            # As the last good sync of characters/characters.json stored them, with the
            # session's own (character.upsert) over them.
            "characters": selectors.session_characters(session=self.session),
            # The character field definitions, under the spec's name (data/world.data.yaml).
            "characterSchema": list(world.character_schema or []),
            # The world's data/lorebook.yaml, then the session lore packages wrote
            # (lorebook.upsert), as Covel's context lists its session lorebook.
            "lorebook": [*(world.lorebook or []), *selectors.session_lore(session=self.session)],
            # Read when the turn starts, so a switched current character shows from the next turn.
            "seats": list(self.session.seats or []),
        }

    # -------------------------------------------------------------- events

    def emit(self, type: str, payload: Mapping[str, Any]) -> None:
        event = {"turnId": str(self.turn.pk), **payload}
        if self.held_events is None:
            event_append(session_id=self.session.pk, type=type, payload=event)
        elif not (type == "runtime.status" and payload.get("status") == "running"):
            self.held_events.append((type, event))  # "running" is moot by the commit

    def _release_events(self) -> None:
        """Write the held events (inside the commit); later ones go straight to the stream."""
        held, self.held_events = self.held_events, None
        for type, event in held or []:
            event_append(session_id=self.session.pk, type=type, payload=event)

    def _finish(self, result: RuntimeResult) -> None:
        self.results[result.runtime] = result
        if result.runtime not in self.order:
            self.order.append(result.runtime)
        self.emit("runtime.status", result.as_dict())
        if self.token is not None:
            session_lock_renew(session_id=self.session.pk, token=self.token)

    # -------------------------------------------------------------- planning

    def plan(self) -> Plan:
        return plan_turn(
            manifests=self.active,
            phase=self.session.phase,
            turn=self.logical_turn,
            ledger=self.ledger,
            emitted_topics=set(self.emitted),
            manual=set(self.request.manual),
            recorded_versions=self.session.setup_versions or {},
            include_auto=self.request.include_auto,
            answering=self.request.answering,
        )

    def statuses(self) -> dict[str, str]:
        return {rid: r.status for rid, r in self.results.items()}

    # -------------------------------------------------------------- running

    def run(self) -> None:
        first = self.plan()
        self.unscheduled = hooks.pre_schedule(self, first)
        for skip in first.skipped:
            self._finish(self._skip_result(skip, first))
        # A runtime triggered by an event emitted earlier in this turn joins a later stage:
        # the plan is made again at each barrier with the topics emitted so far.
        topics_seen = 0
        plan = first
        for stage_name in [*STAGES, "manual"]:
            if len(self.emitted) != topics_seen:
                topics_seen = len(self.emitted)
                plan = self.plan()
            stage = next((s for s in plan.stages if s.stage == stage_name), None)
            if stage is None:
                continue
            for level in stage.levels:
                for planned in level:
                    if planned.runtime in self.results:
                        continue
                    self._run_planned(plan, planned)
            if stage_name == "narrative":
                self._take_narrative()
        if not self.narrative_text:
            self._take_narrative()

    def run_single(self, planned: PlannedRuntime, inputs: dict[str, Any]) -> RuntimeResult:
        """Run one runtime with inputs bound elsewhere (a detached job's frozen inputs)."""
        result = self._base(planned)
        manifest = self.installed[planned.package]
        if self._guarded(manifest, planned, inputs, result) or self._hook_refused(
            planned, inputs, result
        ):
            self._finish(result)
            return result
        self._execute(manifest, planned, inputs, result)
        return result

    def _execute(
        self,
        manifest: Manifest,
        planned: PlannedRuntime,
        inputs: dict[str, Any],
        result: RuntimeResult,
    ) -> None:
        """Run a runtime its gates let through, then record its output, export and result."""
        self.emit("runtime.status", {**result.as_dict(), "status": "running"})
        started = time.monotonic()
        try:
            if planned.manifest.is_function:
                self._run_function(manifest, planned, inputs, result)
            else:
                self._run_agent(manifest, planned, inputs, result)
        except Exception as exc:  # a bug in one runtime's wiring must not take the turn down
            log.exception("runtime %s crashed the executor", planned.runtime)
            result.status, result.code, result.reason = FAILED, "internal-error", str(exc)
        result.duration_ms = int((time.monotonic() - started) * 1000)
        hooks.post_runtime(self, planned, result)
        self.overlay.complete(planned.runtime, succeeded=result.status == SUCCEEDED)
        if result.status == SUCCEEDED:
            self.outputs[planned.runtime] = result.output
            record_as = planned.manifest.data.get("io", {}).get("output", {}).get("recordAs")
            if record_as:
                self.exports.append(
                    (planned.package, planned.runtime, str(record_as), result.output)
                )
        self._finish(result)

    def _skip_result(self, skip: Skip, plan: Plan) -> RuntimeResult:
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

    def _base(self, planned: PlannedRuntime) -> RuntimeResult:
        runtime = planned.manifest
        return RuntimeResult(
            runtime=planned.runtime,
            package=planned.package,
            stage=planned.stage,
            kind=runtime.kind,
            activation=planned.activation,
            status="running",
            story=runtime.visibility == "story",
            concealed=bool(runtime.data.get("io", {}).get("concealed", False)),
        )

    def _run_planned(self, plan: Plan, planned: PlannedRuntime) -> None:
        result = self._base(planned)
        skip = plan.gate(planned.runtime, self.statuses())
        if skip is None and planned.runtime in self.unscheduled:
            skip = Skip(
                planned.package,
                planned.runtime,
                planned.stage,
                "hook-unscheduled",
                f"{planned.runtime}: a PreSchedule hook left it out of this turn",
            )
        if skip is not None:
            result.status, result.code, result.reason = SKIPPED, skip.code, skip.reason
            self._finish(result)
            return
        if planned.is_detached:
            # The job runs with the inputs of this turn, frozen now (the turn is gone by then).
            bound, missing = self._inputs(self.installed[planned.package], planned)
            if missing:
                result.status, result.code, result.reason = SKIPPED, "input-missing", missing
                self._finish(result)
                return
            self.job_inputs[planned.runtime] = bound
            self.ledger = record_trigger(self.ledger, planned.runtime, self.logical_turn)
            self.jobs.append(planned)
            result.status, result.code = DEFERRED, "detached"
            result.reason = f"{planned.runtime} runs as a background job after this turn commits"
            self._finish(result)
            return
        manifest = self.installed[planned.package]
        inputs, missing = self._inputs(manifest, planned)
        if missing:
            result.status, result.code, result.reason = SKIPPED, "input-missing", missing
            self._finish(result)
            return
        if self._guarded(manifest, planned, inputs, result) or self._hook_refused(
            planned, inputs, result
        ):
            self._finish(result)
            return
        # A trigger counts when the runtime starts (after its gates let it through).
        self.ledger = record_trigger(self.ledger, planned.runtime, self.logical_turn)
        self._execute(manifest, planned, inputs, result)

    def _guarded(
        self,
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
                callbacks=self._callbacks(planned),
                context=self._context(planned, inputs),
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
        self, planned: PlannedRuntime, inputs: dict[str, Any], result: RuntimeResult
    ) -> bool:
        """A PreRuntime hook's abort skips the runtime (True, result set)."""
        reason = hooks.pre_runtime(self, planned, inputs)
        if reason is None:
            return False
        result.status, result.code, result.reason = SKIPPED, "hook-aborted", reason
        return True

    # -------------------------------------------------------------- inputs

    def _inputs(
        self, manifest: Manifest, planned: PlannedRuntime, *, reader: str | None = None
    ) -> tuple[dict[str, Any], str]:
        """ctx.inputs ({name: {"value": ...}}), or a reason when a required input is missing.

        reader: whose execution reads them (a nested run's owner), planned.runtime by default.
        """
        committed: dict[tuple[str, str], Any] = {}
        for plugin, record_as in committed_sources(
            manifest=manifest, runtime=planned.manifest, active=self.active
        ):
            row = selectors.export_latest(session=self.session, plugin=plugin, record_as=record_as)
            if row is not None:
                committed[(plugin, record_as)] = row.value
        binding = bind_inputs(
            manifest=manifest,
            runtime=planned.manifest,
            active=self.active,
            outputs=self.outputs,
            committed=committed,
            digest={
                "playerMessage": self.request.message,
                "narrativeText": self.narrative_text,
                "actions": list(self.request.actions),
            },
            operations=staged_operations(self.overlay, planned.package),
        )
        for producer in binding.dependencies:
            self.overlay.record_dependency(reader=reader or planned.runtime, source=producer)
        if binding.problem:
            return {}, binding.problem
        return {name: {"value": value} for name, value in binding.values.items()}, ""

    # -------------------------------------------------------------- function runtimes

    def _callbacks(self, planned: PlannedRuntime, frame: _Frame | None = None) -> SessionCallbacks:
        """The callbacks of one run. With a frame, ctx.recursiveCall is served; a nested run
        reads and writes as its owner and its emitted events wait for the owner's success."""

        def emit(topic: str, payload: Mapping[str, Any]) -> None:
            if frame is not None and frame.depth > 0:
                frame.events.append((topic, dict(payload)))
            else:
                self._emitted(planned, topic, payload)

        def recurse(**call: Any) -> dict[str, Any]:
            assert frame is not None
            return self._recurse(frame, **call)

        return SessionCallbacks(
            session=self.session,
            package=planned.package,
            runtime=frame.owner if frame is not None else planned.runtime,
            overlay=self.overlay,
            on_emit=emit,
            manifest=self.installed[planned.package],
            on_recurse=recurse if frame is not None else None,
        )

    def _emitted(self, planned: PlannedRuntime, topic: str, payload: Mapping[str, Any]) -> None:
        self.emitted.append(topic)
        self.trigger_events.setdefault(
            topic,
            {
                "topic": topic,
                "data": dict(payload),
                "payload": dict(payload),
                "source": {"pluginId": planned.package, "runtimeId": planned.runtime},
            },
        )
        self.emit(
            "plugin.event", {"runtime": planned.runtime, "topic": topic, "payload": dict(payload)}
        )

    def _context(self, planned: PlannedRuntime, inputs: dict[str, Any]) -> dict[str, Any]:
        return {
            "sessionId": str(self.session.pk),
            "turnId": str(self.turn.pk),
            "runtimeId": planned.manifest.id,
            "inputs": inputs,
            "playerMessage": self.request.message,
            "playerActions": list(self.request.actions),
            "manualPayload": self.request.manual.get(planned.runtime),
            "world": self.world,
            "userSettings": dict(self._user_settings(planned.package)),
            "locale": self.session.locale,
            # One seed per turn and runtime: a retried turn or job draws the same numbers.
            "seed": f"{self._execution_source()}:{planned.runtime}",
            "logicalTurn": self.logical_turn,
            "turnNumber": self.logical_turn,
            "sourceTurnId": self._source_turn_id(),
            "triggerEvent": self._trigger_event(planned),
        }

    def _trigger_event(self, planned: PlannedRuntime) -> dict[str, Any] | None:
        """ctx.triggerEvent of a runtime the event trigger woke: {topic, data, payload, source}
        of the first emission of its topic this turn; None for any other activation."""
        if planned.activation == "detached":
            return self.request.trigger_event
        if planned.activation != "event":
            return None
        topic = (planned.manifest.schedule.get("trigger") or {}).get("topic")
        return self.trigger_events.get(str(topic)) if topic else None

    def _agent_activation(self, planned: PlannedRuntime) -> dict[str, Any] | None:
        """What an agent woken by an event reads of it (Covel's runtime activation): the
        event's data as payload; detached when the event's job runs it."""
        event = self._trigger_event(planned)
        if event is None:
            return None
        detached = planned.activation == "detached"
        return {"source": "event", "detached": detached, "payload": event.get("data")}

    def _execution_source(self) -> str:
        return self.request.execution_source or str(self.turn.pk)

    def _source_turn_id(self) -> str | None:
        """ctx.execution.sourceTurnId: the turn this run belongs to. A background turn's is its
        source turn; a manual background run has none (its seed still comes from its first
        attempt, see sessions/background.py)."""
        if self.request.kind != Turn.Kind.BACKGROUND:
            return str(self.turn.pk)
        return str(self.turn.source_turn_id) if self.turn.source_turn_id else None

    def _user_settings(self, package_id: str) -> dict[str, Any]:
        """ctx.userSettings of a package, resolved once per turn; no query for a package that
        declares no settings (most of them)."""
        if package_id not in self.user_settings:
            manifest = self.installed.get(package_id)
            declared = manifest is not None and bool(manifest.contributes.get("settings"))
            self.user_settings[package_id] = (
                user_settings_for(package_id=package_id, session=self.session) if declared else {}
            )
        return self.user_settings[package_id]

    def _stage_writes(
        self,
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
        (_stage_tool_proposals).
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
        now = timezone.now().isoformat()
        staged.extend(batch.writes)
        staged.extend(
            lore_writes(self.overlay, runtime=owner, plugin=package, lore=batch.lore, now=now)
        )
        try:
            shared = session_writes(
                self.overlay,
                batch,
                runtime=owner,
                package=package,
                world_characters=list(self.session.world.characters or []),
                turn_id=str(self.turn.pk),
                now=now,
            )
        except ProposalRefused as exc:
            return exc.code, exc.message
        forms, problem = self._checked_forms(self.installed[package], batch.forms)
        if problem:
            return "form-invalid", f"{owner}: a form {problem} [form-invalid]"
        writes = [(package, *w) for w in staged] + shared
        for plugin, namespace, key, ops in writes:
            try:
                self.overlay.stage(
                    runtime=owner, plugin=plugin, namespace=namespace, key=key, ops=ops
                )
            except WriteRefused as exc:
                return "write-refused", str(exc)
        if events is not None:
            events.extend(batch.events)
        self._hold_asks(owner, forms, batch)
        return None

    def _hold_asks(self, owner: str, forms: list[tuple[str, dict[str, Any]]], batch: Any) -> None:
        """Forms, story text and UI blocks of proposals, committed with owner's writes."""
        if forms:
            self.forms.setdefault(owner, []).extend(forms)
        if batch.narrative:
            self.appended.setdefault(owner, []).extend(batch.narrative)
        if batch.blocks:
            self.blocks.setdefault(owner, []).extend(batch.blocks)

    def _stage_tool_proposals(
        self, planned: PlannedRuntime, package: str, proposals: list[dict[str, Any]]
    ) -> str | None:
        """An agent's tool call's proposals: staged as the agent's, or none of them (the
        refusal goes back to the model as the tool's error); their events are sent at once,
        as the agent's other events are."""
        mark = len(self.overlay.writes)
        events: list[tuple[str, dict[str, Any]]] = []
        refused = self._stage_writes(planned.runtime, package, [], proposals, events)
        if refused:
            self.overlay.discard_since(mark)
            return refused[1]
        for topic, payload in events:
            self._emitted(planned, topic, payload)
        return None

    def _check_output(self, manifest: Manifest, planned: PlannedRuntime, output: Any) -> str | None:
        written = planned.manifest.data.get("io", {}).get("output", {}).get("schema")
        if not written:
            return None
        return schema_problem(manifest, planned.manifest, str(written), output, what="output")

    def _take_effects(
        self,
        manifest: Manifest,
        planned: PlannedRuntime,
        effects: Mapping[str, Any],
        *,
        owner: str,
    ) -> tuple[str, str] | None:
        """Hold a function's effects.notifications and effects.interactions for the commit, as
        owner's; (code, reason) when one cannot be shown, which fails the runtime.

        A form is checked against the same schema as create-form, its validation must be listed
        in contributes.forms, and its interactionId must be new in the session.
        """
        from agents.tools import notification_normalise, notification_problem

        where = f"{planned.runtime} (plugin {planned.package})"
        notices = effects.get("notifications") or []
        interactions = effects.get("interactions") or []
        if not isinstance(notices, list) or not isinstance(interactions, list):
            return (
                "effects-invalid",
                f"{where}: effects.notifications and effects.interactions are lists",
            )
        # Covel's {level, title, message} is taken as ours (agents.tools.notification_normalise).
        notices = [notification_normalise(n) for n in notices]
        for index, notice in enumerate(notices):
            problem = notification_problem(notice, base=f"/effects/notifications/{index}")
            if problem:
                return "notification-invalid", f"{where}: a notification {problem}"
        for index, entry in enumerate(interactions):
            base = f"/effects/interactions/{index}"
            if not isinstance(entry, dict) or entry.get("type") != "form":
                return (
                    "form-invalid",
                    f'{where}: an interaction at {base}/type: only type "form" is supported [type]',
                )
        forms, problem = self._checked_forms(
            manifest, [(f"/effects/interactions/{i}", e) for i, e in enumerate(interactions)]
        )
        if problem:
            return "form-invalid", f"{where}: a form {problem}"
        if forms:
            self.forms.setdefault(owner, []).extend(forms)
        if notices:
            self.notifications.setdefault(owner, []).extend(dict(n) for n in notices)
        return None

    def _checked_forms(
        self, manifest: Manifest, entries: list[tuple[str, dict[str, Any]]]
    ) -> tuple[list[tuple[str, dict[str, Any]]], str | None]:
        """Forms (effects.interactions, interaction.request) checked against the create-form
        schema, the package's contributes.forms, and ids already used: (forms, problem)."""
        from agents.tools import form_problem

        taken = {i for forms in self.forms.values() for i, _ in forms}
        forms: list[tuple[str, dict[str, Any]]] = []
        for base, entry in entries:
            problem = form_problem(
                entry,
                validators=manifest.contributes.get("forms") or (),
                interaction=True,
                base=base,
            )
            interaction_id = str(entry["interactionId"]) if not problem else ""
            if not problem and (
                interaction_id in taken
                or selectors.interaction_exists(session=self.session, interaction_id=interaction_id)
            ):
                problem = (
                    f"at {base}/interactionId: {interaction_id!r} is already used in this "
                    "session [uniqueInteractionId]"
                )
            if problem:
                return [], problem
            taken.add(interaction_id)
            asked = {k: v for k, v in entry.items() if k not in ("type", "interactionId")}
            forms.append((interaction_id, form_normalise(asked)))
        return forms, None

    def _run_function(
        self,
        manifest: Manifest,
        planned: PlannedRuntime,
        inputs: dict[str, Any],
        result: RuntimeResult,
    ) -> None:
        context = self._context(planned, inputs)
        frame = _Frame(
            owner=planned.runtime,
            package=planned.package,
            runtime=planned.manifest,
            depth=0,
            seed=context["seed"],
            player_message=self.request.message,
            deadline=time.monotonic() + function_timeout(planned.manifest),
            result=result,
        )
        try:
            answer = plugin_function_call(
                manifest=manifest,
                runtime=planned.manifest.id,
                callbacks=self._callbacks(planned, frame),
                context={**context, "recursionDepth": 0, "nestedCalls": True},
            )
        except PluginHostError as exc:
            result.status, result.code = FAILED, exc.code
            result.reason = f"{planned.runtime}: {exc.message}"
            return
        status, code, reason, output = self._settle_function(manifest, planned, frame, answer)
        result.status, result.code, result.reason = status, code, reason
        if status in (SUCCEEDED, DROPPED):
            result.output = output
        if status == SUCCEEDED:
            # The nested runs' events, held until their owner succeeded.
            for topic, payload in frame.events:
                self._emitted(planned, topic, payload)

    def _settle_function(
        self, manifest: Manifest, planned: PlannedRuntime, frame: _Frame, answer: Any
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
                    self._emitted(planned, topic, payload)
                else:
                    frame.events.append((topic, payload))
        if outcome == "failed":
            reason = str(value.get("error") or f"{planned.runtime} reported failure")
            return FAILED, "runtime-failed", reason, None
        if outcome == "skipped":
            reason = str(value.get("reason") or f"{planned.runtime} skipped itself")
            return SKIPPED, "runtime-skipped", reason, None
        output = value.get("value")
        problem = self._check_output(manifest, planned, output)
        if problem:
            return FAILED, "output-invalid", problem, None
        effects = value.get("effects") if isinstance(value.get("effects"), dict) else {}
        refused = self._take_effects(manifest, planned, effects, owner=frame.owner)
        if refused:
            return FAILED, *refused, None
        try:
            proposals = [
                *answer.proposals,
                *effects_proposals(effects.get("pluginData")),
            ]
        except ProposalRefused as exc:
            return DROPPED, exc.code, exc.message, output
        refused = frame.refused or self._stage_writes(
            frame.owner, planned.package, answer.operations, proposals, frame.events
        )
        if refused:
            return DROPPED, *refused, output
        return SUCCEEDED, "", "", output

    # -------------------------------------------------------------- nested calls

    def _recurse(
        self,
        frame: _Frame,
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
            frame.refused = self._stage_writes(
                frame.owner, frame.package, operations, proposals, frame.events
            )
        if frame.refused:
            raise CallbackRefused(
                f"recursiveCall: a write of {frame.runtime.qualified_id} was refused, so it "
                f"cannot succeed: {frame.refused[1]}",
                code="write_refused",
            )
        manifest = self.installed[frame.package]
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
        limit = _recursion_limit(frame.runtime)
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
        child = _Frame(
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
        held = (self.forms, self.notifications, self.appended, self.blocks)
        marks = (len(self.overlay.writes), *(len(h.get(frame.owner, [])) for h in held))
        answer: dict[str, Any] = {"outcome": "failed", "error": "", "code": "internal-error"}
        try:
            answer = self._run_nested(manifest, child, payload, timeout)
        finally:
            if answer["outcome"] == "success":
                frame.events.extend(child.events)
            else:
                # Not part of the owner's execution after all: its writes and asks go.
                self.overlay.discard_since(marks[0])
                for kept, mark in zip(held, marks[1:], strict=True):
                    del kept.get(frame.owner, [])[mark:]
            trace["outcome"], trace["code"] = answer["outcome"], answer.get("code", "")
            trace["durationMs"] = int((time.monotonic() - started) * 1000)
        return answer

    def _run_nested(
        self, manifest: Manifest, frame: _Frame, payload: Any, timeout: float
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
        inputs, missing = self._inputs(manifest, planned, reader=frame.owner)
        if missing:
            return {"outcome": "failed", "error": missing, "code": "input-missing"}
        context = {
            **self._context(planned, inputs),
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
                callbacks=self._callbacks(planned, frame),
                context=context,
                timeout=timeout,
            )
        except PluginHostError as exc:
            return {
                "outcome": "failed",
                "error": f"{planned.runtime}: {exc.message}",
                "code": exc.code,
            }
        status, code, reason, output = self._settle_function(manifest, planned, frame, answer)
        if status == SUCCEEDED:
            return {"outcome": "success", "value": output}
        if status == SKIPPED:
            return {"outcome": "skipped", "reason": reason, "code": code}
        return {"outcome": "failed", "error": reason, "code": code}

    # -------------------------------------------------------------- agent runtimes

    def _run_agent(
        self,
        manifest: Manifest,
        planned: PlannedRuntime,
        inputs: dict[str, Any],
        result: RuntimeResult,
    ) -> None:
        """Through agents.runtime (the Agent runtimes issue): slot, prompt, tools, output checks.

        Writes (tool proposals, dataset tools, write services) are staged in the turn's overlay
        as the run goes; a failed run is marked failed, which throws them away.
        """
        from agents.runtime import AgentRuntimeContext, OverlayData, run_agent_runtime
        from agents.tools import event_directory, service_providers

        runtime = planned.manifest
        user_settings = user_settings_for(package_id=planned.package, session=self.session)
        stream = _StoryStream(self, planned) if runtime.visibility == "story" else None
        bounds = (runtime.data.get("agent") or {}).get("history") or {}  # none: the whole game
        history, compacted = self._agent_history(planned, bounds.get("maxTurns"), result)
        context = AgentRuntimeContext(
            data=OverlayData(overlay=self.overlay, runtime=planned.runtime),
            callbacks_for=lambda plugin: SessionCallbacks(
                session=self.session,
                package=plugin,
                runtime=planned.runtime,
                overlay=self.overlay,
                on_emit=lambda topic, payload: self._emitted(planned, topic, payload),
                manifest=self.installed.get(plugin),
            ),
            session_id=str(self.session.pk),
            turn_id=str(self.turn.pk),
            player_message=self.request.message,
            story_text=self.narrative_text or None,
            history=history,
            history_windowed=True,
            compacted=compacted,
            segments=self._extension_segments(planned, result),
            inputs={name: bound["value"] for name, bound in inputs.items()},
            payload=self.request.manual.get(planned.runtime),
            activation=self._agent_activation(planned),
            variables={"world": self.world, "settings": user_settings},
            user_settings=user_settings,
            world=self.world,
            locale=self.session.locale,
            seed=f"{self._execution_source()}:{planned.runtime}",
            events=event_directory(self.active),
            services=service_providers(self.active),
            emit=lambda topic, payload: self._emitted(planned, topic, payload),
            stage_proposals=lambda plugin, proposals: self._stage_tool_proposals(
                planned, plugin, list(proposals)
            ),
            on_text=stream.add if stream is not None else None,
            tool_context={"turnNumber": self.logical_turn},
            proposal_ops=proposal_ops,
            hooks=hooks.agent_hooks(self, planned),
        )
        run = run_agent_runtime(manifest=manifest, runtime=runtime, context=context)
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
            self.forms.setdefault(planned.runtime, []).append(
                (str(form["id"]), form_normalise(asked))
            )
        for notice in run.notifications:
            self.notifications.setdefault(planned.runtime, []).append(
                {k: notice[k] for k in ("title", "body", "level") if k in notice}
            )

    # -------------------------------------------------------------- extension points

    def _extension_failed(self, failures: list[dict[str, Any]], result: RuntimeResult) -> None:
        """A failing provider is skipped (Covel's onError "skip"), never silently: the runtime's
        warnings and an extension.failed event say which one and why."""
        for failure in failures:
            result.warnings.append(
                f"{failure['point']} {failure['plugin']}/{failure['extension']} was skipped "
                f"[{failure['code']}]: {failure['message']}"
            )
            payload = {**failure, "runtime": result.runtime}
            self.emit(
                "extension.failed",
                {**payload, "notice": selectors.problem_notice("extension.failed", payload)},
            )

    def _extension_segments(
        self, planned: PlannedRuntime, result: RuntimeResult
    ) -> list[dict[str, Any]]:
        """prompt.segment@1: collected once a turn, then chosen by each runtime's audience."""
        from sessions import extensions

        if self._segments is None:
            failures: list[dict[str, Any]] = []
            self._segments = extensions.static_segments(self.active) + extensions.prompt_segments(
                session=self.session,
                active=self.active,
                turn_id=str(self.turn.pk),
                player_message=self.request.message,
                world=self.world,
                failures=failures,
            )
            self._extension_failed(failures, result)
        output = (planned.manifest.data.get("io") or {}).get("output") or {}
        return extensions.segments_for(
            self._segments,
            package=planned.package,
            story=planned.manifest.visibility == "story",
            contract=output.get("contract"),
        )

    def _agent_history(
        self, planned: PlannedRuntime, max_turns: int | None, result: RuntimeResult
    ) -> tuple[list[Any], str | None]:
        """The agent's history, and the compacted summaries that stand for its oldest part.

        With no history.compact@2 or prompt.history-transform@1 provider and no summary saved,
        this is _history's one query; otherwise the whole log goes through the points
        (compaction once a turn), then agent.history bounds it.
        """
        from agents.prompt import Turn as PromptTurn
        from sessions import extensions

        if self._extended_history is None:
            self._extended_history = extensions.history_extended(
                session=self.session, active=self.active
            )
        if not self._extended_history or max_turns == 0:
            return self._history(max_turns=max_turns), None
        failures: list[dict[str, Any]] = []
        turns, compacted = extensions.agent_history(
            session=self.session,
            active=self.active,
            rows=Turn.objects.filter(
                session_id=self.session.pk, kind=Turn.Kind.PLAYER, status=Turn.Status.COMMITTED
            )
            .order_by("created_at")
            .values_list("pk", "player_message", "narrative_text", "created_at"),
            system_prompt=planned.manifest.prompt,
            turn_id=str(self.turn.pk),
            compact=not self._compacted,
            failures=failures,
            gate=lambda count: hooks.compaction_allowed(self, count),
            observe=lambda done, ids: hooks.compaction_observed(self, done, ids),
        )
        self._compacted = True
        self._extension_failed(failures, result)
        history = [PromptTurn(messages=tuple(t)) for t in turns]
        if max_turns is not None:
            max_turns = hooks.history_window(self, len(history), max_turns)
        return (history[-max_turns:] if max_turns is not None else history), compacted

    def _history(self, *, max_turns: int | None = None) -> list[Any]:
        """The session's committed player turns, oldest first, as the prompt's history.

        Without agent.history (max_turns None) that is the whole game; one query either way.
        """
        from agents.prompt import Turn as PromptTurn

        if max_turns == 0:
            return []
        query = (
            Turn.objects.filter(
                session_id=self.session.pk, kind=Turn.Kind.PLAYER, status=Turn.Status.COMMITTED
            )
            .order_by("-created_at")
            .values_list("player_message", "narrative_text")
        )
        if max_turns is not None and (
            self.hooks.wants("PreCompaction") or self.hooks.wants("PostCompaction")
        ):
            max_turns = hooks.history_window(self, query.count(), max_turns)
        rows = list(query if max_turns is None else query[:max_turns])
        rows.reverse()
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

    # -------------------------------------------------------------- the story

    def _take_narrative(self) -> None:
        for rid in self.order:
            result = self.results[rid]
            if result.status not in (SUCCEEDED, DROPPED) or not result.story:
                continue
            output = result.output
            text = output.get("narrativeOutput") if isinstance(output, dict) else output
            if isinstance(text, str) and text and text != self.narrative_text:
                self.narrative_text, self.narrative_source = text, rid
                self.emit("narrative", {"runtime": rid, "text": text})
                return

    # -------------------------------------------------------------- commit

    def commit(self, *, session_locked: bool = False) -> dict[str, Any]:
        """One transaction: plugin data, exports, ledger, versions, the turn row, jobs, events.

        session_locked: the caller's transaction already holds the session row lock (a job's
        commit), so the session read when the turn started stands in for a locked re-read.
        """
        hooks.pre_state_commit(self)
        committed_sources = hooks.state_commit_sources(self)
        story = [rid for rid, r in self.results.items() if r.story]
        # No savepoint inside a caller's transaction (a job's commit): a failure here rolls
        # that whole transaction back anyway.
        with transaction.atomic(savepoint=False):
            if session_locked:
                session = self.session
            else:
                # NO KEY UPDATE, the mode every session-row lock here takes (event appends
                # included): it leaves other transactions' foreign-key checks free, so none can
                # deadlock on it.
                session = Session.objects.select_for_update(no_key=True).get(pk=self.session.pk)
            # A background commit holds the row lock only: it never waits for a player's turn,
            # and a stored value it moves is exactly what that turn's commit re-checks.
            if self.token is not None and session.lock_token != self.token:
                raise LeaseLost("this turn lost the session lock before it could commit")

            def latest(plugin: str, namespace: str, key: str) -> Any:
                return self._load_stored(plugin, namespace, key)

            outcome = self.overlay.commit(load_latest=latest, story=story)
            for dropped in outcome.dropped:
                result = self.results.get(dropped.runtime)
                if result is not None and not result.story:
                    result.status, result.code, result.reason = (
                        DROPPED,
                        dropped.code,
                        dropped.message,
                    )
                elif result is not None:
                    # The story stays (it already reached the player); only its writes are lost.
                    result.reason = f"its writes were not saved: {dropped.message}"
            changes = []
            for (plugin, namespace, key), value in outcome.values.items():
                if value is MISSING:
                    PluginData.objects.filter(
                        session=session, plugin_id=plugin, namespace=namespace, key=key
                    ).delete()
                else:
                    PluginData.objects.update_or_create(
                        session=session,
                        plugin_id=plugin,
                        namespace=namespace,
                        key=key,
                        defaults={"value": value},
                    )
                changes.append(
                    {
                        "plugin": plugin,
                        "namespace": namespace,
                        "key": key,
                        "deleted": value is MISSING,
                    }
                )
            kept = set(outcome.kept)
            for plugin, runtime, record_as, value in self.exports:
                if runtime in kept and self.results[runtime].status == SUCCEEDED:
                    RecordedExport.objects.create(
                        session=session,
                        plugin_id=plugin,
                        runtime_id=runtime,
                        record_as=record_as,
                        value=value,
                        turn=self.turn,
                    )
            job_ids = self._enqueue_jobs(session)
            versions = dict(session.package_versions or {})
            setup_versions = dict(session.setup_versions or {})
            failed_setup = {
                r.package
                for r in self.results.values()
                if r.stage == "setup" and r.status != SUCCEEDED
            }
            for manifest in self.active:
                versions[manifest.id] = manifest.version
                if manifest.id not in failed_setup:
                    setup_versions[manifest.id] = manifest.version
            update: dict[str, Any] = {}
            if self.request.kind != Turn.Kind.BACKGROUND:
                update = {
                    "trigger_ledger": self.ledger,
                    "package_versions": versions,
                    "setup_versions": setup_versions,
                }
            if self.request.kind == Turn.Kind.PLAYER:
                update["turn_count"] = self.logical_turn
                if session.phase == Session.Phase.SETUP:
                    # The first committed player turn ends the setup phase (setup runtimes ran on it).
                    update["phase"] = Session.Phase.PLAYING
            if update:
                Session.objects.filter(pk=session.pk).update(**update)
            for key, value in update.items():
                setattr(self.session, key, value)
            commit_info = {
                "written": [
                    {k: c[k] for k in ("plugin", "namespace", "key", "deleted")} for c in changes
                ],
                "refusals": [r.as_dict() for r in outcome.refusals],
                "dropped": [
                    {"runtime": d.runtime, "code": d.code, "message": d.message}
                    for d in outcome.dropped
                ],
                "jobs": job_ids,
                "settle": self.request.settle,
                "hooks": self.hooks.log,
            }
            told = self._told(kept)
            commit_info["narrative"] = [
                {"runtime": rid, **segment} for rid, segment in told if rid != self.narrative_source
            ]
            story_text = "\n\n".join(
                segment["content"] for _, segment in told if segment["content"]
            )
            self.turn.status = Turn.Status.COMMITTED
            self.turn.narrative_text = story_text
            self.turn.blocks = self._kept_blocks(kept)
            self.turn.results = [self.results[r].as_dict() for r in self.order]
            self.turn.commit = commit_info
            self.turn.finished_at = timezone.now()
            if self.turn._state.adding:
                insert(self.turn)  # a background turn's row is new: one plain INSERT
            else:
                self.turn.save()
            if changes:
                event_append(
                    session_id=session.pk,
                    type="plugin-data.changed",
                    payload={"turnId": str(self.turn.pk), "changes": changes},
                )
            for dropped in outcome.dropped:
                self.emit("runtime.status", self.results[dropped.runtime].as_dict())
            self._release_events()
            if story_text != self.narrative_text:
                self.narrative_text = story_text
                self.emit("narrative", {"runtime": self.narrative_source, "text": story_text})
            for block in self.turn.blocks:
                self.emit("ui.rendered", {"block": block})
            self._commit_asks(session, kept)
        hooks.post_state_commit(self, committed_sources, kept)
        return commit_info

    def _told(self, kept: set[str]) -> list[tuple[str, dict[str, Any]]]:
        """The turn's story, in Covel's order: each runtime's text as it finished, the story
        runtime's narrativeOutput at its place, then the narrative.append proposals of the
        runtimes that succeeded and kept their writes."""
        told: list[tuple[str, dict[str, Any]]] = []
        if self.narrative_text and self.narrative_source not in self.order:
            told.append(("", {"content": self.narrative_text, "kind": "story"}))
        for rid in self.order:
            if rid == self.narrative_source and self.narrative_text:
                told.append((rid, {"content": self.narrative_text, "kind": "story"}))
            if rid in kept and self.results[rid].status == SUCCEEDED:
                told.extend((rid, dict(segment)) for segment in self.appended.get(rid, []))
        return told

    def _kept_blocks(self, kept: set[str]) -> list[dict[str, Any]]:
        """The ui.render blocks of the runtimes that succeeded and kept their writes, as
        Covel's message blocks: {id, type, data, meta: {pluginId, runtimeId, turnId}}."""
        blocks = []
        for rid in self.order:
            result = self.results[rid]
            if rid not in kept or result.status != SUCCEEDED:
                continue
            for block in self.blocks.get(rid, []):
                meta = {"pluginId": result.package, "runtimeId": rid, "turnId": str(self.turn.pk)}
                blocks.append(
                    {"id": block["id"], "type": "ui.render", "data": block["data"], "meta": meta}
                )
        return blocks

    def record_hooks(self) -> None:
        """Save the hook log again (a PostStateCommit hook failed after the turn row was saved)."""
        Turn.objects.filter(pk=self.turn.pk).update(commit=self.turn.commit)

    def _commit_asks(self, session: Session, kept: set[str]) -> None:
        """The forms and notifications of the runtimes that succeeded and kept their writes."""
        for rid in self.order:
            result = self.results[rid]
            if rid not in kept or result.status != SUCCEEDED:
                continue
            for interaction_id, form in self.forms.get(rid, []):
                Interaction.objects.create(
                    session=session,
                    source_turn=self.turn,
                    plugin_id=result.package,
                    runtime_id=rid,
                    interaction_id=interaction_id,
                    form=form,
                )
                self.emit(
                    "interaction.created",
                    {
                        "interactionId": interaction_id,
                        "kind": Interaction.Kind.FORM,
                        "pluginId": result.package,
                        "runtimeId": rid,
                        "form": form,
                    },
                )
            for notice in self.notifications.get(rid, []):
                self.emit(
                    "notification.created",
                    {
                        "pluginId": result.package,
                        "runtimeId": rid,
                        "title": notice["title"],
                        "body": notice.get("body", ""),
                        "level": notice.get("level", "info"),
                    },
                )

    def _enqueue_jobs(self, session: Session) -> list[str]:
        if not self.jobs:
            return []
        try:
            from jobs.services import job_defer
        except ImportError:
            return []
        ids = []
        for planned in self.jobs:
            job = job_defer(
                session_id=session.pk,
                plugin_id=planned.package,
                runtime_id=planned.runtime,
                source_turn=str(self.turn.pk),
                inputs={
                    "inputs": self.job_inputs.get(planned.runtime, {}),
                    "playerMessage": self.request.message,
                    "playerActions": list(self.request.actions),
                    **(
                        {"triggerEvent": self._trigger_event(planned)}
                        if planned.activation == "event"
                        else {}
                    ),
                },
                detached=thaw(planned.detached),
                package_version=self.installed[planned.package].version,
            )
            self.results[planned.runtime].job_id = str(job.job_id)
            ids.append(str(job.job_id))
        return ids

    def summary(self) -> dict[str, Any]:
        return {
            "turnId": str(self.turn.pk),
            "number": self.turn.number,
            "kind": self.turn.kind,
            "status": self.turn.status,
            "narrativeText": self.narrative_text,
            "runtimes": [self.results[r].as_dict() for r in self.order],
            "commit": self.turn.commit,
            "blocks": list(self.turn.blocks or []),
            "hooks": list(self.hooks.log),
        }


class _StoryStream:
    """A story agent's streamed text as `narrative.delta` events, at most one per interval.

    Each event is one database row, so chunks are batched: the page still sees the story grow.
    """

    INTERVAL = 0.25

    def __init__(self, executor: TurnExecutor, planned: PlannedRuntime) -> None:
        self.executor = executor
        self.planned = planned
        self.buffer: list[str] = []
        self.last = time.monotonic()

    def add(self, text: str) -> None:
        self.buffer.append(text)
        if time.monotonic() - self.last >= self.INTERVAL:
            self.flush()

    def flush(self) -> None:
        if self.buffer:
            self.executor.emit(
                "narrative.delta", {"runtime": self.planned.runtime, "text": "".join(self.buffer)}
            )
            self.buffer = []
        self.last = time.monotonic()


def _recursion_limit(runtime: RuntimeManifest) -> int:
    """How deep ctx.recursiveCall may nest below runtime: its agent.loop.maxRecursionDepth (the
    normalised manifest writes the default in); a function runtime has no loop section, so the
    spec's default applies."""
    if runtime.is_function:
        return DEFAULT_MAX_RECURSION_DEPTH
    loop = (runtime.data.get("agent") or {}).get("loop") or {}
    return int(loop.get("maxRecursionDepth", DEFAULT_MAX_RECURSION_DEPTH))


# ------------------------------------------------------------------ the service


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
    if token is None:
        if request.kind != Turn.Kind.BACKGROUND:
            request.settle = services.session_settle(session_id=session.pk)
        token = session_lock_acquire(session_id=session.pk, wait=wait)
    try:
        return _turn_locked(session=session, request=request, token=token)
    finally:
        session_lock_release(session_id=session.pk, token=token)


def _turn_locked(*, session: Session, request: TurnRequest, token: str) -> dict[str, Any]:
    session.refresh_from_db()
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
    executor = TurnExecutor(
        session=session,
        turn=turn,
        resolution=resolution,
        installed=installed,
        request=request,
        token=token,
    )
    if request.manual:
        plan = executor.plan()
        for runtime in request.manual:
            if runtime in plan.by_id:
                continue
            why = next((d for d in [*plan.dormant, *plan.skipped] if d.runtime == runtime), None)
            raise SessionProblem(
                why.reason if why else f"{runtime} is not active in this session",
                code=why.code if why else "runtime_not_active",
            )
    turn.save(force_insert=True)
    executor.emit(
        "turn.started",
        {
            "number": number,
            "kind": request.kind,
            "playerMessage": request.message,
            "active": list(resolution.active),
        },
    )
    started = time.monotonic()
    aborted = hooks.turn_start(executor)
    if aborted is not None:
        return _turn_aborted(executor, aborted)
    try:
        executor.run()
        hooks.turn_stop(executor, started)
        executor.commit()
    except Exception as exc:
        log.exception("turn %s of session %s failed", turn.pk, session.pk)
        Turn.objects.filter(pk=turn.pk).update(
            status=Turn.Status.FAILED,
            error=str(exc),
            finished_at=timezone.now(),
            results=[executor.results[r].as_dict() for r in executor.order],
        )
        turn.status = Turn.Status.FAILED
        executor.emit("turn.failed", {"error": str(exc)})
        raise
    summary = executor.summary()
    executor.emit("turn.committed", summary)
    return summary


def _turn_aborted(executor: TurnExecutor, reason: str) -> dict[str, Any]:
    """A TurnStart hook vetoed the turn (Covel: no runtime runs, the result carries the reason).
    Nothing is committed; the turn row says failed, with the reason as its error."""
    turn = executor.turn
    turn.status, turn.error, turn.finished_at = Turn.Status.FAILED, reason, timezone.now()
    turn.commit = {"hooks": executor.hooks.log}
    Turn.objects.filter(pk=turn.pk).update(
        status=turn.status, error=reason, finished_at=turn.finished_at, commit=turn.commit
    )
    executor.emit("turn.failed", {"error": reason, "abortReason": reason})
    return {**executor.summary(), "abortReason": reason}
