"""Extension points played through real turns: the corpus packages' providers run in the real
Node host, and the local stand-in model shows the prompt each agent received.

Covel's behaviour (ackness/covel, its extension-point contracts and the prompt assembler):
prompt.segment@1 collects segments by audience and position from committed data;
prompt.history-transform@1 pipes the history; history.compact@2 replaces the oldest
uncompacted messages with a <compacted_history> user message; ui.slot@1 projects a slot's
value; a failing provider is skipped and reported, never failing the turn.
"""

from __future__ import annotations

import json
from typing import Any

from corpus_support import by_runtime, corpus_index, corpus_session, play
from test_play_support import index_bundled, make_world

from agents.models import ModelSlot
from agents.standin import StandInModel
from eventlog.models import SessionEvent
from sessions.models import HistorySummary, PluginData
from sessions.services import session_create


def story_session(alice: Any, *package_ids: str) -> Any:
    """A session whose story is the bundled story agent, with the given corpus packages."""
    index_bundled("story-agent")
    corpus_index(*package_ids)
    world = make_world(owner=alice, plugins=["story-agent", *package_ids])
    return session_create(owner=alice, world=world)


def story_replies(*texts: str) -> list[dict[str, Any]]:
    return [{"content": text} for text in texts]


def system_of(request: dict[str, Any]) -> str:
    return request["messages"][0]["content"]


def failures(session: Any) -> list[dict[str, Any]]:
    events = SessionEvent.objects.filter(session=session, type="extension.failed")
    return [e.payload for e in events.order_by("seq")]


# ---------------------------------------------------------------- prompt.segment@1


def test_mood_segments_project_committed_data_into_the_story_prompt(db, alice):
    with StandInModel(story_replies("Rain.", "Thunder.", "Quiet.")) as model:
        ModelSlot.objects.create(name="story", base_url=model.base_url, model="stand-in")
        session = story_session(alice, "mood-segments")
        first = play(session, "A storm rolls in.")
        second = play(session, "I wait.")
        requests = model.requests
    assert first["status"] == second["status"] == "committed"
    # Turn 1: nothing committed yet, so no provider has a segment (Covel reads committed data).
    assert "<mood>" not in system_of(requests[0])
    assert not any("mood in this reply" in m["content"] for m in requests[0]["messages"])
    # Turn 2: the mood turn 1 committed is in the story's system prompt...
    assert "<mood>\nThe story is tense (set on turn 1).\n</mood>" in system_of(requests[1])
    # ...and the post-history segment sits after the history, before this turn's input.
    messages = requests[1]["messages"]
    assert messages[-2] == {"role": "user", "content": "Keep the tense mood in this reply."}
    assert messages[-1] == {"role": "user", "content": "I wait."}
    # The static contributes.prompt segment comes before the history (pre-history).
    assert messages[1] == {
        "role": "system",
        "content": "Let the mood colour the weather and the light.",
    }
    assert messages[2]["content"] == "A storm rolls in." and messages[3]["content"] == "Rain."
    # audience: self reaches only the provider's own runtimes, never the story agent's.
    assert "mood-notes" not in json.dumps(requests[1]["messages"])
    saved = PluginData.objects.get(session=session, plugin_id="mood-segments", key="current")
    assert saved.value == {"mood": "calm", "turn": 2}
    assert failures(session) == []


def test_a_failing_segment_provider_is_skipped_and_reported(db, alice):
    with StandInModel(story_replies("Rain.", "Glass everywhere.")) as model:
        ModelSlot.objects.create(name="story", base_url=model.base_url, model="stand-in")
        session = story_session(alice, "mood-segments")
        play(session, "A storm rolls in.")
        result = play(session, "The window will shatter.")
        prompt = model.requests[1]
    assert result["status"] == "committed"
    story = by_runtime(result)["story-agent"]
    assert story["status"] == "succeeded"
    # The other providers still gave their segments; the failing one is named with its error.
    assert "<mood>" in system_of(prompt)
    assert not any("mood in this reply" in m["content"] for m in prompt["messages"])
    assert any(
        "prompt.segment@1 mood-segments/mood-reminder was skipped" in w
        and "the mood shattered" in w
        for w in story["warnings"]
    ), story["warnings"]
    [failure] = failures(session)
    assert failure["point"] == "prompt.segment@1"
    assert failure["plugin"] == "mood-segments" and failure["extension"] == "mood-reminder"
    assert failure["runtime"] == "story-agent"


# ---------------------------------------------------------------- history.compact@2

LINES = ["I read the map <north>.", "I pack bread.", "I leave at dawn.", "I cross the river."]


def play_lines(session: Any, lines: list[str]) -> list[dict[str, Any]]:
    return [play(session, line) for line in lines]


