"""A detached job commits under the session lock: while a turn, manual run or RPC action holds
the session's turn lock, the job's commit waits (the job stays `running`; its deadline and a
cancel still apply), and it commits as soon as the lock is free."""

from __future__ import annotations

import time
from datetime import timedelta

import pytest
import test_play_support as support
from django.utils import timezone
from test_play_job_events import detached_session
from test_play_support import by_runtime, play, run_in_thread

from jobs.models import RuntimeJob
from jobs.worker import job_execute
from sessions.locks import session_lock_acquire, session_lock_release
from sessions.models import Session, Turn

file_database = support.file_database  # threads need a file, not :memory:

pytestmark = pytest.mark.django_db(transaction=True)


def job_execute_as_a_worker(job_pk: int) -> str:
    return job_execute(job_pk=job_pk, owner="worker:1")


def test_a_job_waits_for_the_action_holding_the_session_then_commits(
    file_database, alice, tmp_path
):
    session = detached_session(alice, tmp_path)
    job = RuntimeJob.objects.get(job_id=by_runtime(play(session, "ring"))["scribe/later"]["jobId"])
    token = session_lock_acquire(session_id=session.pk)  # an action is under way
    thread, outcome = run_in_thread(job_execute_as_a_worker, job.pk)
    time.sleep(0.8)
    assert "result" not in outcome, outcome
    assert RuntimeJob.objects.get(pk=job.pk).state == "running"
    assert not Turn.objects.filter(session=session, kind="background").exists()
    released = time.monotonic()
    session_lock_release(session_id=session.pk, token=token)
    thread.join(10)
    assert outcome.get("result") == "succeeded", outcome
    assert time.monotonic() - released < 1.5  # it looked again soon (back-off capped at 0.5 s)
    assert Turn.objects.filter(session=session, kind="background", status="committed").exists()


def test_a_job_whose_deadline_passes_while_it_waits_times_out_and_saves_nothing(
    file_database, alice, tmp_path
):
    session = detached_session(alice, tmp_path)
    job = RuntimeJob.objects.get(job_id=by_runtime(play(session, "ring"))["scribe/later"]["jobId"])
    RuntimeJob.objects.filter(pk=job.pk).update(max_execution_ms=600)
    token = session_lock_acquire(session_id=session.pk)
    try:
        thread, outcome = run_in_thread(job_execute_as_a_worker, job.pk)
        thread.join(10)
    finally:
        session_lock_release(session_id=session.pk, token=token)
    assert outcome.get("result") == "timed_out", outcome
    job.refresh_from_db()
    assert (job.state, job.reason) == ("timed_out", "execution-deadline-exceeded")
    assert not Turn.objects.filter(session=session, kind="background").exists()


def test_an_expired_turn_lock_does_not_hold_a_job_up(file_database, alice, tmp_path):
    """A crashed action leaves its lease behind; once it has expired nobody holds the session."""
    session = detached_session(alice, tmp_path)
    job = RuntimeJob.objects.get(job_id=by_runtime(play(session, "ring"))["scribe/later"]["jobId"])
    Session.objects.filter(pk=session.pk).update(
        lock_token="crashed", lock_expires=timezone.now() - timedelta(seconds=1)
    )
    # Were it waiting for that lease, it would time out at this deadline instead.
    RuntimeJob.objects.filter(pk=job.pk).update(max_execution_ms=3000)
    assert job_execute(job_pk=job.pk) == "succeeded"
