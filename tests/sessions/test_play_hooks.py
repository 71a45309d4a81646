"""The hook dispatcher (sessions/hooks.py) against real packages in the real Node host: phase
order across packages, sequential chains and vetoes, parallel observers, failures recorded,
and no host round trip for a turn whose packages hook nothing."""

from __future__ import annotations

import json
from typing import Any

import pytest
from test_play_support import (
    by_runtime,
    index_bundled,
    index_folder,
    make_world,
    play,
    write_plugin,
)

import sessions.hooks as hooks_module
from sessions.hooks import HookDispatcher
from sessions.models import Turn
from sessions.selectors import installed_manifests
from sessions.services import session_create

# Each hook appends "<package>:<phase>" to payload.trail, through replace.
TRAIL = """
const mark = (tag) => async (_ctx, payload) => ({ action: "continue", replace: { trail: [...(payload?.trail ?? []), tag] } });
"""


def hooked(tmp_path: Any, package: str, hooks: list[Any], body: str) -> Any:
    folder = write_plugin(
        tmp_path,
        package,
        {"contributes": {"hooks": hooks}},
        files={
            "server/index.js": TRAIL
            + "export default function register(covel) {\n"
            + body
            + "\n}\n"
        },
    )
    index_folder(folder)
    return installed_manifests()[package]


def dispatcher(alice: Any, *manifests: Any) -> tuple[HookDispatcher, Any]:
    index_bundled("storyteller")
    session = session_create(owner=alice, world=make_world(owner=alice, plugins=[]))
    return HookDispatcher(session=session, manifests=manifests, turn_id="t-1"), session


def test_phases_run_pre_normal_post_across_packages_and_chain_their_replacements(
    db, alice, tmp_path
):
    alpha = hooked(
        tmp_path,
        "alpha",
        ["PreRuntime", {"event": "PreRuntime", "enforce": "post"}],
        'covel.on("PreRuntime", mark("alpha:normal"));\n'
        'covel.registerHook("PreRuntime", mark("alpha:post"), { enforce: "post" });\n'
        'covel.on("PreRuntime", mark("alpha:normal-2"));',
    )
    beta = hooked(
        tmp_path,
        "beta",
        [{"event": "PreRuntime", "enforce": "pre"}, "PreRuntime"],
        'covel.on("PreRuntime", mark("beta:normal"));\n'
        'covel.registerHook("PreRuntime", mark("beta:pre"), { enforce: "pre" });',
    )
    hooks, _ = dispatcher(alice, alpha, beta)
    outcome = hooks.dispatch("PreRuntime", {"trail": []})
    assert outcome.payload["trail"] == [
        "beta:pre",
        "alpha:normal",
        "alpha:normal-2",  # each handler saw the one before it (a chain inside one request)
        "beta:normal",
        "alpha:post",
    ]
    assert outcome.replaced == {"trail": outcome.payload["trail"]}
    assert not outcome.aborted and outcome.called == 4  # one request per package and phase
    assert hooks.log == []


def test_an_abort_in_a_sequential_event_ends_the_chain_and_is_recorded(db, alice, tmp_path):
    gate = hooked(
        tmp_path,
        "gate",
        [{"event": "PreToolUse", "enforce": "pre"}],
        'covel.registerHook("PreToolUse", async () => ({ action: "abort", reason: "no tools today" }), { enforce: "pre" });',
    )
    watch = hooked(tmp_path, "watch", ["PreToolUse"], 'covel.on("PreToolUse", mark("watch"));')
    hooks, session = dispatcher(alice, watch, gate)
    outcome = hooks.dispatch("PreToolUse", {"trail": []})
    assert outcome.aborted and outcome.package == "gate" and outcome.reason == "no tools today"
    assert outcome.called == 1  # the normal-phase watcher was never asked
    assert outcome.replaced == {}
    assert hooks.log == [
        {
            "event": "PreToolUse",
            "package": "gate",
            "phase": "pre",
            "outcome": "aborted",
            "message": "no tools today",
        }
    ]


