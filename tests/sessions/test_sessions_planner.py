"""The turn plan: stage order, DAG order, cycles, needs gating, detached and sub-agent runtimes."""

from __future__ import annotations

from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from catalogue.manifest.types import Manifest, RuntimeManifest, freeze
from sessions.planner import plan_turn
from sessions.resolver import resolve
from sessions.triggers import record_trigger


def levels(plan: Any, stage: str) -> list[list[str]]:
    for stage_plan in plan.stages:
        if stage_plan.stage == stage:
            return [[p.runtime for p in level] for level in stage_plan.levels]
    return []


def fn(stage: str, **schedule: Any) -> dict[str, Any]:
    return {"schedule": {"stage": stage, **schedule}}


def test_stages_come_in_order_and_setup_only_in_the_setup_phase(bundled):
    active = resolve(
        requested=["scene-setter", "weather", "notebook", "word-count", "chronicle"],
        installed=bundled,
        usable=lambda m: (True, None),
        host_version="0.1.0",
    ).active
    manifests = [bundled[p] for p in active]
    plan = plan_turn(manifests=manifests, phase="setup", turn=0)
    assert [s.stage for s in plan.stages] == [
        "setup",
        "pre-turn",
        "narrative",
        "post-turn",
        "audit",
    ]
    assert levels(plan, "setup") == [["scene-setter"]]
    assert levels(plan, "narrative") == [["storyteller"]]

    versions = {m.id: m.version for m in manifests}
    playing = plan_turn(manifests=manifests, phase="playing", turn=1, recorded_versions=versions)
    assert [s.stage for s in playing.stages] == ["pre-turn", "narrative", "post-turn", "audit"]
    assert [d.code for d in playing.dormant if d.runtime == "scene-setter"] == ["setup-done"]


def test_setup_re_runs_when_the_package_version_changed(bundled):
    manifests = [bundled["scene-setter"], bundled["storyteller"]]
    plan = plan_turn(
        manifests=manifests,
        phase="playing",
        turn=5,
        recorded_versions={"scene-setter": "0.8.0", "storyteller": "1.0.0"},
    )
    assert levels(plan, "setup") == [["scene-setter"]]
    planned = plan.by_id["scene-setter"]
    assert planned.activation == "setup" and "changed from 0.8.0 to 0.9.0" in planned.reason


def test_a_setup_runtime_that_ran_runs_again_on_the_turn_answering_its_form(bundled):
    manifests = [bundled["scene-setter"], bundled["storyteller"]]
    versions = {m.id: m.version for m in manifests}
    plan = plan_turn(
        manifests=manifests,
        phase="playing",
        turn=2,
        recorded_versions=versions,
        answering="scene-setter",
    )
    assert levels(plan, "setup") == [["scene-setter"]]
    planned = plan.by_id["scene-setter"]
    assert planned.activation == "form-answer"
    assert planned.reason == "scene-setter asked for the form this turn answers"
    # Another runtime's form does not wake it.
    other = plan_turn(
        manifests=manifests,
        phase="playing",
        turn=2,
        recorded_versions=versions,
        answering="storyteller",
    )
    assert [d.code for d in other.dormant if d.runtime == "scene-setter"] == ["setup-done"]


def test_runtimes_are_levelled_by_needs_after_and_inputs(pkg):
    manifest = pkg(
        "flow",
        runtimes={
            "a": fn("post-turn"),
            "b": fn("post-turn", after=[{"runtime": "flow/a"}]),
            "c": {**fn("post-turn", needs=["flow/b"])},
            "d": {
                "schedule": {"stage": "post-turn"},
                "io": {"inputs": {"fromc": {"from": {"runtime": "flow/c"}}}},
            },
            "free": fn("post-turn"),
        },
    )
    plan = plan_turn(manifests=[manifest], phase="playing", turn=1)
    assert levels(plan, "post-turn") == [
        ["flow/a", "flow/free"],
        ["flow/b"],
        ["flow/c"],
        ["flow/d"],
    ]
    assert plan.by_id["flow/b"].gates == ()  # after orders only
    assert [g.upstream for g in plan.by_id["flow/c"].gates] == ["flow/b"]
    assert [(g.kind, g.name) for g in plan.by_id["flow/d"].gates] == [("input", "fromc")]


