"""A real turn on the bundled packages: the storyteller, word counts, the notebook without a model."""

from __future__ import annotations

import test_play_support as support
from test_play_support import by_runtime, play

from sessions.models import PluginData, RecordedExport, Session, Turn
from sessions.services import session_create

bundled_world = support.bundled_world  # a shared fixture


def test_a_new_player_plays_two_turns_without_any_model(bundled_world, alice):
    session = session_create(owner=alice, world=bundled_world)
    assert "storyteller" in session.resolved_plugins  # core, pre-selected
    assert session.phase == Session.Phase.SETUP

    first = play(session, "I open the gate.")
    runtimes = by_runtime(first)
    assert runtimes["storyteller"]["status"] == "succeeded"
    assert first["narrativeText"].startswith("You open the gate")
    assert runtimes["word-count"]["status"] == "succeeded"
    assert runtimes["word-count"]["output"]["playerWords"] == 4
    # The notebook is an agent; with no model slot it fails honestly, the turn does not.
    assert runtimes["notebook"]["status"] == "failed"
    assert runtimes["notebook"]["code"] == "no-model-configured"
    assert first["status"] == "committed"

    second = play(session, "I wait for the tide")
    totals = PluginData.objects.get(
        session=session, plugin_id="word-count", namespace="totals", key="session"
    )
    assert totals.value["turns"] == 2
    assert totals.value["playerWords"] == 4 + 5
    session.refresh_from_db()
    assert session.turn_count == 2
    assert session.phase == Session.Phase.PLAYING
    assert Turn.objects.filter(session=session, status="committed").count() == 2
    assert RecordedExport.objects.filter(session=session, record_as="word-stats").count() == 2
    assert by_runtime(second)["word-count"]["output"]["totals"]["turns"] == 2