def test_parallel_observers_all_run_and_a_throw_or_a_timeout_is_only_recorded(db, alice, tmp_path):
    loud = hooked(
        tmp_path,
        "loud",
        ["TurnStop"],
        'covel.on("TurnStop", async () => { throw new Error("the drum split"); });\n'
        'covel.on("TurnStop", async () => new Promise(() => {}), { timeoutMs: 150 });\n'
        'covel.on("TurnStop", async () => "fine");\n'
        'covel.on("TurnStop", async () => ({ action: "abort", reason: "seen enough" }));\n'
        'covel.on("TurnStop", mark("loud"));',
    )
    hooks, _ = dispatcher(alice, loud)
    outcome = hooks.dispatch("TurnStop", {"trail": []})
    # Parallel: nothing an observer answers changes the pipeline or the payload.
    assert not outcome.aborted and outcome.payload == {"trail": []}
    assert [(e["outcome"], e["message"]) for e in hooks.log] == [
        ("error", "hook loud:TurnStop threw: the drum split"),
        ("timeout", "hook loud:TurnStop timed out after 150ms"),
        (
            "invalid",
            'hook loud:TurnStop returned string; a hook answers { action: "continue", '
            'replace? } or { action: "abort", reason }',
        ),
        ("aborted", "seen enough"),
    ]


def test_a_throwing_hook_in_a_sequential_event_aborts_like_covel(db, alice, tmp_path):
    shaky = hooked(
        tmp_path,
        "shaky",
        ["PreStateCommit"],
        'covel.on("PreStateCommit", async () => { throw new Error("ink ran out"); });',
    )
    hooks, session = dispatcher(alice, shaky)
    outcome = hooks.dispatch("PreStateCommit", {"proposals": []})
    assert outcome.aborted and outcome.reason == "hook shaky:PreStateCommit threw: ink ran out"
    [failed] = hooks.log
    assert failed["outcome"] == "error" and failed["package"] == "shaky"
    # The failure reached the session's stream too (no turn: straight to the event log).
    from eventlog.models import SessionEvent

    event = SessionEvent.objects.get(session_id=session.pk, type="hook.failed")
    assert event.payload["message"] == failed["message"]


def test_a_turn_whose_packages_hook_nothing_makes_no_hook_request(db, alice, monkeypatch):
    calls: list[str] = []
    real = hooks_module.plugin_hook_call

    def counting(**kwargs: Any) -> Any:
        calls.append(kwargs["event"])
        return real(**kwargs)

    monkeypatch.setattr(hooks_module, "plugin_hook_call", counting)
    index_bundled("storyteller", "word-count")
    session = session_create(owner=alice, world=make_world(owner=alice, plugins=["word-count"]))
    result = play(session, "I walk.")
    assert by_runtime(result)["word-count"]["status"] == "succeeded"
    assert calls == [] and result["hooks"] == []


def test_only_declared_events_are_asked(db, alice, tmp_path, monkeypatch):
    calls: list[tuple[str, str]] = []
    real = hooks_module.plugin_hook_call

    def counting(**kwargs: Any) -> Any:
        calls.append((kwargs["event"], kwargs["enforce"]))
        return real(**kwargs)

    monkeypatch.setattr(hooks_module, "plugin_hook_call", counting)
    hooked(tmp_path, "starter", ["TurnStart"], 'covel.on("TurnStart", mark("starter"));')
    index_bundled("storyteller")
    session = session_create(owner=alice, world=make_world(owner=alice, plugins=["starter"]))
    play(session, "I begin.")
    assert calls == [("TurnStart", "normal")]


def test_a_turn_start_abort_vetoes_the_turn(db, alice, tmp_path):
    hooked(
        tmp_path,
        "bouncer",
        ["TurnStart"],
        'covel.on("TurnStart", async (_ctx, p) => p.playerMessage.includes("shout") ? { action: "abort", reason: "no shouting" } : { action: "continue" });',
    )
    index_bundled("storyteller")
    session = session_create(owner=alice, world=make_world(owner=alice, plugins=["bouncer"]))
    result = play(session, "I shout.")
    assert result["runtimes"] == [] and result["status"] == "failed"
    assert result["abortReason"] == "TurnStart hook of bouncer aborted the turn: no shouting"
    turn = Turn.objects.get(pk=result["turnId"])
    assert turn.status == Turn.Status.FAILED and turn.error == result["abortReason"]
    session.refresh_from_db()
    assert session.turn_count == 0  # nothing committed
    assert by_runtime(play(session, "I whisper."))["storyteller"]["status"] == "succeeded"


