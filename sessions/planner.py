"""The turn plan: which runtimes run, in which stage and level, and what gates them.

Input: the active manifests (in resolution order) and the turn context. Output: a Plan whose stages
come in the fixed order setup, pre-turn, narrative, post-turn, audit (and "manual" for activated
runtimes without a stage); each stage holds levels of runtimes that may run concurrently. Plain
Python; see docs/sessions.md for the rules.
"""

from __future__ import annotations

from collections.abc import Collection, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from types import MappingProxyType
from typing import Any

from catalogue.manifest.types import Manifest, RuntimeManifest
from sessions.triggers import should_trigger

STAGES = ("setup", "pre-turn", "narrative", "post-turn", "audit")
MANUAL_STAGE = "manual"  # activated runtimes that declare no stage run on their own, after audit
SUCCEEDED = "succeeded"

DEPENDENCY_CYCLE = "dependency-cycle"
DEPENDENCY_DETACHED = "dependency-detached"
UPSTREAM_FAILED = "upstream-not-succeeded"
INPUT_MISSING = "input-missing"


@dataclass(frozen=True)
class Gate:
    """An upstream that must succeed before the runtime may start."""

    upstream: str  # qualified runtime ID
    kind: str  # "needs" or "input"
    name: str = ""  # the input's local name for kind "input"
    scope: str = "turn"  # needs scope: turn or session


@dataclass(frozen=True)
class PlannedRuntime:
    package: str
    runtime: str  # qualified ID
    stage: str
    activation: str  # auto, manual, event, setup, form-answer
    reason: str
    manifest: RuntimeManifest
    detached: Mapping[str, Any] | None = None
    gates: tuple[Gate, ...] = ()
    upstream: tuple[str, ...] = ()  # every runtime this one is ordered after (same stage)

    @property
    def is_detached(self) -> bool:
        return self.detached is not None


@dataclass(frozen=True)
class Skip:
    package: str
    runtime: str
    stage: str
    code: str
    reason: str


@dataclass(frozen=True)
class StagePlan:
    stage: str
    levels: tuple[tuple[PlannedRuntime, ...], ...]

    def runtimes(self) -> Iterator[PlannedRuntime]:
        for level in self.levels:
            yield from level


@dataclass(frozen=True)
class Plan:
    stages: tuple[StagePlan, ...]
    skipped: tuple[Skip, ...] = ()  # triggered but cannot run (cycle, detached dependency)
    dormant: tuple[Skip, ...] = ()  # not triggered this turn, or never scheduled (sub-agents)
    by_id: Mapping[str, PlannedRuntime] = field(default_factory=dict)

    def order(self) -> list[str]:
        return [p.runtime for s in self.stages for p in s.runtimes()]

    def inline(self) -> list[PlannedRuntime]:
        """The runtimes the turn waits for, in plan order."""
        return [p for s in self.stages for p in s.runtimes() if not p.is_detached]

    def jobs(self) -> list[PlannedRuntime]:
        """Detached runtimes: they become background jobs after the turn commits."""
        return [p for s in self.stages for p in s.runtimes() if p.is_detached]

    def gate(
        self,
        runtime: str,
        statuses: Mapping[str, str],
        *,
        session_succeeded: Collection[str] = (),
    ) -> Skip | None:
        """Why runtime must be skipped now, given the statuses of runtimes run so far (None: go).

        statuses maps a qualified runtime ID to its status this turn ("succeeded", "failed",
        "skipped", ...); an upstream absent from it did not run. session_succeeded lists the
        runtimes whose setup snapshot succeeded, for needs with scope: session.
        """
        planned = self.by_id[runtime]
        for gate in planned.gates:
            status = statuses.get(gate.upstream)
            if status == SUCCEEDED:
                continue
            if gate.scope == "session" and gate.upstream in set(session_succeeded):
                continue
            state = "did not run" if status is None else f"ended {status}"
            what = (
                f"needs {gate.upstream}"
                if gate.kind == "needs"
                else f"requires input {gate.name} from {gate.upstream}"
            )
            return Skip(
                planned.package,
                runtime,
                planned.stage,
                UPSTREAM_FAILED,
                f"{runtime} {what}, which {state}",
            )
        return None


