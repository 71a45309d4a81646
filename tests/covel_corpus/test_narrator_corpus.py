"""Covel's cross-package patterns played through real turns with the bundled story agent.

What is asserted is what Covel does (ackness/covel): its command dispatch hands an action
`{args: {...}}` (apps/server .../plugin-rpc/action-dispatch.ts, session/commands.ts); its narrator
reads optional contract inputs such as `action-check@1`'s `checkContext` in `<runtime-inputs>`
and is offered `emit-event` with the session's event directory in `<available-events>`
(plugins/narrator/PLUGIN.md, runtime prompt assembly); its packages' hooks guard the narrator's
tool calls (`PreToolUse` `toolCall.name/arguments`, `PostToolUse` `result.success`, as
plugins/dice-check/hooks/verify-check-receipt.js reads them); an event-triggered runtime records
the receipt (plugins/dice-check/runtimes/recorder). The stand-in model answers per request: it
reads the dice and the sheet in its prompt, as a model following the rules would.
"""

from __future__ import annotations

import json
import re
from typing import Any

from corpus_support import by_runtime, corpus_index, play
from test_play_support import index_bundled, make_world

from agents.models import ModelSlot
from agents.standin import StandInModel
from eventlog.models import SessionEvent
from sessions.models import PluginData
from sessions.services import session_command, session_create, session_rpc

DC = 12


def session_of(owner: Any, *packages: str) -> Any:
    index_bundled("story-agent")
    corpus_index(*packages)
    world = make_world(owner=owner, plugins=["story-agent", *packages])
    return session_create(owner=owner, world=world)


def system_of(request: dict[str, Any]) -> str:
    return request["messages"][0]["content"]


def outcome(roll: int, modifier: int) -> str:
    if roll == 20:
        return "critical-success"
    if roll == 1:
        return "critical-failure"
    return "success" if roll + modifier >= DC else "failure"


def flipped(value: str) -> str:
    return {"success": "failure", "failure": "success"}.get(value, "failure")


def receipt(roll: int, modifier: int, said: str) -> dict[str, Any]:
    check = {
        "action": "force the gate",
        "roll": roll,
        "modifier": modifier,
        "dc": DC,
        "total": roll + modifier,
        "outcome": said,
    }
    return {
        "id": "emit",
        "name": "emit-event",
        "arguments": json.dumps({"topic": "check.resolved", "data": {"checks": [check]}}),
    }


def test_a_slash_command_hands_its_action_covels_args(db, alice):
    session = session_of(alice, "dice-pool", "character-sheet")
    rolled = session_command(session=session, text="/roll 2d6")
    value = rolled["value"]
    # The handler reads payload.args.notation only: two six-sided dice, not one d20.
    assert value["ok"] is True, value
    assert value["data"]["notation"] == "2d6" and len(value["data"]["rolls"]) == 2
    assert all(1 <= die <= 6 for die in value["data"]["rolls"])
    assert value["message"].startswith("2d6: ")
    bad = session_command(session=session, text="/r lots")["value"]
    assert bad == {
        "ok": False,
        "message": "Use NdM dice notation, for example 2d6.",
        "data": {"code": "invalid-notation"},
    }
    # Typed arguments arrive typed; the write is immediate, as an action's is.
    stat = session_command(session=session, text="/stat strength 3")
    assert stat["value"]["message"] == "strength is now 3."
    assert PluginData.objects.get(session=session, plugin_id="character-sheet").value == {
        "strength": 3
    }
    direct = session_rpc(
        session=session,
        plugin="character-sheet",
        action="set-stat",
        command_text="/stat wits 2",
    )
    assert direct["value"]["data"] == {"strength": 3, "wits": 2}