def test_pre_schedule_narrows_the_turn_and_pre_runtime_skips_a_runtime(db, alice, tmp_path):
    hooked(
        tmp_path,
        "warden",
        ["PreSchedule", "PreRuntime"],
        'covel.on("PreSchedule", async (_ctx, p) => ({ action: "continue", replace: { triggered: p.triggered.filter((r) => r.runtimeId !== "word-count") } }));\n'
        'covel.on("PreRuntime", async (_ctx, p) => p.manifest.runtimeId === "chorus/hum" ? { action: "abort", reason: "no humming" } : { action: "continue" });',
    )
    sing = 'export default async () => ({ outcome: "success", value: { sung: true } });\n'
    stage = {"schedule": {"stage": "post-turn"}, "function": {}}
    index_folder(
        write_plugin(tmp_path, "chorus", {}, runtimes={"sing": (stage, sing), "hum": (stage, sing)})
    )
    index_bundled("storyteller", "word-count")
    world = make_world(owner=alice, plugins=["warden", "word-count", "chorus"])
    result = by_runtime(play(session_create(owner=alice, world=world), "We sing."))
    assert result["word-count"]["status"] == "skipped"
    assert result["word-count"]["code"] == "hook-unscheduled"
    assert result["chorus/hum"]["status"] == "skipped"
    assert result["chorus/hum"]["code"] == "hook-aborted"
    assert "no humming" in result["chorus/hum"]["reason"]
    assert result["chorus/sing"]["status"] == "succeeded"
    assert result["storyteller"]["status"] == "succeeded"


@pytest.mark.parametrize("bad", ["42", "{ action: 'maybe' }", "{ action: 'abort' }"])
def test_a_bad_result_is_recorded_as_invalid(db, alice, tmp_path, bad):
    odd = hooked(tmp_path, "odd", ["PreRuntime"], f'covel.on("PreRuntime", async () => ({bad}));')
    hooks, _ = dispatcher(alice, odd)
    outcome = hooks.dispatch("PreRuntime", {})
    assert not outcome.aborted  # an answer that is no hook result is ignored, never a veto
    [entry] = hooks.log
    assert entry["outcome"] == "invalid" and entry["package"] == "odd"
    assert json.dumps(entry)


def test_agent_hooks_shape_the_context_each_request_and_review_the_reply(db, alice, tmp_path):
    from agents.models import ModelSlot
    from agents.standin import StandInModel

    body = """
covel.on("PostContextAssembly", async () => ({ action: "continue", replace: { systemPrompt: "SYSTEM FROM HOOK" } }));
covel.on("PreLLMCall", async (_ctx, p) => ({ action: "continue", replace: { messages: [...p.messages, { role: "system", content: "call-note" }] } }));
covel.on("PostLLMResponse", async (_ctx, p) => p.response.content === "draft" ? { action: "continue", replace: { correction: "Try again without drafts." } } : { action: "continue" });
covel.on("PreStep", async (_ctx, p) => p.step > 2 ? { action: "abort", reason: "two steps are enough" } : { action: "continue" });
"""
    hooks = ["PostContextAssembly", "PreLLMCall", "PostLLMResponse", "PreStep"]
    folder = write_plugin(
        tmp_path,
        "critic",
        {
            "contributes": {"hooks": hooks},
            "runtime": {
                "description": "Says one line about the turn.",
                "schedule": {"stage": "post-turn"},
                "agent": {"model": "utility", "loop": {"maxSteps": 5}},
            },
        },
        files={"server/index.js": "export default function register(covel) {\n" + body + "}\n"},
    )
    index_folder(folder)
    index_bundled("storyteller")
    with StandInModel([{"content": "draft"}, {"content": "final"}], exhausted_status=400) as model:
        ModelSlot.objects.create(name="utility", base_url=model.base_url, model="stand-in")
        session = session_create(owner=alice, world=make_world(owner=alice, plugins=["critic"]))
        critic = by_runtime(play(session, "I look."))["critic"]
        first, second = (r["messages"] for r in model.requests)
    assert critic["status"] == "succeeded" and critic["output"] == "final", critic
    assert first[0] == {"role": "system", "content": "SYSTEM FROM HOOK"}
    # PreLLMCall changes each request, not the run's transcript: one note per request.
    assert first[-1]["content"] == "call-note"
    assert [m["content"] for m in second].count("call-note") == 1
    # PostLLMResponse's correction cost a review retry: the model saw its draft turned down.
    assert {"role": "assistant", "content": "draft"} in second
    assert {"role": "user", "content": "Try again without drafts."} in second


