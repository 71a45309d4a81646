"""Undo and regenerate of the last player turn (sessions/rewind.py), on real turns of the
bundled packages: the story steps back, plugin data written since the turn started goes back to
its earlier value, exports go, and a stale or busy request is refused with nothing changed."""

from __future__ import annotations

import pytest
import test_play_support as support
from django.utils import timezone
from test_play_support import play

from eventlog.errors import SessionProblem
from eventlog.models import SessionEvent
from jobs.models import RuntimeJob
from sessions.models import PluginData, RecordedExport, Turn
from sessions.rewind import turn_last_player, turn_regenerate, turn_undo
from sessions.services import session_create

bundled_world = support.bundled_world  # a shared fixture


def totals(session):
    return PluginData.objects.get(
        session=session, plugin_id="word-count", namespace="totals", key="session"
    ).value


def test_undo_rolls_back_the_last_turn_and_its_writes(bundled_world, alice):
    session = session_create(owner=alice, world=bundled_world)
    play(session, "I open the gate.")
    play(session, "I wait for the tide")
    assert totals(session)["turns"] == 2
    last = turn_last_player(session=session)
    assert last.player_message == "I wait for the tide"

    answer = turn_undo(session=session, turn_id=str(last.pk))

    session.refresh_from_db()
    assert session.turn_count == 1
    assert not Turn.objects.filter(pk=last.pk).exists()
    assert (totals(session)["turns"], totals(session)["playerWords"]) == (1, 4)
    assert RecordedExport.objects.filter(session=session, record_as="word-stats").count() == 1
    assert any(c["key"] == "session" for c in answer["restored"])
    # The page hears of it: the restored values and the undone turn.
    types = list(SessionEvent.objects.filter(session=session).values_list("type", flat=True))
    assert types[-2:] == ["plugin-data.changed", "turn.undone"]

    # Undo again: the first turn goes too, and a key it created is deleted, not left behind.
    turn_undo(session=session, turn_id=str(turn_last_player(session=session).pk))
    session.refresh_from_db()
    assert session.turn_count == 0
    assert not PluginData.objects.filter(session=session, plugin_id="word-count").exists()
    with pytest.raises(SessionProblem) as refused:
        turn_undo(session=session, turn_id=str(last.pk))
    assert refused.value.code == "no_turn"


def test_regenerate_runs_the_same_message_again_in_place(bundled_world, alice):
    session = session_create(owner=alice, world=bundled_world)
    play(session, "I open the gate.")
    first = turn_last_player(session=session)

    result = turn_regenerate(session=session, turn_id=str(first.pk))

    session.refresh_from_db()
    assert session.turn_count == 1
    assert result["status"] == "committed"
    assert result["narrativeText"].startswith("You open the gate")
    again = turn_last_player(session=session)
    assert again.pk != first.pk and again.player_message == "I open the gate."
    assert totals(session)["turns"] == 1  # counted once, not twice
    assert Turn.objects.filter(session=session).count() == 1


def test_a_stale_or_busy_undo_is_refused_and_changes_nothing(bundled_world, alice):
    session = session_create(owner=alice, world=bundled_world)
    play(session, "I open the gate.")
    first = turn_last_player(session=session)
    play(session, "I wait for the tide")

    with pytest.raises(SessionProblem) as stale:
        turn_undo(session=session, turn_id=str(first.pk))
    assert stale.value.code == "not_last_turn"
    assert totals(session)["turns"] == 2

    RuntimeJob.objects.create(
        session=session,
        plugin_id="word-count",
        runtime_id="word-count/later",
        state="queued",
        created_at=timezone.now(),
        updated_at=timezone.now(),
    )
    with pytest.raises(SessionProblem) as busy:
        turn_undo(session=session, turn_id=str(turn_last_player(session=session).pk))
    assert busy.value.code == "jobs_running"
    session.refresh_from_db()
    assert session.turn_count == 2 and totals(session)["turns"] == 2
