"""Triggers: auto (every turn, every n-th), manual, event; startTurn, maxTriggerCount, cooldownTurns."""

from __future__ import annotations

import json
from typing import Any

from catalogue.manifest.types import RuntimeManifest
from sessions.triggers import empty_ledger, record_trigger, should_trigger


def runtime_of(pkg: Any, schedule: dict[str, Any], name: str = "clock") -> RuntimeManifest:
    manifest = pkg(name, runtime={"schedule": schedule})
    return manifest.runtimes[0]


def fires_on(runtime: RuntimeManifest, turns: range, **kwargs: Any) -> list[int]:
    """Play the turns, recording each trigger in the ledger as a turn commit would."""
    ledger = empty_ledger()
    fired = []
    for turn in turns:
        decision = should_trigger(runtime, ledger, turn, **kwargs)
        if decision.fires:
            fired.append(turn)
            ledger = record_trigger(ledger, runtime.qualified_id, turn)
    return fired


def test_auto_runs_every_turn(pkg):
    runtime = runtime_of(pkg, {"stage": "post-turn"})
    assert fires_on(runtime, range(1, 6)) == [1, 2, 3, 4, 5]


def test_auto_every_n_runs_on_multiples(pkg):
    runtime = runtime_of(pkg, {"stage": "post-turn", "every": 3})
    assert fires_on(runtime, range(1, 10)) == [3, 6, 9]
    decision = should_trigger(runtime, empty_ledger(), 4)
    assert not decision.fires and decision.code == "not-this-turn"
    assert "every 3rd turn" in decision.reason


def test_manual_runs_only_when_activated(pkg):
    runtime = runtime_of(pkg, {"trigger": {"type": "manual"}})
    assert not should_trigger(runtime, empty_ledger(), 1).fires
    fires, reason = should_trigger(runtime, empty_ledger(), 1, manual=True)
    assert fires and "by hand" in reason


def test_event_runs_when_its_topic_was_emitted(pkg):
    runtime = runtime_of(
        pkg, {"stage": "post-turn", "trigger": {"type": "event", "topic": "scene.set"}}
    )
    assert not should_trigger(runtime, empty_ledger(), 1, emitted_topics=["other.topic"]).fires
    decision = should_trigger(runtime, empty_ledger(), 1, emitted_topics=["scene.set"])
    assert decision.fires and decision.code == "event"


def test_start_turn(pkg):
    runtime = runtime_of(pkg, {"stage": "post-turn", "trigger": {"type": "auto", "startTurn": 3}})
    assert fires_on(runtime, range(1, 6)) == [3, 4, 5]
    assert should_trigger(runtime, empty_ledger(), 2).code == "before-start"


def test_max_trigger_count(pkg):
    runtime = runtime_of(
        pkg, {"stage": "post-turn", "trigger": {"type": "auto", "maxTriggerCount": 2}}
    )
    assert fires_on(runtime, range(1, 6)) == [1, 2]


def test_max_trigger_count_counts_manual_runs(pkg):
    runtime = runtime_of(pkg, {"trigger": {"type": "manual", "maxTriggerCount": 1}})
    assert fires_on(runtime, range(1, 4), manual=True) == [1]


def test_cooldown_turns_leaves_that_many_turns_in_between(pkg):
    runtime = runtime_of(
        pkg, {"stage": "post-turn", "trigger": {"type": "auto", "cooldownTurns": 2}}
    )
    assert fires_on(runtime, range(1, 11)) == [1, 4, 7, 10]
    ledger = record_trigger(empty_ledger(), runtime.qualified_id, 4)
    decision = should_trigger(runtime, ledger, 5)
    assert decision.code == "cooldown" and "next at turn 7" in decision.reason


def test_options_combine(pkg):
    runtime = runtime_of(
        pkg,
        {
            "stage": "audit",
            "every": 2,
            "trigger": {"type": "auto", "startTurn": 3, "cooldownTurns": 2, "maxTriggerCount": 2},
        },
    )
    # Even turns from 4 on, at least 2 turns in between, at most twice.
    assert fires_on(runtime, range(1, 20)) == [4, 8]


def test_subagents_never_trigger(pkg):
    manifest = pkg(
        "helper",
        runtime={"schedule": {"subagentOnly": True}, "agent": {}},
    )
    decision = should_trigger(manifest.runtimes[0], empty_ledger(), 1, manual=True)
    assert not decision.fires and decision.code == "subagent-only"


def test_the_ledger_is_plain_json_and_never_changed_in_place(pkg):
    runtime = runtime_of(pkg, {"stage": "post-turn"})
    before = empty_ledger()
    after = record_trigger(before, runtime.qualified_id, 7)
    assert before == {"runtimes": {}}
    assert json.loads(json.dumps(after)) == {"runtimes": {"clock": {"count": 1, "lastTurn": 7}}}
    again = record_trigger(after, runtime.qualified_id, 8)
    assert again["runtimes"]["clock"] == {"count": 2, "lastTurn": 8}
    assert after["runtimes"]["clock"] == {"count": 1, "lastTurn": 7}