def test_a_pre_step_abort_stops_the_agent_run(db, alice, tmp_path):
    from agents.models import ModelSlot
    from agents.standin import StandInModel

    body = 'covel.on("PreStep", async () => ({ action: "abort", reason: "not now" }));\n'
    folder = write_plugin(
        tmp_path,
        "sleeper",
        {
            "contributes": {"hooks": ["PreStep"]},
            "runtime": {
                "description": "Never gets a word in.",
                "schedule": {"stage": "post-turn"},
                "agent": {"model": "utility"},
            },
        },
        files={"server/index.js": "export default function register(covel) {\n" + body + "}\n"},
    )
    index_folder(folder)
    index_bundled("storyteller")
    with StandInModel([{"content": "hello"}], exhausted_status=400) as model:
        ModelSlot.objects.create(name="utility", base_url=model.base_url, model="stand-in")
        session = session_create(owner=alice, world=make_world(owner=alice, plugins=["sleeper"]))
        result = play(session, "I look.")
        asked = len(model.requests)
    sleeper = by_runtime(result)["sleeper"]
    assert sleeper["status"] == "failed" and sleeper["code"] == "hook-aborted"
    assert sleeper["reason"] == "a PreStep hook stopped the run: not now"
    assert asked == 0  # the model was never called
    assert result["hooks"][0]["event"] == "PreStep"


def test_a_pre_compaction_abort_keeps_the_whole_history(db, alice, tmp_path):
    from agents.models import ModelSlot
    from agents.standin import StandInModel

    body = (
        'covel.on("PreCompaction", async (_ctx, p) => p.messageCount > p.keepTurns'
        ' ? { action: "abort", reason: "keep it all" } : { action: "continue" });\n'
        'covel.on("PostCompaction", async () => { throw new Error("the archive is shut"); });\n'
    )
    folder = write_plugin(
        tmp_path,
        "memo",
        {
            "contributes": {"hooks": ["PreCompaction", "PostCompaction"]},
            "runtime": {
                "description": "Remembers.",
                "schedule": {"stage": "post-turn"},
                "agent": {"model": "utility", "history": {"maxTurns": 1}},
            },
        },
        files={"server/index.js": "export default function register(covel) {\n" + body + "}\n"},
    )
    index_folder(folder)
    index_bundled("storyteller")
    replies = [{"content": "ok"}, {"content": "ok"}, {"content": "ok"}]
    with StandInModel(replies, exhausted_status=400) as model:
        ModelSlot.objects.create(name="utility", base_url=model.base_url, model="stand-in")
        session = session_create(owner=alice, world=make_world(owner=alice, plugins=["memo"]))
        play(session, "First I knock.")
        play(session, "Then I wait.")
        third = play(session, "At last I enter.")
        prompt = json.dumps(model.requests[2]["messages"])
    # maxTurns 1 would have kept only "Then I wait."; the veto kept both earlier turns.
    assert "First I knock." in prompt and "Then I wait." in prompt
    assert [(h["event"], h["outcome"]) for h in third["hooks"]] == [
        ("PreCompaction", "aborted"),
        ("PostCompaction", "error"),
    ]


