"""The model gateway against the stand-in model served over real HTTP on loopback."""

from __future__ import annotations

import json

import pytest

from agents.gateway import Endpoint, Limits, ModelError, chat
from agents.standin import StandInModel

FAST = Limits(
    call_timeout_ms=2000,
    first_token_timeout_ms=2000,
    idle_timeout_ms=2000,
    max_retries=2,
    retry_backoff_ms=1,
)
USER = [{"role": "user", "content": "The gate creaks."}]


def endpoint(model: StandInModel, **kw) -> Endpoint:
    return Endpoint(slot="story", base_url=model.base_url, model="stand-in", **kw)


def test_it_returns_text_and_sends_the_model_name_and_key():
    with StandInModel([{"content": "The gate opens."}]) as model:
        result = chat(endpoint(model, api_key="sk-test"), messages=USER, limits=FAST)
    assert result.content == "The gate opens."
    assert result.finish_reason == "stop"
    assert model.requests[0]["model"] == "stand-in"
    assert model.requests[0]["messages"] == USER
    assert model.headers[0]["Authorization"] == "Bearer sk-test"


def test_a_repeating_stand_in_answers_every_request_with_its_last_reply():
    script = [{"content": "First."}, {"content": "Again."}]
    with StandInModel(script, repeat=True) as model:
        answers = [chat(endpoint(model), messages=USER, limits=FAST).content for _ in range(3)]
    assert answers == ["First.", "Again.", "Again."]
    assert len(model.requests) == 3


def test_it_returns_tool_calls_and_forces_a_named_tool():
    reply = {"toolCalls": [{"id": "tc-1", "name": "save-note", "arguments": '{"id":"gate"}'}]}
    tools = [
        {"type": "function", "function": {"name": "save-note", "parameters": {"type": "object"}}}
    ]
    with StandInModel([reply]) as model:
        result = chat(
            endpoint(model),
            messages=USER,
            tools=tools,
            tool_choice={"name": "save-note"},
            limits=FAST,
        )
    assert [(c.id, c.name, json.loads(c.arguments)) for c in result.tool_calls] == [
        ("tc-1", "save-note", {"id": "gate"})
    ]
    assert result.finish_reason == "tool_calls"
    assert model.requests[0]["tool_choice"] == {
        "type": "function",
        "function": {"name": "save-note"},
    }


def test_a_stream_arrives_piece_by_piece_and_reassembles():
    pieces: list[str] = []
    reply = {
        "content": "Rain falls on the harbor",
        "toolCalls": [{"id": "tc-9", "name": "emit-event", "arguments": '{"topic":"scene.set"}'}],
    }
    with StandInModel([reply]) as model:
        result = chat(
            endpoint(model), messages=USER, stream=True, limits=FAST, on_text=pieces.append
        )
    assert result.content == "Rain falls on the harbor"
    assert len(pieces) == 5 and "".join(pieces) == result.content
    assert result.tool_calls[0].arguments == '{"topic":"scene.set"}'


def test_a_reply_cut_at_the_output_limit_is_marked_truncated():
    with StandInModel([{"content": "It was a dark", "finishReason": "length"}]) as model:
        result = chat(endpoint(model), messages=USER, stream=True, limits=FAST)
    assert result.truncated and result.content == "It was a dark"


def test_transient_failures_are_retried_until_success():
    with StandInModel([{"status": 503}, {"status": 429}, {"content": "third time"}]) as model:
        result = chat(endpoint(model), messages=USER, limits=FAST)
    assert result.content == "third time" and result.attempts == 3


def test_retries_stop_at_max_retries():
    limits = Limits(call_timeout_ms=2000, max_retries=1, retry_backoff_ms=1)
    with StandInModel([{"status": 503}, {"status": 503}, {"content": "never reached"}]) as model:
        with pytest.raises(ModelError) as error:
            chat(endpoint(model), messages=USER, limits=limits)
    assert error.value.code == "model-http-error" and "after 2 attempts" in error.value.message
    assert len(model.requests) == 2


def test_a_client_error_is_not_retried():
    with StandInModel([{"status": 400, "content": "bad tools"}, {"content": "unused"}]) as model:
        with pytest.raises(ModelError) as error:
            chat(endpoint(model), messages=USER, limits=FAST)
    assert "HTTP 400" in error.value.message and len(model.requests) == 1


def test_a_slow_first_token_times_out():
    limits = Limits(first_token_timeout_ms=150, idle_timeout_ms=2000, max_retries=0)
    with StandInModel([{"content": "late", "firstTokenDelayMs": 600}]) as model:
        with pytest.raises(ModelError) as error:
            chat(endpoint(model), messages=USER, stream=True, limits=limits)
    assert error.value.code == "model-first-token-timeout"


def test_a_stream_that_goes_silent_hits_the_idle_limit():
    limits = Limits(first_token_timeout_ms=2000, idle_timeout_ms=150, max_retries=0)
    with StandInModel([{"content": "one two three", "stallMs": 600}]) as model:
        with pytest.raises(ModelError) as error:
            chat(endpoint(model), messages=USER, stream=True, limits=limits)
    assert error.value.code == "model-idle-timeout"


def test_a_slow_non_streamed_call_hits_the_call_limit():
    limits = Limits(call_timeout_ms=150, max_retries=0)
    with StandInModel([{"content": "late", "delayMs": 600}]) as model:
        with pytest.raises(ModelError) as error:
            chat(endpoint(model), messages=USER, limits=limits)
    assert error.value.code == "model-timeout"


def test_an_unreachable_endpoint_is_an_honest_error():
    dead = Endpoint(slot="plugin", base_url="http://127.0.0.1:9/v1", model="x")
    with pytest.raises(ModelError) as error:
        chat(dead, messages=USER, limits=Limits(max_retries=0))
    assert error.value.code == "model-unreachable" and "slot plugin" in error.value.message