def _job_options(runtime: RuntimeManifest, stage: str, activation: str) -> Mapping[str, Any] | None:
    """The job options when this activation runs as a background job, else None.

    `detached` applies to post-turn and audit runtimes; `background: true` makes a manual or
    event activation a job too (with the default options): its caller gets the job id at once.
    """
    if stage in ("post-turn", "audit") and runtime.detached is not None:
        return runtime.detached
    if activation in ("manual", "event") and runtime.schedule.get("background") is True:
        return MappingProxyType({})
    return None


def _stage_of(runtime: RuntimeManifest, activation: str) -> str | None:
    stage = runtime.stage
    if stage is None and activation in ("manual", "event"):
        return MANUAL_STAGE
    return stage


def _contract_runtimes(manifests: Sequence[Manifest]) -> dict[str, list[tuple[str, str]]]:
    """Contract -> [(package, qualified runtime)] of the runtimes whose output publishes it."""
    found: dict[str, list[tuple[str, str]]] = {}
    for manifest in manifests:
        for runtime in manifest.runtimes:
            contract = runtime.data.get("io", {}).get("output", {}).get("contract")
            if isinstance(contract, str):
                found.setdefault(contract, []).append((manifest.id, runtime.qualified_id))
    return found


def _refs(
    manifest: Manifest, runtime: RuntimeManifest, by_contract: Mapping[str, list[tuple[str, str]]]
) -> list[tuple[str, str, str, str]]:
    """(upstream qualified id, kind, name, scope) for each runtime or contract reference of runtime.

    kind is needs, after, input or optional-input; contract references become the active provider
    runtimes (the first one for cardinality one, every one for all).
    """
    out: list[tuple[str, str, str, str]] = []

    def resolve(ref: Any) -> list[str]:
        if isinstance(ref, str):
            ref = {"contract": ref} if "@" in ref else {"runtime": ref}
        if not hasattr(ref, "get"):
            return []
        if isinstance(ref.get("runtime"), str):
            target = manifest.runtime(ref["runtime"])
            return [target.qualified_id] if target else []
        if isinstance(ref.get("contract"), str):
            providers = [
                rid
                for _pkg, rid in by_contract.get(ref["contract"], [])
                if rid != runtime.qualified_id
            ]
            if ref.get("cardinality", "one") == "one":
                return providers[:1]
            return providers
        return []

    schedule = runtime.schedule
    for key in ("needs", "after"):
        for ref in schedule.get(key, ()):
            scope = ref.get("scope", "turn") if hasattr(ref, "get") else "turn"
            for upstream in resolve(ref):
                out.append((upstream, key, "", scope))
    for name, binding in runtime.data.get("io", {}).get("inputs", {}).items():
        source = binding.get("from", {})
        if "kernel" in source or binding.get("scope", "turn") == "committed":
            continue  # kernel inputs and committed exports set no order within the turn
        kind = "input" if binding.get("required", True) else "optional-input"
        upstreams = resolve(source)
        if not upstreams and kind == "input" and isinstance(source.get("contract"), str):
            # A required input no active runtime produces: the planner decides whether it is missing.
            out.append(("", "missing-input", name, source["contract"]))
        for upstream in upstreams:
            out.append((upstream, kind, name, "turn"))
    return out