def test_contract_references_follow_their_providers_one_or_all(pkg):
    first = pkg(
        "first",
        runtime={"schedule": {"stage": "pre-turn"}, "io": {"output": {"contract": "clue@1"}}},
    )
    second = pkg(
        "second",
        runtime={"schedule": {"stage": "pre-turn"}, "io": {"output": {"contract": "clue@1"}}},
    )
    one = pkg("one", runtime=fn("pre-turn", after=[{"contract": "clue@1"}]))
    every = pkg(
        "every", runtime=fn("pre-turn", after=[{"contract": "clue@1", "cardinality": "all"}])
    )
    plan = plan_turn(manifests=[first, second, one, every], phase="playing", turn=1)
    assert plan.by_id["one"].upstream == ("first",)
    assert plan.by_id["every"].upstream == ("first", "second")
    assert levels(plan, "pre-turn") == [["first", "second"], ["one", "every"]]


def test_a_cycle_skips_its_runtimes_and_everything_downstream(pkg):
    x = pkg(
        "x",
        runtime={
            "schedule": {"stage": "post-turn", "after": ["y@1"]},
            "io": {"output": {"contract": "x@1"}},
        },
    )
    y = pkg(
        "y",
        runtime={
            "schedule": {"stage": "post-turn", "needs": ["x@1"]},
            "io": {"output": {"contract": "y@1"}},
        },
    )
    down = pkg("down", runtime=fn("post-turn", needs=["y@1"]))
    later = pkg("later", runtime=fn("audit", after=["down@1"], needs=["x@1"]))
    free = pkg("free", runtime=fn("post-turn"))
    plan = plan_turn(manifests=[x, y, down, later, free], phase="playing", turn=1)
    skipped = {s.runtime: s for s in plan.skipped}
    assert set(skipped) == {"x", "y", "down", "later"}
    assert all(s.code == "dependency-cycle" for s in skipped.values())
    assert "x -> y -> x" in skipped["x"].reason
    assert "depends on y" in skipped["down"].reason
    assert plan.order() == ["free"]


def test_needs_gate_names_the_upstream_that_did_not_succeed(pkg):
    manifest = pkg(
        "gated",
        runtimes={
            "up": fn("pre-turn"),
            "down": fn("pre-turn", needs=["gated/up"]),
            "reader": {
                "schedule": {"stage": "pre-turn"},
                "io": {"inputs": {"soft": {"from": {"runtime": "gated/up"}, "required": False}}},
            },
        },
    )
    plan = plan_turn(manifests=[manifest], phase="playing", turn=1)
    assert plan.gate("gated/down", {"gated/up": "succeeded"}) is None
    skip = plan.gate("gated/down", {"gated/up": "failed"})
    assert skip is not None and skip.code == "upstream-not-succeeded"
    assert skip.reason == "gated/down needs gated/up, which ended failed"
    assert "did not run" in plan.gate("gated/down", {}).reason  # type: ignore[union-attr]
    # An optional input orders but does not gate.
    assert plan.gate("gated/reader", {"gated/up": "failed"}) is None
    assert levels(plan, "pre-turn") == [["gated/up"], ["gated/down", "gated/reader"]]


def test_required_inputs_from_earlier_stages_gate_across_the_barrier(bundled):
    plan = plan_turn(
        manifests=[bundled["storyteller"], bundled["notebook"]], phase="playing", turn=1
    )
    assert plan.by_id["notebook"].upstream == ()  # the stage barrier orders them
    skip = plan.gate("notebook", {"storyteller": "failed"})
    assert skip is not None and "requires input narrative from storyteller" in skip.reason
    assert plan.gate("notebook", {"storyteller": "succeeded"}) is None


def test_detached_runtimes_are_marked_and_inline_dependents_skipped(bundled, pkg):
    chronicle = bundled["chronicle"]
    plan = plan_turn(manifests=[bundled["storyteller"], chronicle], phase="playing", turn=1)
    assert [p.runtime for p in plan.jobs()] == ["chronicle/summarize", "chronicle/archive"]
    assert plan.by_id["chronicle/summarize"].detached["settle"] is True  # type: ignore[index]
    assert "chronicle/index" in [p.runtime for p in plan.inline()]

    # An inline runtime that needs a detached one cannot run within the turn.
    eager = pkg(
        "eager",
        runtimes={
            "slow": {
                "schedule": {"stage": "post-turn", "detached": True},
                "io": {"output": {"contract": "slow@1"}},
            },
            "fast": fn("audit", needs=["eager/slow"]),
        },
    )
    plan = plan_turn(manifests=[eager], phase="playing", turn=1)
    assert [(s.runtime, s.code) for s in plan.skipped] == [("eager/fast", "dependency-detached")]


