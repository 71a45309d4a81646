"""More loop rules against the stand-in: named tool choice, afterTools, the deadline reserve,
the finalizer's own verdict, and deferred tools at the loop level."""

from __future__ import annotations

import json

from agents.gateway import Endpoint
from agents.loop import ToolOutcome, ToolSpec, load_tools_spec, run_agent
from agents.standin import StandInModel

SAVE = ToolSpec("save-note", "Save a note.\nSecond line.", {"type": "object"})
LOOK = ToolSpec("look", "Look around.", {"type": "object"})
PROMPT = [{"role": "system", "content": "Work."}, {"role": "user", "content": "Go."}]


def call(name: str, args: dict, id: str = "tc") -> dict:
    return {"id": id, "name": name, "arguments": json.dumps(args)}


def execute(name: str, args: dict) -> ToolOutcome:
    return ToolOutcome(True, {"did": name})


def go(replies, rt, tools=(SAVE, LOOK), **kw):
    with StandInModel(replies, exhausted_status=400) as model:
        endpoint = Endpoint(slot="plugin", base_url=model.base_url, model="stand-in")
        run = run_agent(
            runtime=rt,
            endpoint=endpoint,
            messages=PROMPT,
            tools=list(tools),
            execute=kw.pop("execute", execute),
            **kw,
        )
    return run, model


def test_a_named_tool_choice_is_sent_as_that_function():
    run, model = go(
        [{"toolCalls": [call("look", {})]}, {"content": "Seen."}],
        {"agent": {"toolChoice": {"name": "look"}}},
    )
    assert model.requests[0]["tool_choice"] == {"type": "function", "function": {"name": "look"}}
    assert run.status == "success"


def test_after_tools_completes_after_a_listed_tool_with_its_result():
    run, model = go(
        [{"toolCalls": [call("look", {}, "a"), call("save-note", {}, "b")]}],
        {"agent": {"completion": {"afterTools": ["save-note"]}}},
    )
    assert run.status == "success" and run.output == {"did": "save-note"}
    assert len(model.requests) == 1


def test_the_deadline_reserve_asks_for_the_answer_with_tools_off():
    ticks = iter([0.0, 0.0, 0.0, 5.0, 5.0, 5.0, 5.0, 5.0, 5.0, 5.0])

    def clock() -> float:
        return next(ticks, 5.0)

    rt = {"agent": {"loop": {"timeoutMs": 8000, "finalizer": {"deadlineReserveMs": 4000}}}}
    run, model = go([{"toolCalls": [call("look", {})]}, {"content": "In time."}], rt, clock=clock)
    assert run.status == "success" and run.output == "In time."
    assert "tools" not in model.requests[1]


def test_a_finalizer_answer_that_breaks_the_schema_reports_output_invalid():
    schema = {"type": "object", "required": ["mood"]}
    run, _ = go(
        [{"toolCalls": [call("look", {})]}, {"content": "not json"}],
        {"agent": {"loop": {"maxSteps": 1, "corrections": {"outputRepair": 0}}}},
        output_schema=schema,
    )
    assert run.status == "failed" and run.code == "output-invalid"


def test_a_deferred_tool_cannot_be_called_before_it_is_loaded():
    calls: list[str] = []

    def record(name: str, args: dict) -> ToolOutcome:
        calls.append(name)
        return ToolOutcome(True, {"did": name})

    run, model = go(
        [
            {"toolCalls": [call("save-note", {}, "a")]},
            {"toolCalls": [call("load-tools", {"names": ["save-note"]}, "b")]},
            {"toolCalls": [call("save-note", {}, "c")]},
            {"content": "Saved."},
        ],
        {"agent": {}},
        tools=(LOOK,),
        deferred=[SAVE],
        execute=record,
    )
    assert run.status == "success" and calls == ["save-note"]  # only the call after loading ran
    assert [t["function"]["name"] for t in model.requests[0]["tools"]] == ["look", "load-tools"]
    assert [t["function"]["name"] for t in model.requests[2]["tools"]] == ["look", "save-note"]
    assert [c["ok"] for c in run.tool_calls] == [False, True, True]


def test_load_tools_lists_each_deferred_tool_by_its_first_line():
    spec = load_tools_spec([SAVE, LOOK])
    assert "- save-note: Save a note.\n- look: Look around." in spec.description
    assert spec.parameters["properties"]["names"]["items"]["enum"] == ["save-note", "look"]
