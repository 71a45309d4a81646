"""The agent loop's rules against the stand-in model over real HTTP."""

from __future__ import annotations

import json

from agents.gateway import Endpoint
from agents.loop import LoopConfig, ToolOutcome, ToolSpec, run_agent
from agents.standin import StandInModel

SAVE = ToolSpec(
    "save-note", "Save a note.", {"type": "object", "properties": {"id": {"type": "string"}}}
)
LOOK = ToolSpec("look", "Look around.", {"type": "object"})
PROMPT = [
    {"role": "system", "content": "Save one fact."},
    {"role": "user", "content": "The gate is locked."},
]


def call(name: str, args: dict | str, id: str = "tc") -> dict:
    return {
        "id": id,
        "name": name,
        "arguments": args if isinstance(args, str) else json.dumps(args),
    }


def runtime(agent: dict | None = None, io: dict | None = None) -> dict:
    return {"agent": agent or {}, "io": io or {}}


class Recorder:
    def __init__(self, fail: set[str] = frozenset()):
        self.calls: list[tuple[str, dict]] = []
        self.fail = fail

    def __call__(self, name: str, args: dict) -> ToolOutcome:
        self.calls.append((name, args))
        if name in self.fail:
            return ToolOutcome(False, error=f"{name} refused")
        return ToolOutcome(True, {"saved": args})


def go(replies: list[dict], rt: dict, tools=(SAVE, LOOK), execute=None, **kw):
    execute = execute or Recorder()
    with StandInModel(replies) as model:
        endpoint = Endpoint(slot="plugin", base_url=model.base_url, model="stand-in")
        run = run_agent(
            runtime=rt, endpoint=endpoint, messages=PROMPT, tools=list(tools), execute=execute, **kw
        )
    return run, model, execute


def test_finish_with_ends_the_run_after_the_finishing_tool_and_forces_tool_use():
    run, model, tools = go(
        [{"toolCalls": [call("save-note", {"id": "gate"})]}], runtime({"finishWith": "save-note"})
    )
    assert run.status == "success" and run.output == {"saved": {"id": "gate"}}
    assert tools.calls == [("save-note", {"id": "gate"})]
    assert model.requests[0]["tool_choice"] == "required" and len(model.requests) == 1


def test_a_model_that_never_calls_the_finishing_tool_is_corrected_once_then_fails():
    prose = {"content": "The gate is locked."}
    run, model, _ = go(
        [prose, prose, prose], runtime({"finishWith": "save-note", "toolChoice": {"name": "look"}})
    )
    assert run.status == "failed" and run.code == "completion-missing"
    assert len(model.requests) == 2  # the first reply plus one toolUse correction
    assert "save-note" in model.requests[1]["messages"][-1]["content"]


def test_a_correction_can_rescue_the_run():
    replies = [{"content": "Done already."}, {"toolCalls": [call("save-note", {"id": "g"})]}]
    run, _, _ = go(
        replies, runtime({"completion": {"require": "tool-use", "afterTools": ["save-note"]}})
    )
    assert run.status == "success"


def test_tool_use_completion_counts_only_successful_business_tools():
    replies = [
        {"toolCalls": [call("save-note", {"id": "x"})]},
        {"content": "finished"},
        {"content": "finished"},
    ]
    run, _, _ = go(
        replies,
        runtime({"completion": {"require": "tool-use"}}),
        execute=Recorder(fail={"save-note"}),
    )
    assert run.status == "failed" and run.code == "completion-missing"
    assert run.tool_calls[0] == {
        "name": "save-note",
        "ok": False,
        "error": "save-note refused",
        "arguments": '{"id": "x"}',
    }


def test_explicit_completion_offers_runtime_done():
    replies = [{"toolCalls": [call("runtime-done", {})]}]
    run, model, _ = go(replies, runtime({"completion": {"require": "explicit"}}))
    assert run.status == "success"
    assert "runtime-done" in [t["function"]["name"] for t in model.requests[0]["tools"]]


def test_a_failed_tool_call_is_reported_to_the_model_and_the_loop_goes_on():
    replies = [{"toolCalls": [call("look", "not json")]}, {"content": "I could not look."}]
    run, model, _ = go(replies, runtime())
    assert run.status == "success" and run.output == "I could not look."
    tool_message = model.requests[1]["messages"][-1]
    assert tool_message["role"] == "tool" and "not valid JSON" in tool_message["content"]


def test_an_unknown_tool_is_refused_without_running_anything():
    replies = [{"toolCalls": [call("delete-world", {})]}, {"content": "ok"}]
    run, _, tools = go(replies, runtime())
    assert tools.calls == [] and run.tool_calls[0]["ok"] is False