def test_subagents_are_never_scheduled_and_triggers_apply(pkg):
    manifest = pkg(
        "mixed",
        runtimes={
            "helper": {"schedule": {"subagentOnly": True}, "agent": {}},
            "often": fn("post-turn"),
            "rare": fn("post-turn", every=2),
            "button": {"schedule": {"trigger": {"type": "manual"}}},
            "listener": {
                "schedule": {"stage": "audit", "trigger": {"type": "event", "topic": "door.opened"}}
            },
            "once": {
                "schedule": {"stage": "audit", "trigger": {"type": "auto", "maxTriggerCount": 1}}
            },
        },
    )
    ledger = record_trigger(None, "mixed/once", 1)
    plan = plan_turn(manifests=[manifest], phase="playing", turn=3, ledger=ledger)
    assert plan.order() == ["mixed/often"]
    dormant = {d.runtime: d.code for d in plan.dormant}
    assert dormant == {
        "mixed/helper": "subagent-only",
        "mixed/rare": "not-this-turn",
        "mixed/button": "not-activated",
        "mixed/listener": "no-event",
        "mixed/once": "max-triggers",
    }
    plan = plan_turn(
        manifests=[manifest],
        phase="playing",
        turn=4,
        manual=["mixed/button", "mixed/helper"],
        emitted_topics=["door.opened"],
    )
    assert levels(plan, "post-turn") == [["mixed/often", "mixed/rare"]]
    assert levels(plan, "audit") == [["mixed/listener", "mixed/once"]]
    assert levels(plan, "manual") == [["mixed/button"]]
    # A manual run outside a turn plans only what was activated.
    alone = plan_turn(
        manifests=[manifest], phase="playing", turn=4, manual=["mixed/button"], include_auto=False
    )
    assert alone.order() == ["mixed/button"]


@st.composite
def dags(draw: st.DrawFn) -> tuple[int, list[tuple[int, int, str]]]:
    size = draw(st.integers(min_value=2, max_value=7))
    edges = []
    for down in range(size):
        for up in range(down):
            kind = draw(st.sampled_from(["none", "none", "needs", "after", "input"]))
            if kind != "none":
                edges.append((up, down, kind))
    return size, edges


