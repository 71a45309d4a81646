"""run_agent_runtime against the stand-in model over HTTP, with the real Node plugin host.

Each test plays one agent run and checks what the model was offered, what it read back and
what was staged in the turn's overlay.
"""

from __future__ import annotations

import json

import pytest
from agent_helpers import PLUGINS, Session, call, load, offered, tool_messages

from agents.gateway import Endpoint
from agents.runtime import AgentRuntimeContext, OverlayCallbacks, OverlayData, run_agent_runtime
from agents.standin import StandInModel
from sessions.operations import MISSING


def test_a_tool_loop_through_a_real_plugin_tool_stages_what_the_tool_proposed():
    session = Session(load(PLUGINS / "notebook"))
    run, model = session.run(
        [{"toolCalls": [call("save-note", {"id": "gate", "text": "The gate is shut."})]}]
    )
    assert run.status == "success", run.error
    assert run.output == {"summary": "Queued note gate."}  # the tool's model view
    assert offered(model.requests[0]) == ["save-note"]
    assert model.requests[0]["tool_choice"] == "required"  # finishWith forces tool use
    session.commit()
    assert session.store[("notebook", "notes", "gate")] == {
        "id": "gate",
        "text": "The gate is shut.",
    }


def test_a_failed_plugin_tool_call_is_read_by_the_model_which_can_recover():
    session = Session(load(PLUGINS / "notebook"))
    run, model = session.run(
        [
            {"toolCalls": [call("save-note", {"id": "Not Kebab!", "text": "x"}, "a")]},
            {"toolCalls": [call("save-note", {"id": "gate", "text": "The gate is shut."}, "b")]},
        ]
    )
    assert run.status == "success"
    error = json.loads(tool_messages(model.requests[1])[0])
    assert error["ok"] is False and "save-note" in error["error"] and "id" in error["error"]
    assert [c["ok"] for c in run.tool_calls] == [False, True]
    # Only the successful call staged anything.
    assert [(w.namespace, w.key) for w in session.overlay.writes] == [("notes", "gate")]


def test_a_tool_error_reaches_the_model_with_its_hint(toolbox):
    session = Session(toolbox)
    run, model = session.run(
        [
            {"toolCalls": [call("ring", {"times": 3})]},
            {"content": "I could not ring that loud."},
        ]
    )
    assert run.status == "success"
    error = json.loads(tool_messages(model.requests[1])[0])["error"]
    assert "Three rings wake the town." in error and "Hint: Ring once." in error
    assert session.overlay.writes == []


def test_plugin_tools_read_the_runs_own_staged_writes(toolbox):
    session = Session(toolbox, store={("toolbox", "counters", "rings"): 4})
    run, model = session.run(
        [
            {"toolCalls": [call("ring", {"times": 1}, "a")]},
            {"toolCalls": [call("ring", {"times": 2}, "b")]},
            {"content": "Rung."},
        ]
    )
    assert run.status == "success"
    seen = [json.loads(m) for m in tool_messages(model.requests[2])]
    assert seen == [{"summary": "Rang 1."}, {"summary": "Rang 2."}]
    session.commit()
    assert session.store[("toolbox", "counters", "rings")] == 7


def test_deferred_tools_are_sent_only_after_load_tools(toolbox):
    session = Session(toolbox)
    card = {"value": {"id": "bell", "text": "The bell is cracked."}}
    run, model = session.run(
        [
            {"toolCalls": [call("cards-upsert", card, "a")]},
            {"toolCalls": [call("load-tools", {"names": ["cards-upsert"]}, "b")]},
            {"toolCalls": [call("cards-upsert", card, "c")]},
            {"content": "Noted."},
        ]
    )
    assert run.status == "success"
    first = offered(model.requests[0])
    assert "cards-upsert" not in first and "load-tools" in first
    load_tools = next(
        t for t in model.requests[0]["tools"] if t["function"]["name"] == "load-tools"
    )
    assert "cards-upsert" in load_tools["function"]["description"]
    assert "deferred: call load-tools" in tool_messages(model.requests[1])[0]
    after = offered(model.requests[2])
    assert "cards-upsert" in after and "load-tools" not in after  # nothing left to load
    assert run.loaded_tools == ["cards-upsert"]
    session.commit()
    assert session.store[("toolbox", "cards", "bell")]["text"] == "The bell is cracked."


