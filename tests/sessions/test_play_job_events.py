"""What the session's event stream says about background jobs: runtime.deferred when a job is
queued, job-status.updated when it starts and when it ends, and the background turn's own events
only once it commits. Background activations (manual or event, `schedule.background: true`)
become jobs too, and every job id handed out is the one the jobs API takes."""

from __future__ import annotations

import json

import pytest
import test_play_support as support
from django.test import Client
from test_play_support import by_runtime, index_folder, make_world, play, write_plugin

from eventlog.models import SessionEvent
from jobs.models import RuntimeJob
from jobs.services import job_cancel
from jobs.worker import job_execute
from sessions.models import Turn
from sessions.services import session_create

LATER = (
    'export default async (ctx) => ({ outcome: "success", value: { heard: ctx.playerMessage } });\n'
)
# Rings the bell: emits bell.rang in the pre-turn stage.
RING = (
    'export default async () => ({ outcome: "success", value: {}, '
    'effects: { events: [{ topic: "bell.rang", payload: {} }] } });\n'
)
BROKEN = 'export default async () => { throw new Error("the ink ran dry"); };\n'
file_database = support.file_database  # a shared fixture: threads need a file, not :memory:

DETACHED = {"schedule": {"stage": "post-turn", "detached": True}, "function": {}}


def events(session, *, after: int = 0) -> list[tuple[str, dict]]:
    rows = SessionEvent.objects.filter(session=session, seq__gt=after).order_by("seq")
    return [(row.type, row.payload) for row in rows]


def last_seq(session) -> int:
    return (
        SessionEvent.objects.filter(session=session)
        .order_by("-seq")
        .values_list("seq", flat=True)
        .first()
        or 0
    )


def detached_session(alice, tmp_path, code: str = LATER):
    index_folder(write_plugin(tmp_path, "scribe", {}, runtimes={"later": (DETACHED, code)}))
    return session_create(owner=alice, world=make_world(owner=alice, plugins=["scribe"]))


def test_a_detached_job_is_announced_queued_running_and_succeeded(db, alice, tmp_path):
    session = detached_session(alice, tmp_path)
    result = play(session, "ring the bell")
    job_id = by_runtime(result)["scribe/later"]["jobId"]
    job = RuntimeJob.objects.get(job_id=job_id)  # the public id, as the jobs API takes it
    assert result["commit"]["jobs"] == [job_id]
    deferred = [p for t, p in events(session) if t == "runtime.deferred"]
    assert [(p["jobId"], p["runtimeId"], p["sourceTurnId"]) for p in deferred] == [
        (job_id, "scribe/later", result["turnId"])
    ]
    assert not [t for t, _ in events(session) if t == "job-status.updated"]  # nothing ran yet

    mark = last_seq(session)
    assert job_execute(job_pk=job.pk) == "succeeded"
    background = Turn.objects.get(session=session, kind="background")
    after = events(session, after=mark)
    kinds = [(t, p.get("state") or p.get("status")) for t, p in after if t != "plugin-data.changed"]
    assert kinds == [
        ("job-status.updated", "running"),
        ("runtime.status", "succeeded"),  # the background turn's, held until its commit
        ("turn.committed", "committed"),
        ("job-status.updated", "succeeded"),
    ]
    statuses = [p for t, p in after if t == "job-status.updated"]
    assert {p["jobId"] for p in statuses} == {job_id}
    assert statuses[-1]["reason"] is None and statuses[-1]["error"] is None
    assert after[1][1]["turnId"] == str(background.pk)


def test_a_failed_job_announces_its_error_and_none_of_its_turn_events(db, alice, tmp_path):
    session = detached_session(alice, tmp_path, code=BROKEN)
    job_id = by_runtime(play(session, "write"))["scribe/later"]["jobId"]
    mark = last_seq(session)
    assert job_execute(job_pk=RuntimeJob.objects.get(job_id=job_id).pk) == "failed"
    after = events(session, after=mark)
    assert [(t, p["state"]) for t, p in after] == [
        ("job-status.updated", "running"),
        ("job-status.updated", "failed"),
    ]
    assert "the ink ran dry" in after[-1][1]["error"]
    assert not Turn.objects.filter(session=session, kind="background").exists()


def test_a_cancelled_job_is_announced(db, alice, tmp_path):
    session = detached_session(alice, tmp_path)
    job = RuntimeJob.objects.get(job_id=by_runtime(play(session, "wait"))["scribe/later"]["jobId"])
    mark = last_seq(session)
    job_cancel(job=job, actor=alice)
    [(kind, payload)] = events(session, after=mark)
    assert (kind, payload["state"], payload["reason"]) == (
        "job-status.updated",
        "cancelled",
        "cancelled-by-user",
    )
    assert payload["error"] == "cancelled by alice"