def test_the_memory_compactor_folds_the_oldest_history_into_a_summary(db, alice, settings):
    # A tiny window, so that the story agent's own prompt already passes 60% of it.
    settings.COVEL_HISTORY_CONTEXT_TOKENS = 100
    stories = [f"Story {i}." for i in range(1, 6)]
    with StandInModel(story_replies(*stories)) as model:
        ModelSlot.objects.create(name="story", base_url=model.base_url, model="stand-in")
        session = story_session(alice, "memory-compactor")
        results = play_lines(session, [*LINES, "I rest."])
        requests = model.requests
    assert all(r["status"] == "committed" for r in results)
    assert failures(session) == []
    # Turns 1-3: the protected tail (last two player turns, last five messages) is everything.
    assert not any("<compacted_history>" in json.dumps(r["messages"]) for r in requests[:3])
    summaries = list(HistorySummary.objects.filter(session=session))
    assert summaries, "no summary was saved"
    covered = [i for s in summaries for i in s.message_ids]
    turn_ids = [r["turnId"] for r in results]
    # Only a prefix of the log is covered, oldest first, and the first player line is in it.
    assert covered[0] == f"{turn_ids[0]}:player"
    last = requests[-1]["messages"]
    # The summaries stand first, as one user message, XML-escaped (Covel's envelope)...
    assert last[1]["role"] == "user"
    assert last[1]["content"].startswith(
        "<compacted_history>\nPlayer: I read the map &lt;north&gt;."
    )
    assert last[1]["content"].endswith("</compacted_history>")
    # ...and what they cover is no longer in the history itself; the tail still is.
    raw = [m["content"] for m in last[2:]]
    assert "I read the map <north>." not in raw
    assert raw[-1] == "I rest." and "I cross the river." in raw and "Story 4." in raw
    # The messages are never deleted: the turns keep what was said.
    assert results[0]["narrativeText"] == "Story 1."


def test_a_compaction_that_names_a_foreign_message_is_refused_and_reported(db, alice, settings):
    settings.COVEL_HISTORY_CONTEXT_TOKENS = 100
    with StandInModel(story_replies(*[f"Story {i}." for i in range(1, 6)])) as model:
        ModelSlot.objects.create(name="story", base_url=model.base_url, model="stand-in")
        session = story_session(alice, "memory-compactor")
        results = play_lines(session, ["I forge a key.", *LINES])
        last = model.requests[-1]["messages"]
    assert all(r["status"] == "committed" for r in results)
    assert not HistorySummary.objects.filter(session=session).exists()
    assert "<compacted_history>" not in json.dumps(last)
    assert "I forge a key." in [m["content"] for m in last]
    found = failures(session)
    assert found and {f["code"] for f in found} == {"compaction_refused"}
    assert "messageIds must be the oldest uncompacted messages" in found[0]["message"]
    assert found[0]["point"] == "history.compact@2" and found[0]["plugin"] == "memory-compactor"


# ---------------------------------------------------------------- prompt.history-transform@1


def test_the_history_transform_keeps_out_of_character_lines_from_the_model(db, alice):
    with StandInModel(story_replies("Noted.", "The tide turns.", "Gulls.")) as model:
        ModelSlot.objects.create(name="story", base_url=model.base_url, model="stand-in")
        session = story_session(alice, "ooc-filter")
        first = play(session, "((brb, getting tea))")
        play(session, "I watch the tide.")
        play(session, "I wave.")
        last = [m["content"] for m in model.requests[-1]["messages"]]
    # The transform took the player's aside out; the story's answer and later turns stay.
    assert "((brb, getting tea))" not in last
    assert last[1:] == ["Noted.", "I watch the tide.", "The tide turns.", "I wave."]
    # The session's log is unchanged: only the prompt's view is transformed.
    assert first["status"] == "committed"
    from sessions.models import Turn

    assert Turn.objects.filter(session=session, player_message="((brb, getting tea))").exists()
    assert failures(session) == []


def test_a_transform_with_a_refused_output_leaves_the_history_as_it_was(db, alice):
    with StandInModel(story_replies("Noise.", "Silence.")) as model:
        ModelSlot.objects.create(name="story", base_url=model.base_url, model="stand-in")
        session = story_session(alice, "ooc-filter")
        play(session, "((garble))")
        result = play(session, "I listen.")
        last = [m["content"] for m in model.requests[-1]["messages"]]
    assert result["status"] == "committed"
    assert "((garble))" in last  # unchanged history: the provider was skipped
    [failure] = failures(session)
    assert failure["code"] == "extension_output_invalid"
    assert failure["extension"] == "drop-ooc" and "messages" in failure["message"]
    story = by_runtime(result)["story-agent"]
    assert any("prompt.history-transform@1 ooc-filter/drop-ooc" in w for w in story["warnings"])


# ---------------------------------------------------------------- ui.slot@1


def slots_of(client: Any, session: Any) -> list[dict[str, Any]]:
    answer = client.get(f"/api/sessions/{session.pk}/slots")
    assert answer.status_code == 200, answer.content
    return answer.json()


