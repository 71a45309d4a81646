"""Lifecycle hooks and event-triggered runtimes, played through real turns in the real Node host.

What is asserted is Covel's behaviour (ackness/covel, packages/runtime/src/hooks/): phases run
pre, normal, post; an abort in a sequential guard stops the chain and vetoes the operation
(PreToolUse: the tool does not run and the model reads the refusal; PreStateCommit: the writes
are not committed); a throwing observer of a parallel event is recorded and changes nothing;
an event-triggered runtime gets the event that woke it.
"""

from __future__ import annotations

import json
from typing import Any

from corpus_support import by_runtime, corpus_session, play

from agents.models import ModelSlot
from agents.standin import StandInModel
from catalogue.manifest.types import Manifest
from eventlog.models import SessionEvent
from pluginhost.services import plugin_rpc_call
from sessions.callbacks import SessionCallbacks
from sessions.models import PluginData
from sessions.selectors import installed_manifests
from sessions.services import session_set_status


def rpc(session: Any, package: str, action: str) -> Any:
    """What a package's action answers (the hooks' module state), asked straight of the host."""
    manifest: Manifest = installed_manifests()[package]
    answer = plugin_rpc_call(
        manifest=manifest,
        action=action,
        payload={},
        callbacks=SessionCallbacks(session=session, package=package, runtime=None),
        context={"sessionId": str(session.pk)},
    )
    assert answer["ok"] is True, answer
    return answer["data"]


def hook_events(session: Any, type: str) -> list[dict[str, Any]]:
    return [
        e.payload
        for e in SessionEvent.objects.filter(session_id=session.pk, type=type).order_by("seq")
    ]


def oath_call(call_id: str, tool: str, oath: str) -> dict[str, Any]:
    return {
        "id": call_id,
        "name": tool,
        "arguments": json.dumps({"id": oath, "text": "We hold the gate."}),
    }


def test_oath_keeper_refuses_a_forbidden_tool_before_it_runs(db, alice):
    replies = [
        {"toolCalls": [oath_call("c1", "break-oath", "hold-the-gate")]},
        {"toolCalls": [oath_call("c2", "swear-oath", "hold-the-gate")]},
    ]
    with StandInModel(replies, exhausted_status=400) as model:
        ModelSlot.objects.create(name="utility", base_url=model.base_url, model="stand-in")
        session = corpus_session(alice, "oath-keeper")
        result = play(session, "We swear to hold the gate.")
        second = model.requests[1]["messages"]
    keeper = by_runtime(result)["oath-keeper"]
    assert keeper["status"] == "succeeded", keeper
    # The refused call never ran: nothing marks the oath broken; the allowed one saved it.
    oath = PluginData.objects.get(session=session, plugin_id="oath-keeper", key="hold-the-gate")
    assert oath.value == {"id": "hold-the-gate", "text": "We hold the gate."}
    # The model read the refusal, with the guard's reason, as the tool's result.
    [refusal] = [m for m in second if m.get("role") == "tool" and m.get("tool_call_id") == "c1"]
    assert json.loads(refusal["content"]) == {
        "ok": False,
        "error": "pre-tool-use hook aborted: an oath keeper never calls break-oath",
    }
    # The abort ended the chain: the normal-phase observer saw only the call that passed.
    assert rpc(session, "oath-keeper", "seen-calls") == [
        {"tool": "swear-oath", "runtimeId": "oath-keeper"}
    ]
    [aborted] = hook_events(session, "hook.aborted")
    assert aborted["event"] == "PreToolUse" and aborted["package"] == "oath-keeper"
    assert aborted["phase"] == "pre" and "never calls break-oath" in aborted["message"]
    assert result["hooks"] == [{k: aborted[k] for k in result["hooks"][0]}]


