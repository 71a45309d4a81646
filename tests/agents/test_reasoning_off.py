"""`agent.reasoning: false` reaches the model through the slot's reasoning-off fragment.

Every model here is the stand-in served over real HTTP on loopback; it keeps each request body
it received, so the tests read what actually went over the wire.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from agent_helpers import load

from agents.gateway import Endpoint, Limits, chat
from agents.loop import ToolOutcome, ToolSpec, run_agent
from agents.models import ModelSlot
from agents.runtime import AgentRuntimeContext, OverlayCallbacks, OverlayData, run_agent_runtime
from agents.standin import StandInModel
from sessions.operations import MISSING, TurnOverlay

FAST = Limits(
    call_timeout_ms=2000, first_token_timeout_ms=2000, idle_timeout_ms=2000, max_retries=0
)
PROMPT = [{"role": "user", "content": "The gate creaks."}]
EFFORT_NONE = {"reasoning_effort": "none"}
THINKING_OFF = {"thinking": {"type": "disabled"}}
LOOK = ToolSpec("look", "Look around.", {"type": "object"})


def endpoint(model: StandInModel, reasoning_off: dict | None = None) -> Endpoint:
    return Endpoint(
        slot="utility", base_url=model.base_url, model="stand-in", reasoning_off=reasoning_off
    )


def look(name: str, args: dict) -> ToolOutcome:
    return ToolOutcome(True, {"seen": "a gate"})


def run(replies: list[dict], agent: dict, reasoning_off: dict | None):
    with StandInModel(replies, exhausted_status=400) as model:
        result = run_agent(
            runtime={"agent": agent, "io": {}},
            endpoint=endpoint(model, reasoning_off),
            messages=PROMPT,
            tools=[LOOK],
            execute=look,
        )
    return result, model.requests


TWO_STEPS = [
    {"toolCalls": [{"id": "a", "name": "look", "arguments": "{}"}]},
    {"content": "A gate."},
]


# --- the gateway -----------------------------------------------------------------------------


@pytest.mark.parametrize("stream", [False, True])
def test_the_gateway_merges_the_fragment_only_when_reasoning_is_off(stream):
    with StandInModel([{"content": "on"}, {"content": "off"}]) as model:
        chat(endpoint(model, THINKING_OFF), messages=PROMPT, stream=stream, limits=FAST)
        chat(
            endpoint(model, THINKING_OFF),
            messages=PROMPT,
            stream=stream,
            limits=FAST,
            reasoning=False,
        )
    on, off = model.requests
    assert "thinking" not in on
    assert off["thinking"] == {"type": "disabled"}
    # Everything else in the body is what a request with reasoning on sends.
    assert {k: v for k, v in off.items() if k != "thinking"} == on


def test_the_gateway_refuses_an_unchecked_fragment_before_sending_anything():
    from agents.gateway import ModelError

    with StandInModel([{"content": "never"}]) as model:
        with pytest.raises(ModelError) as error:
            chat(
                endpoint(model, {"stream": True}),
                messages=PROMPT,
                limits=FAST,
                reasoning=False,
            )
    assert error.value.code == "model-endpoint-invalid"
    assert "'stream'" in error.value.message
    assert model.requests == []


# --- the loop --------------------------------------------------------------------------------


def test_every_call_of_a_reasoning_false_runtime_carries_the_fragment():
    result, requests = run(TWO_STEPS, {"reasoning": False}, EFFORT_NONE)
    assert result.status == "success", result.error
    assert len(requests) == 2
    assert all(r["reasoning_effort"] == "none" for r in requests)
    assert not any("reasoning" in w for w in result.warnings)


@pytest.mark.parametrize("agent", [{}, {"reasoning": True}])
def test_a_runtime_that_keeps_reasoning_sends_no_fragment_and_no_notice(agent):
    result, requests = run(TWO_STEPS, agent, EFFORT_NONE)
    assert result.status == "success", result.error
    assert len(requests) == 2
    assert not any("reasoning_effort" in r for r in requests)
    assert not any("reasoning" in w for w in result.warnings)


def test_without_a_fragment_the_request_goes_out_unchanged_and_the_trace_says_so():
    off, off_requests = run(TWO_STEPS, {"reasoning": False}, None)
    on, on_requests = run(TWO_STEPS, {}, None)
    assert off.status == on.status == "success"
    assert off_requests == on_requests
    notices = [w for w in off.warnings if "reasoning: false" in w]
    assert len(notices) == 1
    assert "'utility'" in notices[0] and "unchanged" in notices[0]
    assert notices[0] in off.as_dict()["warnings"]
    assert on.warnings == []


def test_the_finalizer_call_turns_reasoning_off_too():
    # maxSteps 1: the tool step uses it up, then the finalizer asks once with tools off.
    result, requests = run(TWO_STEPS, {"reasoning": False, "loop": {"maxSteps": 1}}, EFFORT_NONE)
    assert result.status == "success", result.error
    assert "tools" not in requests[-1]
    assert [r["reasoning_effort"] for r in requests] == ["none", "none"]


# --- the slot --------------------------------------------------------------------------------


def slot(**fields) -> ModelSlot:
    return ModelSlot(name="utility", base_url="https://models.example/v1", model="m", **fields)


@pytest.mark.django_db
@pytest.mark.parametrize("key", ["model", "messages", "tools", "tool_choice", "stream"])
def test_a_slot_refuses_a_fragment_that_overrides_what_the_gateway_writes(key):
    from django.core.exceptions import ValidationError

    with pytest.raises(ValidationError) as error:
        slot(reasoning_off={"reasoning_effort": "none", key: "x"}).full_clean()
    message = " ".join(error.value.message_dict["reasoning_off"])
    assert f"'{key}'" in message


@pytest.mark.django_db
@pytest.mark.parametrize("value", [["reasoning_effort", "none"], "none", 0])
def test_a_slot_refuses_a_fragment_that_is_not_an_object(value):
    from django.core.exceptions import ValidationError

    with pytest.raises(ValidationError) as error:
        slot(reasoning_off=value).full_clean()
    assert "JSON object" in " ".join(error.value.message_dict["reasoning_off"])


@pytest.mark.django_db
def test_a_slot_accepts_a_fragment_and_treats_an_empty_one_as_none():
    kept = slot(reasoning_off={**THINKING_OFF, "max_tokens": 400})
    kept.full_clean()
    assert kept.reasoning_off == {"thinking": {"type": "disabled"}, "max_tokens": 400}
    empty = slot(reasoning_off={})
    empty.full_clean()
    assert empty.reasoning_off is None


@pytest.mark.django_db
def test_the_admin_names_the_refused_key_and_saves_nothing(admin_client):
    form = {
        "name": "utility",
        "base_url": "https://models.example/v1",
        "model": "m",
        "api_key_env": "",
        "max_output_tokens": "",
        "enabled": "on",
    }
    refused = admin_client.post(
        "/admin/agents/modelslot/add/",
        {**form, "reasoning_off": json.dumps({"tool_choice": "none"})},
    )
    assert refused.status_code == 200
    assert "may not set &#x27;tool_choice&#x27;" in refused.content.decode()
    assert not ModelSlot.objects.exists()

    saved = admin_client.post(
        "/admin/agents/modelslot/add/", {**form, "reasoning_off": json.dumps(EFFORT_NONE)}
    )
    assert saved.status_code == 302
    assert ModelSlot.objects.get(name="utility").reasoning_off == EFFORT_NONE


# --- a package's runtime through its configured slot -------------------------------------------

QUIET = """\
---
id: quiet
version: 1.0.0
covel: ">=0.0.45"
description: A package whose runtime may turn reasoning off.
runtime:
  schedule: {{ stage: post-turn }}
  agent:
    model: utility
{reasoning}
---
Say what happened in one line.
"""


def quiet_package(root: Path, reasoning: str) -> Path:
    package = root / "quiet"
    package.mkdir()
    (package / "PLUGIN.md").write_text(QUIET.format(reasoning=reasoning), encoding="utf-8")
    return package


def run_quiet(root: Path, reasoning: str, reasoning_off: dict | None, replies: list[dict]):
    manifest = load(quiet_package(root, reasoning))
    overlay = TurnOverlay(load=lambda p, n, k: MISSING, lister=lambda p, n: {}, datasets={})
    context = AgentRuntimeContext(
        data=OverlayData(overlay=overlay, runtime="quiet"),
        callbacks_for=lambda plugin: OverlayCallbacks(
            overlay=overlay, package=plugin, runtime="quiet"
        ),
        player_message="I open the gate.",
        registered_tools=[],
    )
    with StandInModel(replies, exhausted_status=400) as model:
        ModelSlot.objects.create(
            name="utility", base_url=model.base_url, model="stand-in", reasoning_off=reasoning_off
        )
        result = run_agent_runtime(manifest=manifest, runtime=manifest.runtimes[0], context=context)
    return result, model.requests


@pytest.mark.django_db
def test_a_reasoning_false_runtime_sends_its_slots_fragment(tmp_path):
    result, requests = run_quiet(
        tmp_path, "    reasoning: false", THINKING_OFF, [{"content": "The gate opened."}]
    )
    assert result.status == "success", result.error
    assert requests[0]["thinking"] == {"type": "disabled"}
    assert requests[0]["model"] == "stand-in"


@pytest.mark.django_db
def test_a_runtime_without_reasoning_false_never_sends_the_slots_fragment(tmp_path):
    result, requests = run_quiet(tmp_path, "", THINKING_OFF, [{"content": "The gate opened."}])
    assert result.status == "success", result.error
    assert "thinking" not in requests[0]
    assert not any("reasoning" in w for w in result.warnings)


@pytest.mark.django_db
def test_a_reasoning_false_runtime_on_a_slot_without_a_fragment_records_the_notice(tmp_path):
    result, requests = run_quiet(
        tmp_path, "    reasoning: false", None, [{"content": "The gate opened."}]
    )
    assert result.status == "success", result.error
    assert set(requests[0]) == {"model", "messages", "stream"}
    assert any(
        "reasoning: false could not be turned off for slot 'utility'" in w for w in result.warnings
    )


@pytest.mark.django_db
def test_a_fragment_written_past_the_checks_fails_the_run_and_names_the_key(tmp_path):
    result, requests = run_quiet(
        tmp_path, "    reasoning: false", {"model": "other"}, [{"content": "never"}]
    )
    assert result.status == "failed"
    assert result.code == "model-endpoint-invalid" and "'model'" in (result.error or "")
    assert requests == []
