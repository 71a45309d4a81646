"""Detached runtimes: the turn defers them as jobs created in its commit, and the "runtime" job
runner (sessions.background.run_detached) commits them later as a background turn."""

from __future__ import annotations

import pytest
import test_play_support as support
from test_play_support import by_runtime, index_folder, make_world, play, write_plugin

from sessions.models import PluginData, Turn
from sessions.services import session_create

file_database = support.file_database  # a shared fixture

pytestmark = pytest.mark.django_db(transaction=True)

LATER = """export default async function handler(ctx) {
  await ctx.pluginData.update("log", "later", [{ op: "append", value: ctx.inputs.turn.value.playerMessage }]);
  return { outcome: "success", value: { heard: ctx.inputs.turn.value.playerMessage } };
}
"""


def test_a_detached_runtime_is_deferred_then_committed_as_a_background_turn(
    file_database, alice, tmp_path
):
    from jobs.models import RuntimeJob
    from jobs.services import job_execute

    runtime = {
        "schedule": {"stage": "post-turn", "detached": {"maxExecutionMs": 20000}},
        "io": {"inputs": {"turn": {"from": {"kernel": "turn-digest@1"}}}},
        "function": {},
    }
    index_folder(write_plugin(tmp_path, "slow", {}, runtimes={"later": (runtime, LATER)}))
    session = session_create(owner=alice, world=make_world(owner=alice, plugins=["slow"]))
    result = play(session, "ring the bell")
    deferred = by_runtime(result)["slow/later"]
    assert deferred["status"] == "deferred" and deferred["jobId"]
    job = RuntimeJob.objects.get(job_id=deferred["jobId"])
    assert job.source_turn == result["turnId"]
    assert job.inputs["inputs"]["turn"]["value"]["playerMessage"] == "ring the bell"
    assert not PluginData.objects.filter(session=session, namespace="log").exists()  # not yet

    assert job_execute(job_pk=job.pk) == "succeeded"
    job.refresh_from_db()
    assert job.state == "succeeded"
    assert PluginData.objects.get(
        session=session, plugin_id="slow", namespace="log", key="later"
    ).value == ["ring the bell"]
    background = Turn.objects.get(session=session, kind="background")
    assert str(background.source_turn_id) == result["turnId"]
    assert background.status == "committed"
    assert background.results[0]["output"] == {"heard": "ring the bell"}
    session.refresh_from_db()
    assert session.turn_count == 1  # background commits do not advance the logical turn


def test_the_next_action_waits_for_a_settle_job_then_records_the_timeout(
    file_database, alice, tmp_path
):
    from jobs.models import RuntimeJob

    runtime = {
        "schedule": {"stage": "post-turn", "detached": {"settle": True, "maxSettleWaitMs": 300}},
        "io": {"inputs": {"turn": {"from": {"kernel": "turn-digest@1"}}}},
        "function": {},
    }
    index_folder(write_plugin(tmp_path, "slow", {}, runtimes={"later": (runtime, LATER)}))
    session = session_create(owner=alice, world=make_world(owner=alice, plugins=["slow"]))
    first = play(session, "one")
    job = RuntimeJob.objects.get(job_id=by_runtime(first)["slow/later"]["jobId"])
    assert job.settle is True and job.max_settle_wait_ms == 300
    # No worker runs here: the job stays queued, so the next action waits its 300 ms, then goes on.
    second = play(session, "two")
    settle = second["commit"]["settle"]
    assert settle["timedOut"] is True
    assert settle["pendingJobIds"] == [str(job.job_id)]
    assert 300 <= settle["waitedMs"] < 3000
    from sessions.models import SessionEvent

    kinds = list(SessionEvent.objects.filter(session=session).values_list("type", flat=True))
    assert kinds.index("settle.waiting") < kinds.index("settle-timeout") < len(kinds) - 1
    assert second["status"] == "committed"