def test_turn_journal_observes_the_session_and_its_turns_in_order(db, alice):
    session = corpus_session(alice, "turn-journal")
    first = play(session, "I look around.")
    play(session, "I wait.")
    session_set_status(session=session, status="ended")
    journal = rpc(session, "turn-journal", "journal")
    events = [e["event"] for e in journal]
    one_turn = ["TurnStart", "PreRuntime", "PostRuntime", "TurnStop"]
    assert events == ["SessionStart", *one_turn, *one_turn, "SessionEnd"]
    assert journal[0]["worldId"] == "harbor"
    start, pre, post, stop = journal[1:5]
    assert start["turnId"] == first["turnId"] and start["playerMessage"] == "I look around."
    assert "storyteller" in start["activeRuntimes"]
    assert pre["runtimeId"] == post["runtimeId"] == "storyteller"
    assert post["status"] == "succeeded"
    assert stop["runtimes"] == ["storyteller:succeeded"]
    assert journal[-1] == {"event": "SessionEnd", "turnId": None, "reason": "ended"}
    # Observers that continue leave nothing to record.
    assert first["hooks"] == [] and not hook_events(session, "hook.failed")


def test_commit_sentry_vetoes_a_forbidden_write_and_its_failing_watcher_is_recorded(db, alice):
    session = corpus_session(alice, "commit-sentry")
    kept = play(session, "I sign the ledger.")
    assert by_runtime(kept)["commit-sentry"]["status"] == "succeeded"
    assert PluginData.objects.get(session=session, plugin_id="commit-sentry").value == {
        "turn": 1,
        "note": "I sign the ledger.",
    }
    # The throwing PostStateCommit observer is recorded with package, event, phase and message,
    # and the commit stands.
    [failed] = kept["hooks"]
    assert failed == {
        "event": "PostStateCommit",
        "package": "commit-sentry",
        "phase": "normal",
        "outcome": "error",
        "message": "hook commit-sentry:PostStateCommit threw: the sentry's bell is cracked",
    }
    assert hook_events(session, "hook.failed")[0]["message"] == failed["message"]

    vetoed = play(session, "I write a forbidden word.")
    sentry = by_runtime(vetoed)["commit-sentry"]
    assert sentry["status"] == "dropped" and sentry["code"] == "hook-vetoed"
    assert "the ledger refuses a forbidden word" in sentry["reason"]
    # The veto kept the earlier value: the forbidden write was not committed.
    assert PluginData.objects.get(session=session, plugin_id="commit-sentry").value["turn"] == 1
    assert [h["event"] for h in vetoed["hooks"]] == ["PreStateCommit"]
    assert vetoed["hooks"][0]["outcome"] == "aborted" and vetoed["hooks"][0]["phase"] == "pre"

    log = rpc(session, "commit-sentry", "sentry-log")
    first_turn = [(e["event"], e["phase"]) for e in log if e["turnId"] == kept["turnId"]]
    # pre, then normal, then (the throwing normal watcher aside) post.
    assert first_turn == [
        ("PreStateCommit", "pre"),
        ("PreStateCommit", "normal"),
        ("PostStateCommit", "post"),
    ]
    assert log[2]["committed"] is True and log[2]["notes"] == ["I sign the ledger."]
    second_turn = [(e["phase"], e.get("vetoed")) for e in log if e["turnId"] == vetoed["turnId"]]
    # The gate's abort ended the chain: no normal phase, no PostStateCommit for that batch.
    assert second_turn == [("pre", True)]


def test_bell_ringer_listener_gets_the_topic_payload_and_source_of_its_event(db, alice):
    session = corpus_session(alice, "bell-ringer")
    result = by_runtime(play(session, "I ring the bell, ring it twice."))
    assert result["bell-ringer/ring"]["output"] == {"rang": 2}
    listen = result["bell-ringer/listen"]
    assert listen["status"] == "succeeded" and listen["activation"] == "event"
    assert listen["output"] == {
        "topic": "bell.rang",
        "data": {"times": 2, "bell": "harbour"},
        "payload": {"times": 2, "bell": "harbour"},
        "source": {"pluginId": "bell-ringer", "runtimeId": "bell-ringer/ring"},
    }
    # No bell, no event: the listener is not woken.
    quiet = by_runtime(play(session, "I keep quiet."))
    assert "bell-ringer/listen" not in quiet