def test_the_api_answers_a_vetoed_turn_with_its_reason_and_hooks(db, alice, tmp_path):
    from django.test import Client

    hooked(
        tmp_path,
        "bouncer",
        ["TurnStart"],
        'covel.on("TurnStart", async () => ({ action: "abort", reason: "closed for the night" }));',
    )
    index_bundled("storyteller")
    session = session_create(owner=alice, world=make_world(owner=alice, plugins=["bouncer"]))
    client = Client()
    client.force_login(alice)
    answer = client.post(
        f"/api/sessions/{session.pk}/actions",
        json.dumps({"message": "Let me in."}),
        content_type="application/json",
    )
    assert answer.status_code == 200, answer.content
    body = answer.json()
    assert body["abortReason"] == "TurnStart hook of bouncer aborted the turn: closed for the night"
    assert body["runtimes"] == [] and body["status"] == "failed"
    assert body["hooks"] == [
        {
            "event": "TurnStart",
            "package": "bouncer",
            "phase": "normal",
            "outcome": "aborted",
            "message": "closed for the night",
        }
    ]


def test_tool_hooks_change_a_call_and_its_result(db, alice, tmp_path):
    from agents.models import ModelSlot
    from agents.standin import StandInModel

    body = """
const { tool, z } = covel.toolkit;
covel.registerTool(tool({ name: "shout", description: "Shout.", parameters: z.object({ text: z.string() }),
  async execute({ text }) { return { said: text }; } }));
covel.on("PreToolUse", async (_ctx, p) => ({ action: "continue", replace: { toolCall: { arguments: JSON.stringify({ text: "changed" }) } } }));
covel.on("PostToolUse", async (_ctx, p) => ({ action: "continue", replace: { result: { said: p.result.parsedResult.said + "!" } } }));
"""
    folder = write_plugin(
        tmp_path,
        "crier",
        {
            "contributes": {"tools": ["shout"], "hooks": ["PreToolUse", "PostToolUse"]},
            "runtime": {
                "description": "Shouts once.",
                "schedule": {"stage": "post-turn"},
                "agent": {"model": "utility"},
            },
        },
        files={"server/index.js": "export default function register(covel) {\n" + body + "}\n"},
    )
    index_folder(folder)
    index_bundled("storyteller")
    call = {"id": "s1", "name": "shout", "arguments": json.dumps({"text": "hello"})}
    with StandInModel([{"toolCalls": [call]}, {"content": "done"}], exhausted_status=400) as model:
        ModelSlot.objects.create(name="utility", base_url=model.base_url, model="stand-in")
        session = session_create(owner=alice, world=make_world(owner=alice, plugins=["crier"]))
        crier = by_runtime(play(session, "Shout!"))["crier"]
        second = model.requests[1]["messages"]
    assert crier["status"] == "succeeded", crier
    [answer] = [m for m in second if m.get("role") == "tool"]
    # The tool ran with the arguments PreToolUse gave it; the model read PostToolUse's result.
    assert json.loads(answer["content"]) == {"said": "changed!"}


def test_a_post_tool_use_terminate_ends_the_run_at_once(db, alice, tmp_path):
    """Covel's tool loop (agent-loop/turn-agent-tool-loop.ts): a PostToolUse `terminate` stops
    the reply's later tool calls and ends the loop with the reply's prose; no further request."""
    from agents.models import ModelSlot
    from agents.standin import StandInModel
    from sessions.models import PluginData

    body = """
const { tool, z, withPendingProposals } = covel.toolkit;
const { makeProposal } = await import("@covel/plugin-handlers-utils");
covel.registerTool(tool({ name: "note", description: "Note a word.", parameters: z.object({ word: z.string() }),
  async execute({ word }, context) {
    const proposal = makeProposal(context, new Date().toISOString(), "plugin.data", { namespace: "notes", key: word, value: true });
    return withPendingProposals({ noted: word }, [proposal]);
  } }));
covel.on("PostToolUse", async (_ctx, p) => p.result?.parsedResult?.noted === "enough" ? { action: "continue", replace: { terminate: true } } : { action: "continue" });
"""
    folder = write_plugin(
        tmp_path,
        "scribe",
        {
            "contributes": {"tools": ["note"], "hooks": ["PostToolUse"]},
            "runtime": {
                "description": "Notes words.",
                "schedule": {"stage": "post-turn"},
                "agent": {"model": "utility"},
            },
        },
        files={
            "server/index.js": "export default async function register(covel) {\n" + body + "}\n"
        },
    )
    index_folder(folder)
    index_bundled("storyteller")
    calls = [
        {"id": f"n{i}", "name": "note", "arguments": json.dumps({"word": word})}
        for i, word in enumerate(["first", "enough", "never"])
    ]
    replies = [{"content": "Three words.", "toolCalls": calls}, {"content": "asked again"}]
    with StandInModel(replies, exhausted_status=400) as model:
        ModelSlot.objects.create(name="utility", base_url=model.base_url, model="stand-in")
        session = session_create(owner=alice, world=make_world(owner=alice, plugins=["scribe"]))
        scribe = by_runtime(play(session, "Write."))["scribe"]
        asked = len(model.requests)
    assert asked == 1  # the loop ended: the model was not asked again
    assert scribe["status"] == "succeeded" and scribe["output"] == "Three words.", scribe
    # The call after the terminating one never ran; the two before it did and are saved.
    noted = set(
        PluginData.objects.filter(session=session, plugin_id="scribe").values_list("key", flat=True)
    )
    assert noted == {"first", "enough"}