def test_load_tools_refuses_names_that_are_not_deferred(toolbox):
    session = Session(toolbox)
    run, model = session.run(
        [
            {"toolCalls": [call("load-tools", {"names": ["ring", "nope"]})]},
            {"content": "Fine."},
        ]
    )
    error = json.loads(tool_messages(model.requests[1])[0])["error"]
    assert "not deferred tools of this runtime: ring, nope" in error
    assert run.loaded_tools == []


def test_dataset_tools_respect_the_datasets_ops(toolbox):
    session = Session(toolbox)
    run, model = session.run(
        [
            {
                "toolCalls": [
                    call(
                        "counters-update", {"key": "rings", "ops": [{"op": "set", "value": 9}]}, "a"
                    )
                ]
            },
            {
                "toolCalls": [
                    call("counters-update", {"key": "rings", "ops": [{"op": "inc", "by": 2}]}, "b")
                ]
            },
            {"toolCalls": [call("counters-get", {"key": "rings"}, "c")]},
            {"content": "Counted."},
        ]
    )
    assert run.status == "success"
    refused = json.loads(tool_messages(model.requests[1])[0])["error"]
    assert "invalid arguments for counters-update at /ops/0/op" in refused and "[enum]" in refused
    got = json.loads(tool_messages(model.requests[3])[-1])
    assert got == {"key": "rings", "value": 2, "found": True}  # the run reads its own staged write
    assert "counters-upsert" not in offered(model.requests[0])


def test_a_dataset_write_that_breaks_the_schema_names_the_field_and_rule(toolbox):
    session = Session(toolbox)
    run, model = session.run(
        [
            {"toolCalls": [call("load-tools", {"names": ["cards-upsert"]}, "a")]},
            {"toolCalls": [call("cards-upsert", {"value": {"id": "bell", "text": "x" * 41}}, "b")]},
            {"toolCalls": [call("cards-update", {"key": "bell", "ops": [{"op": "delete"}]}, "c")]},
            {"content": "Done."},
        ]
    )
    error = json.loads(tool_messages(model.requests[2])[-1])["error"]
    assert "cards-upsert at /value/text" in error and "[maxLength]" in error
    assert session.overlay.writes[0].ops == ({"op": "delete"},)
    assert len(session.overlay.writes) == 1


def test_builtin_tools_emit_notify_and_ask_with_a_form(toolbox):
    session = Session(toolbox)
    form = {"title": "Name the bell", "fields": [{"name": "bell-name", "label": "Name"}]}
    run, model = session.run(
        [
            {
                "toolCalls": [
                    call("emit-event", {"topic": "toolbox.nope", "data": {}}, "a"),
                    call("emit-event", {"topic": "toolbox.rang", "data": {"times": 0}}, "b"),
                    call("emit-event", {"topic": "toolbox.rang", "data": {"times": 2}}, "c"),
                    call(
                        "create-notification", {"title": "The bell rang", "level": "warning"}, "d"
                    ),
                    call("create-form", form, "e"),
                ]
            },
            {"content": "All done."},
        ]
    )
    assert run.status == "success"
    texts = tool_messages(model.requests[1])
    # Covel's emit-event answers a recorded event with text, not JSON.
    assert texts[2] == 'event "toolbox.rang" emitted'
    replies = [json.loads(m) if i != 2 else None for i, m in enumerate(texts)]
    assert (
        "emit-event at /topic: 'toolbox.nope' is not one of ['toolbox.rang'] [enum]"
        in replies[0]["error"]
    )
    assert "data of toolbox.rang does not match its schema at /times" in replies[1]["error"]
    assert session.emitted == [("toolbox.rang", {"times": 2})]
    assert [e["topic"] for e in run.events] == ["toolbox.rang"]
    assert (
        session.notices[0]["title"] == "The bell rang" and session.notices[0]["level"] == "warning"
    )
    assert session.forms[0]["id"] == replies[4]["formId"] == "toolbox:1"
    emit = next(t for t in model.requests[0]["tools"] if t["function"]["name"] == "emit-event")
    assert emit["function"]["parameters"]["properties"]["topic"]["enum"] == ["toolbox.rang"]


