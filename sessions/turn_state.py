"""What flows through a turn: the request, each runtime's result, and the turn's own state.

TurnState is the one record a turn's steps share (sessions/turns.py shows them in order): what
the turn was asked, the plan's outcome so far (results in finishing order, outputs, the trigger
ledger), the overlay of staged writes, and what the runtimes asked to show. Each step module
reads what it needs from it and adds what it made; none keeps state of its own. The lifecycle
hooks (sessions/hooks.py) read the same record (its `hooks`, `request`, `active`, `results`,
`order`, `overlay`, `turn`, `emit` and `record_hooks`).
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from catalogue.manifest.types import Manifest, RuntimeManifest
from sessions.models import Session, Turn
from sessions.operations import TurnOverlay, datasets_of
from sessions.planner import PlannedRuntime
from sessions.resolver import Resolution
from sessions.turn_store import DatabaseStore, TurnStore

SUCCEEDED = "succeeded"
FAILED = "failed"
SKIPPED = "skipped"
DROPPED = "dropped"
DEFERRED = "deferred"
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


def result_for(planned: PlannedRuntime) -> RuntimeResult:
    """A planned runtime's result before it runs."""
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


@dataclass
class Frame:
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
class Asks:
    """What runtimes asked to show the player, per owning runtime: committed only if the
    runtime succeeds and keeps its writes. forms: runtime -> [(interactionId, form)];
    appended and blocks hold narrative.append and ui.render proposals."""

    forms: dict[str, list[tuple[str, dict[str, Any]]]] = field(default_factory=dict)
    notifications: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    appended: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    blocks: dict[str, list[dict[str, Any]]] = field(default_factory=dict)

    def kinds(self) -> tuple[dict[str, list[Any]], ...]:
        return (self.forms, self.notifications, self.appended, self.blocks)


class TurnState:
    """The record one turn's steps share (see the module's docstring)."""

    def __init__(
        self,
        *,
        session: Session,
        turn: Turn,
        resolution: Resolution,
        installed: Mapping[str, Manifest],
        request: TurnRequest,
        token: str | None,
        store: TurnStore | None = None,
    ) -> None:
        self.session = session
        # Where the turn reads and writes: the session's rows unless told otherwise (the
        # offline runtime cases run the same steps over sessions.memory_store).
        self.store: TurnStore = store if store is not None else DatabaseStore(session)
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
        self.narrative_source: str | None = None  # the story runtime narrative_text came from
        self.overlay = TurnOverlay(
            load=self.stored,
            datasets={m.id: datasets_of(m) for m in self.active},
            lister=self.stored_list,
            usage=self.store.plugin_data_usage,
        )
        self.exports: list[tuple[str, str, str, Any]] = []  # (plugin, runtime, recordAs, value)
        self.asks = Asks()
        self.jobs: list[PlannedRuntime] = []  # detached runtimes, deferred by the commit
        self.job_inputs: dict[str, dict[str, Any]] = {}
        self.world = self.store.world()
        self.user_settings: dict[str, dict[str, Any]] = {}
        # Extension points (sessions.extensions): segments collected and compaction asked
        # once a turn; whether the agent history goes through them at all.
        self.segments: list[dict[str, Any]] | None = None
        self.compacted = False
        self.extended_history: bool | None = None
        # A background turn (a detached job) holds its events until its commit: a job that times
        # out, is cancelled or goes stale announces nothing it never saved (its
        # job-status.updated events tell what became of it).
        self.held_events: list[tuple[str, dict[str, Any]]] | None = (
            [] if request.kind == Turn.Kind.BACKGROUND else None
        )
        # Lifecycle hooks of the active packages (sessions/hooks.py); its log is the turn's
        # record of hook aborts and failures.
        self.hooks = self.store.hook_dispatcher(
            manifests=self.active,
            turn_id=str(turn.pk),
            emit=self.emit,
            settings_for=self.settings_of,
        )
        self.unscheduled: set[str] = set()  # runtimes a PreSchedule hook left out
        # The events emitted so far: {topic, data, source}, the first of each topic is what an
        # event-triggered runtime gets as ctx.triggerEvent (Covel: first emission wins).
        self.trigger_events: dict[str, dict[str, Any]] = {}
        # Whether the commit told turn.committed with its own events (sessions/turn_commit.py).
        self.committed_told = False
        # Set by the turn's runner: the commit may free the lease (turn_commit), and did.
        self.release_with_commit = False
        self.lease_released = False

    # -------------------------------------------------------------- stored data

    def stored(self, plugin: str, namespace: str, key: str) -> Any:
        return self.store.stored(plugin, namespace, key)

    def stored_list(self, plugin: str, namespace: str) -> dict[str, Any]:
        return self.store.stored_list(plugin, namespace)

    def settings_of(self, package_id: str) -> dict[str, Any]:
        """ctx.userSettings of a package, resolved once per turn; no query for a package that
        declares no settings (most of them)."""
        if package_id not in self.user_settings:
            manifest = self.installed.get(package_id)
            declared = manifest is not None and bool(manifest.contributes.get("settings"))
            self.user_settings[package_id] = (
                self.store.user_settings(package_id, manifest) if declared else {}
            )
        return self.user_settings[package_id]

    # -------------------------------------------------------------- events and results

    def emit(self, type: str, payload: Mapping[str, Any]) -> None:
        event = {"turnId": str(self.turn.pk), **payload}
        if self.held_events is None:
            self.store.append_event(type, event)
        elif not (type == "runtime.status" and payload.get("status") == "running"):
            self.held_events.append((type, event))  # "running" is moot by the commit

    def release_events(self) -> None:
        """Write the held events (inside the commit); later ones go straight to the stream."""
        held, self.held_events = self.held_events, None
        for type, event in held or []:
            self.store.append_event(type, event)

    def plugin_event(self, planned: PlannedRuntime, topic: str, payload: Mapping[str, Any]) -> None:
        """A runtime emitted an event: it may wake event-triggered runtimes later this turn."""
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

    def finish(self, result: RuntimeResult) -> None:
        self.results[result.runtime] = result
        if result.runtime not in self.order:
            self.order.append(result.runtime)
        self.emit("runtime.status", result.as_dict())
        if self.token is not None:
            self.store.lease_renew(self.token)

    def statuses(self) -> dict[str, str]:
        return {rid: r.status for rid, r in self.results.items()}

    def record_hooks(self) -> None:
        """Save the hook log again (a PostStateCommit hook failed after the turn row was saved)."""
        self.store.hooks_record(self.turn)

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