def test_a_vetoed_runtime_drops_the_runtimes_that_used_its_result(db, alice, tmp_path):
    """Covel (commit/finalize-execution.ts): a PreStateCommit veto is a rejected proposal, and
    every runtime that hard-depends on the dropped runtime is dropped with it."""
    from sessions.models import PluginData

    stash = """export default async (ctx) => {
  await ctx.pluginData.set("coins", "last", { word: ctx.inputs.turn.value.playerMessage });
  return { outcome: "success", value: { word: ctx.inputs.turn.value.playerMessage } };
};"""
    tally = """export default async (ctx) => {
  await ctx.pluginData.set("tally", "last", ctx.inputs.stashed.value);
  return { outcome: "success", value: ctx.inputs.stashed.value };
};"""
    gate = """export default function register(covel) {
  covel.on("PreStateCommit", async (_ctx, p) =>
    (p.proposals ?? []).some((x) => x.source?.runtimeId === "vault/stash" && x.payload?.value?.word === "steal")
      ? { action: "abort", reason: "no stealing" } : { action: "continue" });
}
"""
    folder = write_plugin(
        tmp_path,
        "vault",
        {"contributes": {"hooks": ["PreStateCommit"]}},
        runtimes={
            "stash": (
                {
                    "schedule": {"stage": "post-turn"},
                    "io": {"inputs": {"turn": {"from": {"kernel": "turn-digest@1"}}}},
                    "function": {"timeoutMs": 2000},
                },
                stash,
            ),
            "tally": (
                {
                    "schedule": {"stage": "audit"},
                    "io": {"inputs": {"stashed": {"from": {"runtime": "vault/stash"}}}},
                    "function": {"timeoutMs": 2000},
                },
                tally,
            ),
        },
        files={"server/index.js": gate},
    )
    index_folder(folder)
    index_bundled("storyteller")
    session = session_create(owner=alice, world=make_world(owner=alice, plugins=["vault"]))
    kept = by_runtime(play(session, "keep"))
    assert kept["vault/tally"]["status"] == "succeeded", kept["vault/tally"]
    vetoed = play(session, "steal")
    runtimes = by_runtime(vetoed)
    assert runtimes["vault/stash"]["code"] == "hook-vetoed"
    tally_result = runtimes["vault/tally"]
    assert tally_result["status"] == "dropped", tally_result
    assert tally_result["code"] == "read-refused-write"
    assert tally_result["reason"] == (
        "vault/tally used data or a result of vault/stash, "
        "whose writes a PreStateCommit hook vetoed"
    )
    # Neither write was saved; the vetoed runtime itself is reported by its hook, not twice.
    saved = {r.namespace: r.value for r in PluginData.objects.filter(session=session)}
    assert saved == {"coins": {"word": "keep"}, "tally": {"word": "keep"}}
    assert [d["runtime"] for d in vetoed["commit"]["dropped"]] == ["vault/tally"]