def _sccs(nodes: Sequence[str], edges: Mapping[str, Sequence[str]]) -> list[list[str]]:
    """Strongly connected components (Tarjan, iterative), deterministic for ordered input."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    on_stack: set[str] = set()
    stack: list[str] = []
    result: list[list[str]] = []
    counter = 0
    for root in nodes:
        if root in index:
            continue
        work: list[tuple[str, int]] = [(root, 0)]
        while work:
            node, i = work.pop()
            if i == 0:
                index[node] = low[node] = counter
                counter += 1
                stack.append(node)
                on_stack.add(node)
            targets = edges.get(node, [])
            if i < len(targets):
                work.append((node, i + 1))
                target = targets[i]
                if target not in index:
                    work.append((target, 0))
                elif target in on_stack:
                    low[node] = min(low[node], index[target])
                continue
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                result.append(component)
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[node])
    return result


def plan_turn(
    *,
    manifests: Sequence[Manifest],
    phase: str,
    turn: int,
    ledger: Mapping[str, Any] | None = None,
    emitted_topics: Collection[str] = (),
    manual: Collection[str] = (),
    recorded_versions: Mapping[str, str] | None = None,
    include_auto: bool = True,
    answering: str = "",
) -> Plan:
    """The ordered plan of one turn.

    phase: "setup" or "playing". manual: qualified IDs of runtimes activated by hand.
    recorded_versions: package -> version whose setup runtimes already ran for this session.
    include_auto: False plans only manual and event activations (a manual run outside a turn).
    answering: the qualified ID of the runtime whose form this turn answers. A setup runtime
    that already ran still runs on that turn, so the answer reaches the code that asked for it.
    """
    recorded = dict(recorded_versions or {})
    manual_set = set(manual)
    by_contract = _contract_runtimes(manifests)
    position = {m.id: i for i, m in enumerate(manifests)}
    scheduled: dict[str, PlannedRuntime] = {}
    dormant: list[Skip] = []
    refs: dict[str, list[tuple[str, str, str, str]]] = {}

    for manifest in manifests:
        for runtime in manifest.runtimes:
            rid = runtime.qualified_id
            schedule = runtime.schedule
            if schedule.get("subagentOnly") is True:
                dormant.append(
                    Skip(
                        manifest.id,
                        rid,
                        "",
                        "subagent-only",
                        f"{rid} is a sub-agent; the scheduler never runs it",
                    )
                )
                continue
            kind = schedule.get("trigger", {}).get("type", "auto")
            if kind == "auto" and not include_auto:
                continue
            answered = bool(answering) and rid == answering
            if runtime.stage == "setup" and not answered:
                if phase != "setup" and recorded.get(manifest.id) == manifest.version:
                    dormant.append(
                        Skip(
                            manifest.id,
                            rid,
                            "setup",
                            "setup-done",
                            f"{rid} already ran for version {manifest.version}",
                        )
                    )
                    continue
            decision = should_trigger(
                runtime, ledger, turn, manual=rid in manual_set, emitted_topics=emitted_topics
            )
            if not decision.fires:
                dormant.append(
                    Skip(manifest.id, rid, runtime.stage or "", decision.code, decision.reason)
                )
                continue
            reason = decision.reason
            activation = decision.code
            if answered and runtime.stage == "setup":
                reason = f"{rid} asked for the form this turn answers"
                activation = "form-answer"
            elif runtime.stage == "setup" and phase != "setup":
                before = recorded.get(manifest.id)
                reason = (
                    f"{rid} sets up {manifest.id}, new in this session"
                    if before is None
                    else f"{rid} re-runs: {manifest.id} changed from {before} to {manifest.version}"
                )
                activation = "setup"
            stage = _stage_of(runtime, activation)
            if stage is None:
                dormant.append(Skip(manifest.id, rid, "", "no-stage", f"{rid} declares no stage"))
                continue
            scheduled[rid] = PlannedRuntime(
                package=manifest.id,
                runtime=rid,
                stage=stage,
                activation=activation,
                reason=reason,
                manifest=runtime,
                detached=_job_options(runtime, stage, activation),
            )
            refs[rid] = _refs(manifest, runtime, by_contract)

    def sort_key(rid: str) -> tuple[int, str]:
        return (position[scheduled[rid].package], rid)

    # Edges between scheduled runtimes of one stage set the order; edges to earlier stages are met
    # by the barrier. Gates keep every needs and required input, wherever the upstream runs.
    edges: dict[str, list[str]] = {}
    dependents: dict[str, list[str]] = {}
    missing: dict[str, tuple[str, str]] = {}  # runtime -> (input name, contract)
    package_contracts = {p["contract"] for m in manifests for p in m.provides}
    for rid in sorted(scheduled, key=sort_key):
        planned = scheduled[rid]
        ups: list[str] = []
        gates: list[Gate] = []
        for upstream, kind, name, scope in refs[rid]:
            if kind == "missing-input":
                if scope not in package_contracts:
                    missing.setdefault(rid, (name, scope))
                continue
            if kind in ("needs", "input"):
                gates.append(Gate(upstream, "needs" if kind == "needs" else "input", name, scope))
            other = scheduled.get(upstream)
            if other is None:
                continue
            dependents.setdefault(upstream, []).append(rid)
            # An upstream in a later stage sets no order; its gate finds it has not run yet.
            if other.stage == planned.stage and upstream not in ups:
                ups.append(upstream)
        edges[rid] = sorted(ups, key=sort_key)
        scheduled[rid] = replace(planned, gates=tuple(gates), upstream=tuple(edges[rid]))

    skipped: dict[str, Skip] = {}
    # Cycles: every runtime in one, and everything downstream of it, is skipped.
    nodes = sorted(scheduled, key=sort_key)
    cyclic: set[str] = set()
    for component in _sccs(nodes, edges):
        if len(component) > 1 or component[0] in edges.get(component[0], []):
            members = sorted(component, key=sort_key)
            chain = " -> ".join([*members, members[0]])
            for rid in members:
                cyclic.add(rid)
                p = scheduled[rid]
                skipped[rid] = Skip(
                    p.package,
                    rid,
                    p.stage,
                    DEPENDENCY_CYCLE,
                    f"{rid} is in a dependency cycle: {chain}",
                )
    frontier = sorted(cyclic, key=sort_key)
    while frontier:
        origin = frontier.pop(0)
        for down in sorted(dependents.get(origin, []), key=sort_key):
            if down not in skipped:
                p = scheduled[down]
                skipped[down] = Skip(
                    p.package,
                    down,
                    p.stage,
                    DEPENDENCY_CYCLE,
                    f"{down} depends on {origin}, which is in a dependency cycle",
                )
                frontier.append(down)
    # A required input from a contract nothing active provides stops the runtime before it starts.
    for rid in nodes:
        if rid in missing and rid not in skipped:
            p = scheduled[rid]
            name, contract = missing[rid]
            skipped[rid] = Skip(
                p.package,
                rid,
                p.stage,
                INPUT_MISSING,
                f"{rid} requires input {name} from {contract}, and no active package provides it",
            )
    # A runtime the turn waits for cannot depend on one that runs after the turn.
    for rid in nodes:
        p = scheduled[rid]
        if rid in skipped or p.is_detached:
            continue
        for gate in p.gates:
            up = scheduled.get(gate.upstream)
            if up is not None and up.is_detached:
                skipped[rid] = Skip(
                    p.package,
                    rid,
                    p.stage,
                    DEPENDENCY_DETACHED,
                    f"{rid} needs {gate.upstream}, which runs detached after the turn",
                )
                break

    # Levels: longest path from the stage's sources, ties in resolution order.
    level: dict[str, int] = {}

    def depth(rid: str) -> int:
        if rid not in level:
            level[rid] = 1 + max((depth(u) for u in edges[rid] if u not in skipped), default=-1)
        return level[rid]

    stages: list[StagePlan] = []
    for stage in (*STAGES, MANUAL_STAGE):
        members = [rid for rid in nodes if scheduled[rid].stage == stage and rid not in skipped]
        if not members:
            continue
        rows: dict[int, list[PlannedRuntime]] = {}
        for rid in members:
            rows.setdefault(depth(rid), []).append(scheduled[rid])
        stages.append(StagePlan(stage, tuple(tuple(rows[i]) for i in sorted(rows))))
    return Plan(
        stages=tuple(stages),
        skipped=tuple(skipped[r] for r in nodes if r in skipped),
        dormant=tuple(dormant),
        by_id={rid: p for rid, p in scheduled.items() if rid not in skipped},
    )