def test_an_imported_write_service_stages_the_providers_writes():
    satchel = load(PLUGINS / "satchel")
    session = Session(satchel)
    change = {"changes": [{"op": "add", "name": "Brass Key", "quantity": 2}]}
    run, model = session.run(
        [
            {
                "toolCalls": [
                    call("change-items", change, "a"),
                    call("wallet-get", {"key": "gold"}, "b"),
                ]
            },
            {"toolCalls": [call("runtime-done", {}, "c")]},
        ]
    )
    assert run.status == "success", run.error
    tools = offered(model.requests[0])
    assert {
        "change-items",
        "adjust-gold",
        "items-get",
        "items-list",
        "wallet-get",
        "runtime-done",
    } <= set(tools)
    assert "wallet-upsert" not in tools  # the runtime asked for wallet's get only
    applied = json.loads(tool_messages(model.requests[1])[0])
    assert applied["applied"] == [{"id": "brass-key", "name": "Brass Key", "quantity": 2}]
    session.commit()
    assert session.store[("satchel", "items", "brass-key")]["quantity"] == 2


def test_a_service_input_the_provider_refuses_fails_the_call_not_the_run():
    session = Session(load(PLUGINS / "satchel"))
    run, model = session.run(
        [
            {"toolCalls": [call("change-items", {"changes": []}, "a")]},
            {"toolCalls": [call("runtime-done", {}, "b")]},
        ]
    )
    assert run.status == "success"
    assert "invalid arguments for change-items at /changes" in tool_messages(model.requests[1])[0]
    assert session.overlay.writes == []


def test_a_story_runtime_streams_prose_and_outputs_narrative_output():
    story = load(PLUGINS / "story-agent")
    session = Session(
        story,
        store={
            ("story-agent", "threads", "bell"): {
                "id": "bell",
                "title": "Find the bell",
                "status": "open",
            }
        },
    )
    chunks: list[str] = []
    run, model = session.run(
        [{"content": "You step into the fog and hear a bell.", "finishReason": "stop"}],
        on_text=chunks.append,
        user_settings={"tone": "grim", "length": "short"},
        variables={"settings": {"tone": "grim", "length": "short"}},
    )
    assert run.status == "success"
    assert run.output == {"narrativeOutput": "You step into the fog and hear a bell."}
    assert "".join(chunks) == "You step into the fog and hear a bell." and len(chunks) > 1
    request = model.requests[0]
    assert request["stream"] is True
    system = request["messages"][0]["content"]
    assert "in a grim tone" in system
    assert (
        '<open-threads>\nbell: {"id": "bell", "title": "Find the bell", "status": "open"}' in system
    )
    assert request["messages"][-1] == {"role": "user", "content": "I ring the bell."}


def test_advertise_events_lists_the_event_directory_in_the_prompt():
    rapport = load(PLUGINS / "rapport")
    session = Session(rapport)
    _, model = session.run([{"toolCalls": [call("runtime-done", {})]}])
    system = model.requests[0]["messages"][0]["content"]
    assert "<available-events>" in system and "- affinity.changed: " in system
    assert "call the emit-event tool" in system


@pytest.mark.django_db
def test_a_runtime_without_a_configured_slot_fails_honestly():
    notebook = load(PLUGINS / "notebook")
    session = Session(notebook)
    run = run_agent_runtime(
        manifest=notebook, runtime=notebook.runtimes[0], context=session.context("notebook")
    )
    assert run.status == "failed" and run.code == "no-model-configured"
    assert "'utility' slot" in run.error


