"""A process killed with SIGKILL in the middle of a turn frees the session within 10 s.

The holder is a real process running a real turn (a package whose runtime writes plugin data,
then waits): the test kills it while the runtime waits, then takes the session's turn lock as
the next action would. The dead process's turn is then `failed` with a turn.failed event after
its turn.started, and nothing it wrote is saved (a turn commits in one transaction).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "sessions"))

import test_play_support as support  # noqa: E402
from stream_servers import database_url  # noqa: E402

from eventlog.models import SessionEvent  # noqa: E402
from sessions.errors import SessionBusy  # noqa: E402
from sessions.locks import LOCK_LEASE_SECONDS, session_lock_acquire, session_lock_release  # noqa: E402
from sessions.models import PluginData, Session, Turn  # noqa: E402
from sessions.services import session_create  # noqa: E402

REPO = Path(__file__).resolve().parents[2]
file_database = support.file_database

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.slow]

HANDLER = """
export default async function handler(ctx) {
  await ctx.pluginData.set("notes", "last", { text: String(ctx.playerMessage ?? "") });
  await new Promise((resolve) => setTimeout(resolve, 45000));
  return { outcome: "success", value: {} };
}
"""

HOLDER = """
import django, sys
django.setup()
from sessions.models import Session
from sessions.turns import TurnRequest, turn_run
turn_run(session=Session.objects.get(pk=sys.argv[1]), request=TurnRequest(message="left unfinished"))
"""


def slow_session(alice, tmp_path: Path) -> Session:
    folder = support.write_plugin(
        tmp_path,
        "slowpoke",
        {
            "contributes": {
                "data": {
                    "notes": {
                        "schema": "./schemas/notes.schema.json",
                        "description": "What the player said last.",
                    }
                }
            },
            "runtime": {
                "description": "Writes a note, then waits a long time.",
                "schedule": {
                    "stage": "post-turn",
                    "every": 1,
                    "trigger": {"type": "auto", "startTurn": 1},
                },
                "function": {"timeoutMs": 60000},
                "effects": {"writes": ["plugin-data:self:notes"]},
            },
        },
        handler=HANDLER,
        files={"schemas/notes.schema.json": json.dumps({"type": "object"})},
    )
    support.index_folder(folder)
    world = support.make_world(owner=alice, plugins=["slowpoke"])
    return session_create(owner=alice, world=world)


def test_a_killed_holder_frees_the_session_within_10_s_and_its_turn_fails(
    file_database, alice, tmp_path
):
    session = slow_session(alice, tmp_path)
    env = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "config.settings",
        "DATABASE_URL": database_url(),
        "DB_CONN_MAX_AGE": "0",
    }
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLDER, str(session.pk)],
        cwd=REPO,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
    )
    try:
        deadline = time.monotonic() + 60
        while not Session.objects.filter(pk=session.pk).exclude(lock_token="").exists():
            assert holder.poll() is None, holder.stdout.read().decode()[-3000:]
            assert time.monotonic() < deadline, "the holder never took the lock"
            time.sleep(0.1)
        first = Session.objects.get(pk=session.pk).lock_expires
        # Alive, the holder keeps its short lease: it is renewed past its first expiry.
        time.sleep(LOCK_LEASE_SECONDS + 1.5)
        assert holder.poll() is None, holder.stdout.read().decode()[-3000:]
        row = Session.objects.get(pk=session.pk)
        assert row.lock_token and row.lock_expires > first
        with pytest.raises(SessionBusy):
            session_lock_acquire(session_id=session.pk, wait=0.2)
        turn = Turn.objects.get(session=session)
        assert turn.status == "running"
        holder.send_signal(signal.SIGKILL)
        holder.wait(10)
        killed = time.monotonic()
    finally:
        if holder.poll() is None:
            holder.kill()
            holder.wait(10)
    token = session_lock_acquire(session_id=session.pk, wait=15)
    freed_after = time.monotonic() - killed
    session_lock_release(session_id=session.pk, token=token)
    assert freed_after <= 10, freed_after

    turn.refresh_from_db()
    assert turn.status == "failed"
    assert "stopped before it committed" in turn.error
    assert turn.finished_at is not None
    types = [
        (e.type, e.payload.get("turnId"))
        for e in SessionEvent.objects.filter(session_id=session.pk).order_by("seq")
    ]
    started = types.index(("turn.started", str(turn.pk)))
    assert types.index(("turn.failed", str(turn.pk))) > started
    assert ("turn.committed", str(turn.pk)) not in types
    # The note its runtime wrote before the kill was never committed.
    assert not PluginData.objects.filter(session=session).exists()
    assert json.dumps(types)  # the events are plain JSON (readable by the stream)