def test_the_status_slot_follows_the_namespace_its_runtime_writes(db, alice, client):
    client.force_login(alice)
    session = corpus_session(alice, "status-panel")
    [empty] = slots_of(client, session)
    # No status yet: the provider hands back the previous value (none).
    assert empty["slot"] == "session.summary@1" and empty["value"] is None
    assert empty["watch"] == ["status-panel/status"]
    assert empty["providers"] == ["status-panel/status"]
    play(session, "I run to the <b>docks</b>.")
    [slot] = slots_of(client, session)
    assert slot["failures"] == []
    entries = {e["id"]: e for e in slot["value"]["entries"]}
    assert entries["turn"]["value"] == "1"
    assert entries["last-action"]["value"] == "I run to the <b>docks</b>."
    assert entries["stamina"] == {
        "id": "stamina",
        "label": "Stamina",
        "kind": "meter",
        "value": 7,
        "min": 0,
        "max": 10,
        "tone": "info",
    }
    play(session, "I run again.")
    [slot] = slots_of(client, session)
    shown = {e["id"]: e for e in slot["entries"]}
    assert shown["turn"]["value"] == "2" and shown["stamina"]["value"] == 4
    assert shown["turn"]["label"] == "Turn"  # the i18n label, in the session's locale
    # The page renders it as text: the player's markup stays escaped.
    page = client.get(f"/sessions/{session.pk}/").content.decode()
    assert 'data-slot="session.summary@1"' in page
    assert 'data-watch="status-panel/status"' in page
    assert "I run again." in page
    play(session, "I <b>rest</b>.")
    page = client.get(f"/sessions/{session.pk}/").content.decode()
    assert "I &lt;b&gt;rest&lt;/b&gt;." in page and "I <b>rest</b>." not in page


def test_a_failing_slot_provider_shows_an_error_note(db, alice, client):
    client.force_login(alice)
    session = corpus_session(alice, "status-panel")
    result = play(session, "A glitch in the lights.")
    assert result["status"] == "committed"
    [slot] = slots_of(client, session)
    assert slot["value"] is None and slot["entries"] == []
    [failure] = slot["failures"]
    assert failure["plugin"] == "status-panel" and failure["extension"] == "status"
    assert "the status panel glitched" in failure["message"]
    page = client.get(f"/sessions/{session.pk}/").content.decode()
    assert "status-panel/status could not be shown" in page
    assert "the status panel glitched" in page


def test_the_status_slot_previews_the_turns_alert_event(db, alice, client):
    client.force_login(alice)
    session = corpus_session(alice, "status-panel")
    play(session, "I run.")
    play(session, "I run.")
    low = play(session, "I run once more.")  # stamina 1: the runtime emits status.alert
    assert low["status"] == "committed"
    [committed] = slots_of(client, session)
    assert committed["preview"] == ["status.alert"]
    assert "alert" not in {e["id"] for e in committed["entries"]}  # no turn: committed data only
    answer = client.get(f"/api/sessions/{session.pk}/slots", {"turn": low["turnId"]})
    [previewed] = answer.json()
    alert = {e["id"]: e for e in previewed["entries"]}["alert"]
    assert alert["value"] == "Stamina 1: rest soon" and alert["tone"] == "warning"


def test_a_full_set_of_summaries_merges_its_oldest_two(db, alice, settings):
    from django.utils import timezone

    with StandInModel(story_replies(*[f"S{i}." for i in range(1, 6)])) as model:
        ModelSlot.objects.create(name="story", base_url=model.base_url, model="stand-in")
        session = story_session(alice, "memory-compactor")
        results = play_lines(session, ["I go."] * 4)  # the default window: no compaction
        assert not HistorySummary.objects.filter(session=session).exists()
        start = timezone.now() - timezone.timedelta(days=1)
        for i in range(8):  # the budget's maxSegments
            HistorySummary.objects.create(
                session=session,
                summary_id=f"old-{i}",
                content=f"s{i}",
                message_ids=[f"gone-{i}"],
                turn_range_start=f"t{i}",
                turn_range_end=f"t{i}",
                created_at=start + timezone.timedelta(minutes=i),
            )
        settings.COVEL_HISTORY_CONTEXT_TOKENS = 100
        play(session, "I stop.")
        envelope = model.requests[-1]["messages"][1]["content"]
    summaries = list(HistorySummary.objects.filter(session=session))
    assert len(summaries) == 8
    merged, *_, fresh = summaries
    # The merge keeps the oldest replaced summary's id, start and time; the second is gone.
    assert (merged.summary_id, merged.content) == ("old-0", "s0\ns1")
    assert merged.created_at == start and merged.message_ids == ["gone-0", "gone-1"]
    assert not HistorySummary.objects.filter(summary_id="old-1").exists()
    first = results[0]["turnId"]
    assert fresh.message_ids[:2] == [f"{first}:player", f"{first}:narrative"]
    assert envelope.startswith("<compacted_history>\ns0\ns1\n\ns2")
