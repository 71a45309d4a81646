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
    from jobs.worker import job_execute

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
    from eventlog.models import SessionEvent

    kinds = list(SessionEvent.objects.filter(session=session).values_list("type", flat=True))
    assert kinds.index("settle.waiting") < kinds.index("settle-timeout") < len(kinds) - 1
    assert second["status"] == "committed"


PEEK = """export default function register(covel) {
  covel.registerRpc("peek", async () => ({ ok: true, data: { peeked: true } }));
}
"""


def test_an_rpc_action_and_a_slash_command_wait_for_settle_jobs_first(
    file_database, alice, tmp_path
):
    """An RPC action (a button, or a slash command naming it) is a player's action too: it waits
    for the session's settle jobs, up to their limit, and says what it waited for."""
    import json

    from django.test import Client

    from eventlog.models import SessionEvent
    from jobs.models import RuntimeJob

    runtime = {
        "schedule": {"stage": "post-turn", "detached": {"settle": True, "maxSettleWaitMs": 300}},
        "function": {},
    }
    manifest = {
        "contributes": {
            "actions": ["peek"],
            "commands": [{"name": "peek", "description": "Look.", "action": "peek"}],
        }
    }
    index_folder(
        write_plugin(
            tmp_path,
            "slow",
            manifest,
            runtimes={"later": (runtime, LATER)},
            files={"server/index.js": PEEK},
        )
    )
    session = session_create(owner=alice, world=make_world(owner=alice, plugins=["slow"]))
    client = Client()
    client.force_login(alice)
    url = f"/api/sessions/{session.pk}/rpc/slow/peek"
    quiet = client.post(url, json.dumps({}), content_type="application/json")
    assert quiet.status_code == 200, quiet.content
    assert quiet.json()["settle"] is None  # nothing pending: no wait at all

    job = RuntimeJob.objects.get(job_id=by_runtime(play(session, "one"))["slow/later"]["jobId"])
    # No worker runs here: the job stays queued, so the action waits its 300 ms, then goes on.
    for answer in (
        client.post(url, json.dumps({}), content_type="application/json"),
        client.post(
            f"/api/sessions/{session.pk}/commands",
            json.dumps({"text": "/peek"}),
            content_type="application/json",
        ),
    ):
        assert answer.status_code == 200, answer.content
        body = answer.json()
        assert body["value"]["data"] == {"peeked": True}
        assert body["settle"]["timedOut"] is True
        assert body["settle"]["pendingJobIds"] == [str(job.job_id)]
        assert 300 <= body["settle"]["waitedMs"] < 3000
    kinds = list(
        SessionEvent.objects.filter(session=session).order_by("seq").values_list("type", flat=True)
    )
    rpc_done = [i for i, kind in enumerate(kinds) if kind == "rpc.completed"]
    timeouts = [i for i, kind in enumerate(kinds) if kind == "settle-timeout"]
    assert len(timeouts) == 2 and timeouts[0] < rpc_done[1] and timeouts[1] < rpc_done[2]


def test_a_detached_runtime_woken_by_an_event_gets_the_event_in_its_job(
    file_database, alice, tmp_path
):
    from jobs.models import RuntimeJob
    from jobs.worker import job_execute

    ring = 'export default async () => ({ outcome: "success", value: {}, effects: { events: [{ topic: "bell.rang", payload: { times: 3 } }] } });\n'
    echo = 'export default async (ctx) => ({ outcome: "success", value: { heard: ctx.triggerEvent ?? null } });\n'
    runtimes = {
        "ring": ({"schedule": {"stage": "pre-turn"}, "function": {}}, ring),
        "echo": (
            {
                "schedule": {
                    "stage": "post-turn",
                    "trigger": {"type": "event", "topic": "bell.rang"},
                    "detached": {"maxExecutionMs": 20000},
                },
                "function": {},
            },
            echo,
        ),
    }
    index_folder(write_plugin(tmp_path, "tower", {}, runtimes=runtimes))
    session = session_create(owner=alice, world=make_world(owner=alice, plugins=["tower"]))
    deferred = by_runtime(play(session, "listen"))["tower/echo"]
    assert deferred["status"] == "deferred", deferred
    job = RuntimeJob.objects.get(job_id=deferred["jobId"])
    event = {
        "topic": "bell.rang",
        "data": {"times": 3},
        "payload": {"times": 3},
        "source": {"pluginId": "tower", "runtimeId": "tower/ring"},
    }
    assert job.inputs["triggerEvent"] == event  # frozen with the job
    assert job_execute(job_pk=job.pk) == "succeeded"
    background = Turn.objects.get(session=session, kind="background")
    assert background.results[0]["output"] == {"heard": event}