def test_an_agent_woken_by_an_event_reads_it_in_its_runtime_activation_block(db, alice, tmp_path):
    """Covel renders an event activation into the agent's system prompt as the reserved
    <runtime-activation> block ({source, detached, payload}, payload = the event's data), the
    same activation a function handler reads (context/prompt-assembler.ts)."""
    from corpus_support import corpus_index
    from test_play_support import index_folder, make_world, write_plugin

    from sessions.services import session_create

    folder = write_plugin(
        tmp_path,
        "bell-warden",
        {
            "runtime": {
                "description": "Answers the harbour bell.",
                "schedule": {
                    "stage": "post-turn",
                    "trigger": {"type": "event", "topic": "bell.rang"},
                },
                "agent": {"model": "utility"},
            }
        },
    )
    index_folder(folder)
    corpus_index("bell-ringer")
    with StandInModel([{"content": "The warden counts two peals."}], exhausted_status=400) as model:
        ModelSlot.objects.create(name="utility", base_url=model.base_url, model="stand-in")
        world = make_world(owner=alice, plugins=["bell-ringer", "bell-warden"])
        session = session_create(owner=alice, world=world)
        result = by_runtime(play(session, "I ring the bell, ring it twice."))
        [request] = model.requests
    warden = result["bell-warden"]
    assert warden["status"] == "succeeded" and warden["activation"] == "event", warden
    system = request["messages"][0]
    assert system["role"] == "system"
    block = (
        '<runtime-activation>\n{"source":"event","detached":false,'
        '"payload":{"times":2,"bell":"harbour"}}\n</runtime-activation>'
    )
    assert block in system["content"]


def test_pre_compaction_gates_the_memory_compactor_and_post_compaction_sees_it(
    db, alice, tmp_path, settings
):
    """Covel's executeTurn asks PreCompaction before its compactor, once a turn (an abort skips
    the compaction that turn), and PostCompaction after it with {compacted, summaryId}."""
    from corpus_support import corpus_index
    from test_play_support import index_bundled, index_folder, make_world, write_plugin

    from sessions.models import HistorySummary
    from sessions.services import session_create

    settings.COVEL_HISTORY_CONTEXT_TOKENS = 100  # the story prompt alone passes 60% of it
    archivist = """export default function register(covel) {
  covel.on("PreCompaction", async (_ctx, p) =>
    p.messageCount < 8 ? { action: "abort", reason: `only ${p.messageCount} messages` } : { action: "continue" });
  covel.on("PostCompaction", async (_ctx, p) => { throw new Error(JSON.stringify(p)); });
}
"""
    folder = write_plugin(
        tmp_path,
        "archivist",
        {"contributes": {"hooks": ["PreCompaction", "PostCompaction"]}},
        files={"server/index.js": archivist},
    )
    index_folder(folder)
    index_bundled("story-agent")
    corpus_index("memory-compactor")
    replies = [{"content": f"Story {i}."} for i in range(1, 6)]
    with StandInModel(replies, exhausted_status=400) as model:
        ModelSlot.objects.create(name="story", base_url=model.base_url, model="stand-in")
        world = make_world(owner=alice, plugins=["story-agent", "memory-compactor", "archivist"])
        session = session_create(owner=alice, world=world)
        lines = ["I read the map.", "I pack bread.", "I leave at dawn.", "I cross.", "I rest."]
        results = [play(session, line) for line in lines]
        requests = model.requests
    assert all(r["status"] == "committed" for r in results)
    # Turns 1-4: the veto skipped the compaction although the window was passed.
    for number, result in enumerate(results[:4]):
        assert [(h["event"], h["outcome"], h["message"]) for h in result["hooks"]] == [
            ("PreCompaction", "aborted", f"only {2 * number} messages")
        ]
        assert "<compacted_history>" not in json.dumps(requests[number]["messages"])
    # Turn 5: the compactor ran, and PostCompaction observed what it saved.
    summaries = list(HistorySummary.objects.filter(session=session))
    assert summaries
    [observed] = results[4]["hooks"]
    assert observed["event"] == "PostCompaction" and observed["outcome"] == "error"
    seen = json.loads(observed["message"].split(" threw: ", 1)[1])
    assert seen == {
        "compacted": True,
        "summaryIds": [s.summary_id for s in summaries],
        "compactor": "memory-compactor/" + seen["compactor"].split("/", 1)[1],
        "summaryId": summaries[0].summary_id,
    }
    assert "<compacted_history>" in json.dumps(requests[4]["messages"])