@settings(
    max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(graph=dags(), names=st.permutations(["r0", "r1", "r2", "r3", "r4", "r5", "r6"]))
def test_the_plan_respects_every_edge_of_a_random_dag(pkg, graph, names):
    size, edges = graph
    label = {i: names[i] for i in range(size)}  # shuffled names: ties must not decide the order
    runtimes: dict[str, dict[str, Any]] = {}
    for i in range(size):
        schedule: dict[str, Any] = {"stage": "post-turn"}
        inputs: dict[str, Any] = {}
        for up, down, kind in edges:
            if down != i:
                continue
            ref = f"dag/{label[up]}"
            if kind == "input":
                inputs[f"in{up}"] = {"from": {"runtime": ref}}
            else:
                schedule.setdefault(kind, []).append({"runtime": ref})
        runtimes[label[i]] = {
            "schedule": schedule,
            **({"io": {"inputs": inputs}} if inputs else {}),
        }
    manifest: Manifest = pkg("dag", runtimes=runtimes)
    plan = plan_turn(manifests=[manifest], phase="playing", turn=1)
    level_of = {p: n for n, level in enumerate(levels(plan, "post-turn")) for p in level}
    assert len(level_of) == size and not plan.skipped
    for up, down, _kind in edges:
        assert level_of[f"dag/{label[up]}"] < level_of[f"dag/{label[down]}"]
    # Levels are as shallow as the edges allow: each runtime past level 0 has an upstream one level up.
    for runtime, n in level_of.items():
        if n:
            assert any(level_of[u] == n - 1 for u in plan.by_id[runtime].upstream)


def test_a_required_input_nothing_provides_stops_the_runtime(pkg):
    strict = pkg(
        "strict",
        runtime={
            "schedule": {"stage": "post-turn"},
            "io": {"inputs": {"lore": {"from": {"contract": "lore@1"}}}},
        },
    )
    lenient = pkg(
        "lenient",
        runtime={
            "schedule": {"stage": "post-turn"},
            "io": {"inputs": {"lore": {"from": {"contract": "lore@1"}, "required": False}}},
        },
    )
    plan = plan_turn(manifests=[strict, lenient], phase="playing", turn=1)
    assert [(s.runtime, s.code) for s in plan.skipped] == [("strict", "input-missing")]
    assert "requires input lore from lore@1" in plan.skipped[0].reason
    assert plan.order() == ["lenient"]
    # A package that provides the contract without a runtime (a data contract) satisfies it.
    library = pkg("library", provides=["lore@1"])
    assert plan_turn(manifests=[library, strict], phase="playing", turn=1).order() == ["strict"]


def test_session_scoped_needs_accept_the_setup_snapshot(pkg):
    manifest = pkg(
        "opening",
        runtimes={
            "world": fn("setup"),
            "cast": fn("setup", needs=[{"runtime": "opening/world", "scope": "session"}]),
        },
    )
    plan = plan_turn(manifests=[manifest], phase="setup", turn=0)
    assert levels(plan, "setup") == [["opening/world"], ["opening/cast"]]
    # world did not run again this turn, but its setup snapshot succeeded earlier.
    assert plan.gate("opening/cast", {}, session_succeeded={"opening/world"}) is None
    assert plan.gate("opening/cast", {}) is not None


def test_a_simulated_turn_runs_the_plan_level_by_level(bundled):
    """The loop the Sessions service will run: gate, run, complete, then record the triggers."""
    manifests = [bundled[p] for p in ("storyteller", "notebook", "word-count", "chronicle")]
    ledger: dict[str, Any] = {}
    plan = plan_turn(
        manifests=manifests,
        phase="playing",
        turn=1,
        ledger=ledger,
        recorded_versions={m.id: m.version for m in manifests},
    )
    statuses: dict[str, str] = {}
    ran: list[str] = []
    for stage in plan.stages:
        for level in stage.levels:
            for planned in level:
                if planned.is_detached:
                    continue
                if plan.gate(planned.runtime, statuses):
                    statuses[planned.runtime] = "skipped"
                    continue
                # The storyteller fails this turn: the notebook, which requires its output, is skipped.
                statuses[planned.runtime] = (
                    "failed" if planned.runtime == "storyteller" else "succeeded"
                )
                ran.append(planned.runtime)
                ledger = record_trigger(ledger, planned.runtime, 1)
    assert ran == ["storyteller", "word-count", "chronicle/index"]  # ties keep the resolution order
    assert statuses["notebook"] == "skipped"
    assert [p.runtime for p in plan.jobs()] == ["chronicle/summarize", "chronicle/archive"]
    assert sorted(ledger["runtimes"]) == ["chronicle/index", "storyteller", "word-count"]


def _bare(pid: str, refs: list[tuple[str, int]]) -> Manifest:
    """A one-runtime package built directly, publishing k<pid>@1 and ordered after other contracts."""
    schedule: dict[str, Any] = {"stage": "post-turn", "trigger": {"type": "auto"}}
    for kind, target in refs:
        schedule.setdefault(kind, []).append({"contract": f"k{target}@1"})
    data = {"schedule": schedule, "io": {"output": {"contract": f"k{pid}@1"}}, "function": {}}
    runtime = RuntimeManifest(
        id=f"n{pid}", qualified_id=f"n{pid}", file="PLUGIN.md", prompt="", data=freeze(data)
    )
    package = {"id": f"n{pid}", "kind": "plugin", "version": "1.0.0", "description": "x"}
    return Manifest(id=f"n{pid}", path="", data=freeze(package), body="", runtimes=(runtime,))


@settings(max_examples=200, deadline=None)
@given(
    size=st.integers(1, 7),
    edges=st.lists(
        st.tuples(st.integers(0, 6), st.integers(0, 6), st.sampled_from(["needs", "after"])),
        max_size=12,
    ),
)
def test_cycles_and_their_downstream_are_exactly_what_is_skipped(size, edges):
    # a runs after b; a contract reference never points a runtime at itself.
    edges = [(a, b, k) for a, b, k in edges if a < size and b < size and a != b]
    manifests = [_bare(str(i), [(k, b) for a, b, k in edges if a == i]) for i in range(size)]
    plan = plan_turn(manifests=manifests, phase="playing", turn=1)

    ups = {i: {b for a, b, _ in edges if a == i} for i in range(size)}

    def reaches(start: int, goal: int) -> bool:
        seen, todo = set(), list(ups[start])
        while todo:
            node = todo.pop()
            if node == goal:
                return True
            if node not in seen:
                seen.add(node)
                todo.extend(ups[node])
        return False

    cyclic = {i for i in range(size) if reaches(i, i)}
    doomed = {i for i in range(size) if i in cyclic or any(reaches(i, c) for c in cyclic)}
    assert {s.runtime for s in plan.skipped} == {f"n{i}" for i in doomed}
    assert all(s.code == "dependency-cycle" for s in plan.skipped)
    level_of = {p: n for n, level in enumerate(levels(plan, "post-turn")) for p in level}
    assert set(level_of) == {f"n{i}" for i in range(size) if i not in doomed}
    for a, b, _ in edges:
        if a not in doomed:
            assert level_of[f"n{b}"] < level_of[f"n{a}"]