def test_the_narrator_reads_the_check_context_and_its_receipt_is_guarded_and_recorded(db, alice):
    session = session_of(alice, "dice-pool", "character-sheet")
    session_command(session=session, text="/stat strength 3")
    seen: dict[str, Any] = {}

    def first(request: dict[str, Any]) -> dict[str, Any]:
        system = system_of(request)
        seen["roll"] = int(re.search(r"#1: d20 = (\d+)", system).group(1))
        seen["modifier"] = int(re.search(r"strength: (-?\d+)", system).group(1))
        seen["right"] = outcome(seen["roll"], seen["modifier"])
        # A careless model reports the wrong outcome first.
        return {"toolCalls": [receipt(seen["roll"], seen["modifier"], flipped(seen["right"]))]}

    def second(request: dict[str, Any]) -> dict[str, Any]:
        call = receipt(seen["roll"], seen["modifier"], seen["right"])
        return {"toolCalls": [{**call, "id": "emit-2"}]}

    replies = [first, second, {"content": "The gate gives, or does not; the rust remembers."}]
    with StandInModel(replies, exhausted_status=400) as model:
        ModelSlot.objects.create(name="story", base_url=model.base_url, model="stand-in")
        result = play(session, "I force the rusted gate.")
        requests = model.requests
    runtimes = by_runtime(result)
    assert runtimes["story-agent"]["status"] == "succeeded", runtimes["story-agent"]
    system = system_of(requests[0])

    # The contract input is in <runtime-inputs>, where Covel's narrator reads it.
    inputs = system.split("<runtime-inputs>\n", 1)[1].split("\n</runtime-inputs>", 1)[0]
    bound = json.loads(inputs)
    assert bound["check-results"]["value"].startswith("Dice pool of this turn")
    assert f"#1: d20 = {seen['roll']}" in bound["check-results"]["value"]
    assert bound["world-time"] == {"value": None}
    # The sheet's prompt segment, and the event directory with Covel's emit-event.
    assert "<character-sheet>\nstrength: 3\n</character-sheet>" in system
    assert "<available-events>" in system and "- check.resolved: Emit once per turn" in system
    offered = [t["function"]["name"] for t in requests[0]["tools"]]
    assert "emit-event" in offered

    # The guard aborted the wrong receipt: the model read the reason as the tool's result...
    [refusal] = [m for m in requests[1]["messages"] if m.get("tool_call_id") == "emit"]
    error = json.loads(refusal["content"])["error"]
    assert error.startswith("pre-tool-use hook aborted: check.resolved was not sent")
    assert f"d20 {seen['roll']} -> {seen['right']}" in error
    # ... and only the corrected one was recorded as an event.
    events = [
        e.payload
        for e in SessionEvent.objects.filter(session_id=session.pk, type="plugin.event")
        if e.payload.get("topic") == "check.resolved"
    ]
    assert len(events) == 1 and events[0]["payload"]["checks"][0]["outcome"] == seen["right"]

    # The event woke the recorder, which kept the receipt the dice agree with.
    recorder = runtimes["dice-pool/recorder"]
    assert recorder["status"] == "succeeded" and recorder["activation"] == "event", recorder
    assert recorder["output"] == {"recorded": 1, "of": 1}
    row = PluginData.objects.get(session=session, plugin_id="dice-pool", namespace="checks")
    assert row.key == f"{result['turnId']}-0" and row.value["outcome"] == seen["right"]

    # PostToolUse saw Covel's result.success for the recorded receipt only.
    receipts = session_rpc(session=session, plugin="dice-pool", action="receipts")["value"]
    assert receipts["data"] == [result["turnId"]]
    # PreLLMCall ran around each of the narrator's three model requests.
    calls = session_rpc(session=session, plugin="character-sheet", action="llm-calls")["value"]
    assert [c["runtimeId"] for c in calls["data"]] == ["story-agent"] * 3
    # Covel's hook ctx: the event, the runtime, and every active package.
    first_call = calls["data"][0]
    assert first_call["event"] == "PreLLMCall" and first_call["ctxRuntimeId"] == "story-agent"
    assert first_call["activePluginIds"] == ["character-sheet", "dice-pool", "story-agent"]


def test_without_a_provider_the_narrator_reads_null_and_is_offered_no_topic(db, alice):
    session = session_of(alice, "character-sheet")
    with StandInModel([{"content": "Rain on the slates."}], exhausted_status=400) as model:
        ModelSlot.objects.create(name="story", base_url=model.base_url, model="stand-in")
        result = play(session, "I wait.")
        [request] = model.requests
    assert by_runtime(result)["story-agent"]["status"] == "succeeded"
    system = system_of(request)
    assert '"check-results": {\n    "value": null\n  }' in system
    assert "<available-events>\n" not in system and "<character-sheet>" not in system
