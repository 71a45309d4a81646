"""A turn reads its session's plugin data once and writes its events with its commit
(sessions/turn_store.py, sessions/live_events.py): what that must not change.

- a value a background commit moves after the turn read it is read again, and the turn's ops
  land on the moved value (the commit's retry);
- a slow turn still shows its start and its runtimes live, before it commits;
- a commit that fails writes none of its own events, but the turn's start and its failure,
  and frees the lease.
"""

from __future__ import annotations

import pytest
from test_play_support import (
    HOLD,
    hold_release,
    index_folder,
    make_world,
    play,
    run_in_thread,
    wait_for_event,
    write_plugin,
)

from eventlog.models import SessionEvent
from sessions.models import PluginData, Session, Turn
from sessions.services import session_create

COUNT = """export default async function handler(ctx) {
  const seen = (await ctx.pluginData.get("tally", "count")) ?? 0;
  await ctx.pluginData.update("tally", "count", [{ op: "inc", path: "", by: 1 }]);
  return { outcome: "success", value: { seen } };
}
"""


def counting_session(tmp_path, alice, *, hold: bool = False) -> Session:
    runtimes = {"count": ({"schedule": {"stage": "pre-turn"}, "function": {}}, COUNT)}
    if hold:
        runtimes["hold"] = (
            {"schedule": {"stage": "post-turn"}, "function": {"timeoutMs": 20000}},
            HOLD,
        )
    index_folder(write_plugin(tmp_path, "tally", {}, runtimes=runtimes))
    return session_create(owner=alice, world=make_world(owner=alice, plugins=["tally"]))


def events_of(session: Session) -> list[tuple[int, str, str | None]]:
    return [
        (e.seq, e.type, e.payload.get("turnId"))
        for e in SessionEvent.objects.filter(session=session).order_by("seq")
    ]


def stored_count(session: Session):
    return PluginData.objects.get(session=session, plugin_id="tally", key="count").value


def test_a_value_moved_after_the_turn_read_it_is_read_again_at_the_commit(
    db, alice, tmp_path, monkeypatch
):
    session = counting_session(tmp_path, alice)
    play(session, "one")
    assert stored_count(session) == 1

    from sessions import turn_commit

    before_commit = turn_commit.hooks.pre_state_commit

    def background_commit(state):
        before_commit(state)
        # Another writer (a detached job's commit) moves the row after the turn read it.
        row = PluginData.objects.get(session=session, plugin_id="tally", key="count")
        row.value = 10
        row.save()

    monkeypatch.setattr(turn_commit.hooks, "pre_state_commit", background_commit)
    result = play(session, "two")
    assert result["status"] == "committed"
    count = next(r for r in result["runtimes"] if r["runtime"] == "tally/count")
    assert count["output"] == {"seen": 1}  # what the turn read
    assert stored_count(session) == 11  # its inc landed on the moved value, not on 1
    turn = Turn.objects.get(session=session, number=2)
    assert ["tally", "tally", "count", 10] in turn.undo  # the value it replaced: re-read


@pytest.mark.django_db(transaction=True)
def test_a_slow_turn_shows_its_start_live_and_every_event_once(alice, tmp_path):
    session = counting_session(tmp_path, alice, hold=True)
    thread, outcome = run_in_thread(play, session, "wait")
    try:
        wait_for_event(
            session,
            lambda e: e.type == "runtime.status" and e.payload.get("status") == "running",
        )
        # Written while the turn still runs: the flusher wrote what waited 0.25 s.
        assert Turn.objects.get(session=session).status == "running"
        assert [t for _, t, _ in events_of(session)][1] == "turn.started"
    finally:
        hold_release(session)
        thread.join(30)
    assert "error" not in outcome, outcome
    events = events_of(session)
    assert [seq for seq, _, _ in events] == list(range(1, len(events) + 1))
    kinds = [t for _, t, _ in events]
    assert kinds.count("turn.started") == 1 and kinds.count("turn.committed") == 1
    assert kinds.index("turn.started") < kinds.index("plugin-data.changed")
    assert kinds[-1] == "turn.committed"
    assert Session.objects.get(pk=session.pk).lock_token == ""


@pytest.mark.django_db(transaction=True)
def test_a_failed_commit_tells_the_start_and_the_failure_only(alice, tmp_path, monkeypatch):
    session = counting_session(tmp_path, alice)
    from sessions.turn_store import DatabaseStore

    def broken(self, turn):
        raise RuntimeError("the turn row could not be saved")

    monkeypatch.setattr(DatabaseStore, "turn_save", broken)
    with pytest.raises(RuntimeError):
        play(session, "doomed")
    kinds = [t for _, t, _ in events_of(session)]
    turn_events = kinds[kinds.index("turn.started") :]
    assert turn_events[-1] == "turn.failed"
    assert "plugin-data.changed" not in turn_events and "turn.committed" not in turn_events
    assert not PluginData.objects.filter(session=session, plugin_id="tally").exists()
    assert Turn.objects.get(session=session).status == "failed"
    assert Session.objects.get(pk=session.pk).lock_token == ""  # the lease was freed