def test_an_event_activation_with_background_true_becomes_a_job(db, alice, tmp_path):
    runtimes = {
        "ring": ({"schedule": {"stage": "pre-turn"}, "function": {}}, RING),
        "answer": (
            {
                "schedule": {
                    "trigger": {"type": "event", "topic": "bell.rang"},
                    "background": True,
                },
                "function": {},
            },
            LATER,
        ),
    }
    index_folder(write_plugin(tmp_path, "bells", {}, runtimes=runtimes))
    session = session_create(owner=alice, world=make_world(owner=alice, plugins=["bells"]))
    result = by_runtime(play(session, "listen"))
    answer = result["bells/answer"]
    assert (answer["status"], answer["activation"]) == ("deferred", "event")
    job = RuntimeJob.objects.get(job_id=answer["jobId"])
    assert (job.plugin_id, job.runtime_id, job.settle) == ("bells", "bells/answer", False)
    assert job_execute(job_pk=job.pk) == "succeeded"
    background = Turn.objects.get(session=session, kind="background")
    assert background.results[0]["output"] == {"heard": "listen"}


def test_a_runtime_without_background_still_runs_inside_the_turn_on_its_event(db, alice, tmp_path):
    runtimes = {
        "ring": ({"schedule": {"stage": "pre-turn"}, "function": {}}, RING),
        "answer": (
            {"schedule": {"trigger": {"type": "event", "topic": "bell.rang"}}, "function": {}},
            LATER,
        ),
    }
    index_folder(write_plugin(tmp_path, "bells", {}, runtimes=runtimes))
    session = session_create(owner=alice, world=make_world(owner=alice, plugins=["bells"]))
    answer = by_runtime(play(session, "listen"))["bells/answer"]
    assert answer["status"] == "succeeded" and answer["jobId"] is None
    assert not RuntimeJob.objects.filter(session=session).exists()


def manual_background_run(alice, tmp_path, code: str):
    """A session of a package whose runtime `slow/sweep` runs manually in the background; the
    session, Alice's client and the runtime's run URL."""
    runtime = {"schedule": {"trigger": {"type": "manual"}, "background": True}, "function": {}}
    index_folder(write_plugin(tmp_path, "slow", {}, runtimes={"sweep": (runtime, code)}))
    session = session_create(owner=alice, world=make_world(owner=alice, plugins=["slow"]))
    client = Client()
    client.force_login(alice)
    return session, client, f"/api/sessions/{session.pk}/runtimes/slow/sweep/run"


def test_a_manual_background_run_answers_202_with_the_jobs_api_id(db, alice, charlie, tmp_path):
    session, client, url = manual_background_run(alice, tmp_path, LATER)
    answer = client.post(url, json.dumps({"payload": {"room": 3}}), content_type="application/json")
    assert answer.status_code == 202, answer.content
    body = answer.json()
    assert body["status"] == "accepted" and set(body) == {"jobId", "status"}
    job = client.get(f"/api/jobs/{body['jobId']}")
    assert job.status_code == 200 and job.json()["state"] == "queued"
    assert job.json()["runtimeId"] == "slow/sweep"
    [deferred] = [p for t, p in events(session) if t == "runtime.deferred"]
    assert deferred["jobId"] == body["jobId"] and deferred["sourceTurnId"] is None
    # Charlie may not start jobs in Alice's session.
    other = Client()
    other.force_login(charlie)
    refused = other.post(url, json.dumps({"payload": {}}), content_type="application/json")
    assert refused.status_code in (403, 404)
    assert RuntimeJob.objects.filter(session=session).count() == 1


def test_a_manual_background_run_hands_its_payload_to_the_runtime(db, alice, tmp_path):
    """The payload accepted with the 202 is frozen on the job and reaches ctx.manualPayload when
    the job runs, and again when it is retried."""
    from jobs.services import job_retry

    echo = "export default async (ctx) => ({ outcome: 'success', value: { got: ctx.manualPayload } });\n"
    session, client, url = manual_background_run(alice, tmp_path, echo)
    answer = client.post(url, json.dumps({"payload": {"room": 3}}), content_type="application/json")
    job = RuntimeJob.objects.get(job_id=answer.json()["jobId"])
    assert job_execute(job_pk=job.pk) == "succeeded"
    turn = Turn.objects.get(session=session, kind="background")
    assert turn.results[0]["output"] == {"got": {"room": 3}}
    RuntimeJob.objects.filter(pk=job.pk).update(state="failed")  # as if it had failed
    retry = job_retry(job=job, actor=alice)
    assert job_execute(job_pk=retry.pk) == "succeeded"
    retry.refresh_from_db()
    assert retry.result["output"] == {"got": {"room": 3}}


