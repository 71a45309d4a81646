"""When a runtime triggers: auto, manual or event, with startTurn, maxTriggerCount, cooldownTurns.

The ledger is a plain JSON-serialisable dict, committed with the turn:

    {"runtimes": {"<qualified runtime id>": {"count": 3, "lastTurn": 7}}}

Functions here never change a ledger in place; record_trigger returns a new one.
"""

from __future__ import annotations

import copy
from collections.abc import Collection, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from catalogue.manifest.types import RuntimeManifest

Ledger = dict[str, Any]
ACTIVATIONS = ("auto", "manual", "event")


@dataclass(frozen=True)
class TriggerDecision:
    """Whether the runtime triggers this turn; code and reason say why (or why not)."""

    fires: bool
    code: str
    reason: str

    def __iter__(self) -> Iterator[Any]:  # lets callers write `fires, reason = should_trigger(...)`
        return iter((self.fires, self.reason))


def empty_ledger() -> Ledger:
    return {"runtimes": {}}


def ledger_entry(ledger: Mapping[str, Any] | None, runtime_id: str) -> dict[str, Any]:
    entry = ((ledger or {}).get("runtimes") or {}).get(runtime_id) or {}
    return {"count": int(entry.get("count", 0)), "lastTurn": entry.get("lastTurn")}


def _ordinal(n: int) -> str:
    suffix = "th" if 10 <= n % 100 <= 20 else {1: "st", 2: "nd", 3: "rd"}.get(n % 10, "th")
    return f"{n}{suffix}"


def should_trigger(
    runtime: RuntimeManifest,
    ledger: Mapping[str, Any] | None,
    turn: int,
    *,
    manual: bool = False,
    emitted_topics: Collection[str] = (),
) -> TriggerDecision:
    """Decide whether runtime triggers on logical turn `turn`.

    manual: the runtime was explicitly activated (the run endpoint or an RPC).
    emitted_topics: the event topics emitted so far in this turn.
    """
    rid = runtime.qualified_id
    schedule = runtime.schedule
    if schedule.get("subagentOnly") is True:
        return TriggerDecision(
            False, "subagent-only", f"{rid} is a sub-agent: only another runtime starts it"
        )
    trigger = schedule.get("trigger", {})
    kind = trigger.get("type", "auto")
    if kind == "auto":
        every = int(schedule.get("every", 1) or 1)
        if turn % every != 0:
            return TriggerDecision(
                False,
                "not-this-turn",
                f"{rid} runs every {_ordinal(every)} turn; this is turn {turn}",
            )
        why = "runs every turn" if every == 1 else f"runs every {_ordinal(every)} turn"
        decision = TriggerDecision(True, "auto", f"{rid} {why}")
    elif kind == "manual":
        if not manual:
            return TriggerDecision(
                False, "not-activated", f"{rid} runs only when activated by hand"
            )
        decision = TriggerDecision(True, "manual", f"{rid} was activated by hand")
    elif kind == "event":
        topic = trigger.get("topic")
        if topic not in set(emitted_topics):
            return TriggerDecision(
                False, "no-event", f"{rid} waits for event {topic}, not emitted this turn"
            )
        decision = TriggerDecision(True, "event", f"{rid} runs on event {topic}")
    else:
        return TriggerDecision(
            False, "unknown-trigger", f"{rid} has an unknown trigger type {kind!r}"
        )

    entry = ledger_entry(ledger, rid)
    start = trigger.get("startTurn")
    if start is not None and turn < int(start):
        return TriggerDecision(
            False, "before-start", f"{rid} starts at turn {start}; this is turn {turn}"
        )
    limit = trigger.get("maxTriggerCount")
    if limit is not None and entry["count"] >= int(limit):
        return TriggerDecision(
            False,
            "max-triggers",
            f"{rid} has triggered {entry['count']} times, its maximum in one session",
        )
    cooldown = int(trigger.get("cooldownTurns") or 0)
    last = entry["lastTurn"]
    if cooldown > 0 and last is not None and turn - int(last) <= cooldown:
        return TriggerDecision(
            False,
            "cooldown",
            f"{rid} last triggered on turn {last} and waits {cooldown} turn(s) in between; next at turn {int(last) + cooldown + 1}",
        )
    return decision


def record_trigger(ledger: Mapping[str, Any] | None, runtime_id: str, turn: int) -> Ledger:
    """A new ledger with one more trigger of runtime_id on turn."""
    new: Ledger = copy.deepcopy(dict(ledger or {}))
    runtimes = new.setdefault("runtimes", {})
    entry = ledger_entry(ledger, runtime_id)
    runtimes[runtime_id] = {"count": entry["count"] + 1, "lastTurn": turn}
    return new
