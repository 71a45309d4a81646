"""Agent runtimes in a real turn: the notebook's model (a local stand-in over HTTP) reads the
storyteller's paragraph from its inputs and saves a note through the package's own tool."""

from __future__ import annotations

import json

import test_play_support as support
from test_play_support import by_runtime, play

from agents.models import ModelSlot
from agents.standin import StandInModel
from sessions.models import PluginData
from sessions.services import session_create

bundled_world = support.bundled_world  # a shared fixture


def test_the_notebook_agent_saves_a_note_through_its_tool(bundled_world, alice):
    replies = [
        {
            "toolCalls": [
                {
                    "id": "call-1",
                    "name": "save-note",
                    "arguments": json.dumps({"id": "gate-is-open", "text": "The gate is open."}),
                }
            ]
        }
    ]
    with StandInModel(replies) as model:
        ModelSlot.objects.create(name="utility", base_url=model.base_url, model="stand-in")
        session = session_create(owner=alice, world=bundled_world)
        result = play(session, "I open the gate.")
        prompt = json.dumps(model.requests[0]["messages"])
    notebook = by_runtime(result)["notebook"]
    assert notebook["status"] == "succeeded", notebook
    # The model saw this turn's story through the declared input (select: /narrativeOutput).
    assert json.dumps(result["narrativeText"])[1:-1] in prompt
    assert [t["function"]["name"] for t in model.requests[0]["tools"]] == ["save-note"]
    note = PluginData.objects.get(
        session=session, plugin_id="notebook", namespace="notes", key="gate-is-open"
    )
    assert note.value == {"id": "gate-is-open", "text": "The gate is open."}


def test_an_agent_whose_tool_calls_keep_failing_fails_and_writes_nothing(bundled_world, alice):
    # "Bad Id" breaks the tool's kebab-case rule: every call fails, the agent never finishes
    # with save-note, and the turn still commits.
    replies = [
        {
            "toolCalls": [
                {
                    "id": "c1",
                    "name": "save-note",
                    "arguments": json.dumps({"id": "Bad Id", "text": "x"}),
                }
            ]
        },
        {
            "toolCalls": [
                {
                    "id": "c2",
                    "name": "save-note",
                    "arguments": json.dumps({"id": "Bad Id", "text": "x"}),
                }
            ]
        },
        {
            "toolCalls": [
                {
                    "id": "c3",
                    "name": "save-note",
                    "arguments": json.dumps({"id": "Bad Id", "text": "x"}),
                }
            ]
        },
    ]
    with StandInModel(replies, exhausted_status=400) as model:
        ModelSlot.objects.create(name="utility", base_url=model.base_url, model="stand-in")
        session = session_create(owner=alice, world=bundled_world)
        result = play(session, "I open the gate.")
    notebook = by_runtime(result)["notebook"]
    assert notebook["status"] == "failed"
    assert result["status"] == "committed"
    assert not PluginData.objects.filter(session=session, plugin_id="notebook").exists()


def test_a_story_agent_streams_the_story_and_sees_the_earlier_turns(db, alice):
    from test_play_support import index_bundled, make_world

    from eventlog.models import SessionEvent

    index_bundled("storyteller", "story-agent")
    world = make_world(owner=alice, plugins=["story-agent"])
    replies = [
        {"content": "You step into the rain. The harbour lights blur.", "chunkDelayMs": 5},
        {"content": "You knock twice; nobody answers.", "chunkDelayMs": 5},
    ]
    with StandInModel(replies) as model:
        ModelSlot.objects.create(name="story", base_url=model.base_url, model="stand-in")
        session = session_create(owner=alice, world=world)
        # The story agent provides narrative-engine@2, so the default storyteller steps aside.
        assert session.resolved_plugins == ["story-agent"]
        assert session.outcomes["storyteller"][-1]["code"] == "default-replaced"
        first = play(session, "I step outside.")
        second = play(session, "I knock on the door.")
        later_prompt = json.dumps(model.requests[-1]["messages"])
    assert first["narrativeText"] == "You step into the rain. The harbour lights blur."
    assert second["narrativeText"] == "You knock twice; nobody answers."
    assert "I step outside." in later_prompt and "You step into the rain." in later_prompt
    deltas = SessionEvent.objects.filter(
        session=session, type="narrative.delta", payload__turnId=first["turnId"]
    )
    assert "".join(e.payload["text"] for e in deltas.order_by("seq")) == first["narrativeText"]


def test_the_story_agent_narrates_only_once_a_story_slot_is_configured(db, alice):
    support.index_bundled("storyteller", "story-agent")
    world = support.make_world(owner=alice, plugins=[])
    without = session_create(owner=alice, world=world)
    assert (
        "storyteller" in without.resolved_plugins and "story-agent" not in without.resolved_plugins
    )

    ModelSlot.objects.create(name="story", base_url="http://127.0.0.1:9/v1", model="m")
    with_slot = session_create(owner=alice, world=world)
    assert "story-agent" in with_slot.resolved_plugins
    assert "storyteller" not in with_slot.resolved_plugins
    assert with_slot.outcomes["storyteller"][-1]["code"] == "default-replaced"

    declined = session_create(owner=alice, world=world, excluded=["story-agent"])
    assert (
        "storyteller" in declined.resolved_plugins
        and "story-agent" not in declined.resolved_plugins
    )


QUIET = """\
---
id: quiet
version: 1.0.0
description: A package whose agent asks for reasoning off.
runtime:
  schedule: { stage: post-turn }
  agent:
    model: utility
    reasoning: false
---
Say what happened in one line.
"""


def test_an_agent_runs_notices_reach_the_turns_stored_results(db, alice, tmp_path):
    """reasoning: false on a slot with no fragment: the notice is in the turn, not just a log."""
    from sessions.models import Turn

    folder = tmp_path / "quiet"
    folder.mkdir()
    (folder / "PLUGIN.md").write_text(QUIET, encoding="utf-8")
    support.index_folder(folder)
    world = support.make_world(owner=alice, plugins=["quiet"])
    with StandInModel([{"content": "The gate opened."}]) as model:
        ModelSlot.objects.create(name="utility", base_url=model.base_url, model="stand-in")
        session = session_create(owner=alice, world=world)
        result = play(session, "I open the gate.")
    quiet = by_runtime(result)["quiet"]
    assert quiet["status"] == "succeeded", quiet
    notice = "reasoning: false could not be turned off for slot 'utility'"
    assert any(notice in w for w in quiet["warnings"])
    stored = Turn.objects.get(pk=result["turnId"]).results
    assert any(notice in w for r in stored if r["runtime"] == "quiet" for w in r["warnings"])