def test_overlay_callbacks_refuse_immediate_writes_and_scope_reads_to_the_package(toolbox):
    session = Session(
        toolbox,
        store={
            ("toolbox", "cards", "a"): {"id": "a", "text": "t"},
            ("other", "cards", "a"): {"id": "a", "text": "secret"},
        },
    )
    callbacks = OverlayCallbacks(overlay=session.overlay, package="toolbox", runtime="toolbox")
    assert (
        callbacks.plugin_data_get(package="other", runtime=None, namespace="cards", key="a")["text"]
        == "t"
    )
    from pluginhost.errors import CallbackRefused

    with pytest.raises(CallbackRefused):
        callbacks.plugin_data_set(
            package="toolbox", runtime=None, namespace="cards", key="a", value=1
        )
    data = OverlayData(overlay=session.overlay, runtime="toolbox")
    assert data.get(plugin="toolbox", namespace="cards", key="zzz") is None
    assert session.overlay.load("toolbox", "cards", "zzz") is MISSING
    assert isinstance(session.context("toolbox"), AgentRuntimeContext)


@pytest.mark.django_db
def test_the_runtime_calls_the_slot_staff_configured_and_a_slot_setting_overrides_it(monkeypatch):
    from agents.models import ModelSlot
    from agents.selectors import slot_configured, slot_names
    from agents.standin import StandInModel

    monkeypatch.setenv("HUB_TEST_SLOT_KEY", "sk-test")
    rapport = load(PLUGINS / "rapport")
    session = Session(rapport)
    assert not slot_configured(slot="cheap")
    with StandInModel([{"toolCalls": [call("runtime-done", {})]}]) as model:
        ModelSlot.objects.create(
            name="cheap",
            base_url=model.base_url,
            model="cheap-model",
            api_key_env="HUB_TEST_SLOT_KEY",
        )
        # rapport's agent.model is utility; its `model` setting (type slot) names another slot.
        run = run_agent_runtime(
            manifest=rapport,
            runtime=rapport.runtimes[0],
            context=session.context("rapport", user_settings={"model": "cheap"}),
        )
    assert run.status == "success", run.error
    assert slot_configured(slot="cheap") and slot_names() == ["cheap"]
    assert model.requests[0]["model"] == "cheap-model"
    assert model.headers[0]["Authorization"] == "Bearer sk-test"


def test_the_sessions_callbacks_plug_into_the_runtime_unchanged():
    """The turn executor's own HostCallbacks (over its TurnOverlay) serve the run's plugin code."""
    from sessions.callbacks import SessionCallbacks

    satchel = load(PLUGINS / "satchel")
    session = Session(satchel, store={("satchel", "wallet", "gold"): 3})
    context = session.context(
        "satchel",
        callbacks_for=lambda plugin: SessionCallbacks(
            session=None,
            package=plugin,
            runtime="satchel",
            overlay=session.overlay,
            manifest=satchel,
        ),
    )
    with StandInModel(
        [
            {"toolCalls": [call("adjust-gold", {"amount": -5, "reason": "a rope"}, "a")]},
            {"toolCalls": [call("adjust-gold", {"amount": -2, "reason": "bread"}, "b")]},
            {"toolCalls": [call("runtime-done", {}, "c")]},
        ]
    ) as model:
        endpoint = Endpoint(slot="utility", base_url=model.base_url, model="stand-in")
        run = run_agent_runtime(
            manifest=satchel, runtime=satchel.runtimes[0], context=context, endpoint=endpoint
        )
    assert run.status == "success"
    refused = json.loads(tool_messages(model.requests[1])[0])["error"]
    assert "The purse holds 3 gold" in refused and "Hint: Tell the story" in refused
    session.commit()
    assert session.store[("satchel", "wallet", "gold")] == 1


def test_a_model_repeating_a_real_tool_call_is_stopped_as_a_tool_loop_and_its_writes_are_not_kept(
    toolbox,
):
    session = Session(toolbox)
    same = {"toolCalls": [call("ring", {"times": 1})]}
    run, model = session.run([same] * 6)
    # loopDetection 3: three identical steps, one perturbation, three more, then fail (system).
    assert run.status == "failed" and run.code == "tool-loop"
    assert "repeating the same tool call" in model.requests[3]["messages"][-1]["content"]
    assert len(model.requests) == 6
    # The caller marks the runtime failed; its staged writes are thrown away, never committed.
    session.overlay.complete("toolbox", succeeded=False)
    assert session.overlay.commit().values == {}