@pytest.mark.django_db(transaction=True)
def test_concurrent_event_writers_each_get_their_own_seq(file_database, alice, tmp_path):
    """Two threads appending to one session's stream at once: no error, no gap, no duplicate."""
    import threading

    from eventlog.services import event_append

    session = detached_session(alice, tmp_path)
    start = last_seq(session)
    barrier = threading.Barrier(2)
    problems: list[BaseException] = []

    def writer(name: str) -> None:
        from django.db import connections

        try:
            barrier.wait()
            for i in range(25):
                event_append(session_id=session.pk, type="test.race", payload={"w": name, "i": i})
        except BaseException as exc:  # reported below
            problems.append(exc)
        finally:
            connections.close_all()

    threads = [threading.Thread(target=writer, args=(n,)) for n in "ab"]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert problems == []
    seqs = list(
        SessionEvent.objects.filter(session=session, type="test.race")
        .order_by("seq")
        .values_list("seq", flat=True)
    )
    assert seqs == list(range(start + 1, start + 51))


def test_the_commit_rechecks_staleness_under_the_session_row_lock(db, alice, tmp_path):
    """The commit's staleness query locks the session row (PostgreSQL) before any write, so a
    session cannot end between the check and the background turn."""
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    session = detached_session(alice, tmp_path)
    job = RuntimeJob.objects.get(job_id=by_runtime(play(session, "ring"))["scribe/later"]["jobId"])
    with CaptureQueriesContext(connection) as queries:
        assert job_execute(job_pk=job.pk) == "succeeded"
    sql = [q["sql"] for q in queries.captured_queries]
    committing = next(i for i, q in enumerate(sql) if "'committing'" in q and "UPDATE" in q)
    turn_insert = next(i for i, q in enumerate(sql) if q.startswith('INSERT INTO "play_turn"'))
    checks = [i for i, q in enumerate(sql) if 'LEFT JOIN "catalogue_package"' in q]
    assert len(checks) == 2  # after the claim, and in the commit
    claim_check, commit_check = checks
    assert committing < commit_check < turn_insert
    locked = "FOR NO KEY UPDATE OF s" in sql[commit_check]
    assert locked == (connection.vendor == "postgresql")
    assert "FOR UPDATE" not in sql[claim_check]
    # Every lock on the session row takes the one mode, NO KEY UPDATE: a stronger one (FOR
    # UPDATE) would wait for other transactions' foreign-key checks while they wait for it.
    session_locks = [q for q in sql if '"play_session"' in q and "FOR " in q and "UPDATE" in q]
    if connection.vendor == "postgresql":
        assert session_locks and all("FOR NO KEY UPDATE" in q for q in session_locks)
    else:
        assert session_locks == []  # SQLite: the transaction's write lock does it


@pytest.mark.django_db(transaction=True)
def test_an_event_written_while_a_commit_holds_the_session_row_waits_instead_of_deadlocking(
    file_database, alice, tmp_path
):
    """A turn's or a job's commit locks the session row, then writes its events. Another writer
    (a job starting, a cancel) that appends an event meanwhile must wait for that commit, not
    hold a seq in the unique index and deadlock with it (PostgreSQL detected exactly that when
    two workers ran jobs of one session)."""
    import threading
    import time

    from django.db import connections, transaction

    from eventlog.services import event_append
    from sessions.models import Session

    session = detached_session(alice, tmp_path)
    start = last_seq(session)
    holding = threading.Event()
    problems: list[BaseException] = []

    def commit_holding_the_row() -> None:
        try:
            with transaction.atomic():
                Session.objects.select_for_update().get(pk=session.pk)
                holding.set()
                time.sleep(0.5)  # the other writer arrives while the row is held
                event_append(session_id=session.pk, type="test.commit", payload={})
        except BaseException as exc:  # reported below
            problems.append(exc)
        finally:
            connections.close_all()

    def other_writer() -> None:
        try:
            holding.wait(10)
            with transaction.atomic():
                event_append(session_id=session.pk, type="test.other", payload={})
        except BaseException as exc:  # reported below
            problems.append(exc)
        finally:
            connections.close_all()

    threads = [
        threading.Thread(target=commit_holding_the_row),
        threading.Thread(target=other_writer),
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(30)
    assert problems == []
    rows = list(
        SessionEvent.objects.filter(session=session, seq__gt=start)
        .order_by("seq")
        .values_list("seq", "type")
    )
    assert rows == [(start + 1, "test.commit"), (start + 2, "test.other")]