def test_a_tool_loop_is_perturbed_then_fails_for_system_runtimes():
    same = {"toolCalls": [call("look", {})]}
    run, model, _ = go([same] * 7, runtime({"loop": {"loopDetection": 3}}))
    assert run.status == "failed" and run.code == "tool-loop"
    assert len(model.requests) == 6  # 3 repeats, a perturbation, 3 more repeats
    assert "repeating" in model.requests[3]["messages"][-1]["content"]


def test_a_tool_loop_falls_back_to_answering_without_tools_for_actors():
    same = {"toolCalls": [call("look", {})]}
    rt = runtime(
        {"loop": {"loopDetection": 2, "profile": "actor", "corrections": {"loopPerturbation": 0}}}
    )
    run, model, _ = go([same, same, {"content": "I stop and answer."}], rt)
    assert run.status == "success" and run.output == "I stop and answer."
    assert "tools" not in model.requests[2]


def test_max_steps_asks_the_finalizer_for_an_answer_with_tools_off():
    replies = [
        {"toolCalls": [call("look", {}, "a")]},
        {"toolCalls": [call("save-note", {"id": "b"}, "b")]},
        {"content": "Final."},
    ]
    run, model, _ = go(replies, runtime({"loop": {"maxSteps": 2}}))
    assert run.status == "success" and run.output == "Final." and "tools" not in model.requests[2]


def test_max_steps_fails_when_the_finalizer_is_off():
    replies = [{"toolCalls": [call("look", {}, "a")]}, {"content": "unused"}]
    run, _, _ = go(replies, runtime({"loop": {"maxSteps": 1, "finalizer": {"maxSteps": False}}}))
    assert run.status == "failed" and run.code == "max-steps"


def test_a_truncated_reply_fails_a_system_runtime_and_is_kept_by_a_story():
    cut = {"content": "It was a dark and", "finishReason": "length"}
    run, _, _ = go([cut], runtime())
    assert run.status == "failed" and run.code == "reply-truncated"
    story, _, _ = go([cut], runtime(io={"visibility": "story"}))
    assert story.status == "success" and story.output == "It was a dark and"


def test_output_is_validated_and_repaired_once():
    schema = {"type": "object", "required": ["mood"], "properties": {"mood": {"type": "string"}}}
    replies = [{"content": '{"feeling": "calm"}'}, {"content": '{"mood": "calm"}'}]
    run, model, _ = go(replies, runtime(), output_schema=schema)
    assert run.status == "success" and run.output == {"mood": "calm"}
    assert (
        "output schema" in model.requests[1]["messages"][-1]["content"]
        and "tools" not in model.requests[1]
    )
    bad, _, _ = go(
        [{"content": "nope"}, {"content": "still nope"}], runtime(), output_schema=schema
    )
    assert bad.status == "failed" and bad.code == "output-invalid"


def test_data_fields_in_a_reply_have_no_effect_and_are_logged():
    reply = {
        "content": json.dumps(
            {"mood": "calm", "pluginData": {"x": 1}, "events": [{"topic": "a.b"}]}
        )
    }
    run, _, _ = go([reply], runtime(), output_schema={"type": "object"})
    assert run.output == {"mood": "calm"}
    assert "pluginData" in run.warnings[0] and "events" in run.warnings[0]


def test_a_slow_first_token_fails_the_run_with_its_code():
    rt = runtime(
        io={"visibility": "story"}, agent={"loop": {"firstTokenTimeoutMs": 150, "maxRetries": 0}}
    )
    run, _, _ = go([{"content": "late", "firstTokenDelayMs": 700}], rt)
    assert run.status == "failed" and run.code == "model-first-token-timeout"


def test_a_concealed_runtime_leaves_no_prompt_reply_or_arguments_in_traces():
    replies = [
        {"toolCalls": [call("save-note", {"id": "secret-door"})]},
        {"content": "The secret door is behind the shelf."},
    ]
    streamed: list[str] = []
    run, _, _ = go(replies, runtime(io={"concealed": True}), on_text=streamed.append)
    trace = json.dumps([run.llm_calls, run.tool_calls])
    assert "secret" not in trace and streamed == []
    assert run.status == "success"


def test_spec_defaults_depend_on_visibility():
    story = LoopConfig.from_runtime(runtime(io={"visibility": "story"}))
    system = LoopConfig.from_runtime(runtime())
    assert (story.timeout_ms, story.call_timeout_ms, story.max_retries, story.stream) == (
        240_000,
        120_000,
        1,
        True,
    )
    assert (system.timeout_ms, system.call_timeout_ms, system.max_retries, system.stream) == (
        120_000,
        60_000,
        3,
        False,
    )
    assert (story.truncation, system.truncation, system.fallback, story.fallback) == (
        "accept",
        "reject",
        "fail",
        "answer-without-tools",
    )
