"""One turn at a time per session: a second action while one runs is refused (409), never interleaved."""

from __future__ import annotations

import pytest
import test_play_support as support
from django.test import Client
from test_play_support import (
    HOLD,
    by_runtime,
    hold_release,
    index_folder,
    make_world,
    play,
    run_in_thread,
    wait_for_event,
    write_plugin,
)

from sessions.errors import SessionBusy
from sessions.models import Turn
from sessions.services import session_create
from sessions.turns import TurnRequest, turn_run

file_database = support.file_database  # a shared fixture

pytestmark = pytest.mark.django_db(transaction=True)


def held_session(tmp_path, alice):
    runtimes = {
        "hold": ({"schedule": {"stage": "post-turn"}, "function": {"timeoutMs": 20000}}, HOLD)
    }
    index_folder(write_plugin(tmp_path, "gate", {}, runtimes=runtimes))
    return session_create(owner=alice, world=make_world(owner=alice, plugins=["gate"]))


def running(event) -> bool:
    return (
        event.type == "runtime.status"
        and event.payload.get("runtime") == "gate/hold"
        and event.payload.get("status") == "running"
    )


def release(session) -> None:
    hold_release(session)


def test_a_second_action_while_a_turn_runs_gets_session_busy(file_database, alice, tmp_path):
    session = held_session(tmp_path, alice)
    first, outcome = run_in_thread(play, session, "first")
    try:
        wait_for_event(session, running)
        with pytest.raises(SessionBusy) as refused:
            turn_run(session=session, request=TurnRequest(message="second"), wait=0.3)
        assert refused.value.code == "session_busy"
        # The HTTP answer is the same refusal: 409 with a stable code.
        client = Client()
        client.force_login(alice)
        answer = client.post(
            f"/api/sessions/{session.pk}/actions",
            {"message": "third"},
            content_type="application/json",
        )
        assert answer.status_code == 409
        assert answer.json()["code"] == "session_busy"
        assert answer.json()["detail"]
    finally:
        release(session)
        first.join(30)
    assert "error" not in outcome, outcome
    assert by_runtime(outcome["result"])["gate/hold"]["status"] == "succeeded"
    # Only the first action made a turn; nothing of the refused ones was recorded.
    assert list(Turn.objects.filter(session=session).values_list("player_message", flat=True)) == [
        "first"
    ]


def test_an_action_that_waits_briefly_runs_after_the_first_one_and_never_interleaves(
    file_database, alice, tmp_path
):
    session = held_session(tmp_path, alice)
    release(session)  # no holding: the first turn ends on its own, soon
    first, one = run_in_thread(play, session, "first")
    second, two = run_in_thread(
        lambda: turn_run(session=session, request=TurnRequest(message="second"), wait=30)
    )
    first.join(30)
    second.join(30)
    assert "error" not in one and "error" not in two, (one, two)
    turns = list(Turn.objects.filter(session=session).order_by("created_at"))
    assert sorted(t.number for t in turns) == [1, 2]
    assert all(t.status == "committed" for t in turns)
    # Never interleaved: each turn's events lie between its start and its commit.
    from eventlog.models import SessionEvent

    spans = {}
    for event in SessionEvent.objects.filter(session=session).order_by("seq"):
        turn_id = event.payload.get("turnId")
        if turn_id:
            spans.setdefault(turn_id, []).append(event.seq)
    (a, b) = sorted(spans.values(), key=min)
    assert max(a) < min(b)
