"""Jobs on real Celery worker processes, on the folder broker and on Redis (when it is there).

The worker is module-scoped (two pool processes); every test commits its rows
(transactional_db) so the worker sees them, and reads what the runner did from files.
"""

from __future__ import annotations

import time

import pytest
from jobs_helpers import read_lines, revoke, wait_for_state

from jobs.events import settle_timeout_event
from jobs.models import JobState, SettleWait
from jobs.services import job_cancel, send_run_job
from jobs.settle import settle_wait

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True)]

S = JobState


def _starts(tmp_path, label: str | None = None) -> list[str]:
    lines = [x for x in read_lines(tmp_path / "out" / "runs.log") if " start " in x]
    return [x for x in lines if label is None or x.split()[0] == label]


def test_a_job_runs_on_a_worker_and_commits(worker, make_job, tmp_path):
    job = make_job("sleep", sleep_ms=10, label="one")
    wait_for_state(job, "succeeded")
    assert job.result == {"slept_ms": 10, "label": "one"}
    assert job.lease_owner.startswith("main-")
    assert job.claimed_at <= job.started_at <= job.finished_at
    assert [line.split()[0] for line in read_lines(tmp_path / "out" / "commits.log")] == ["one"]


def test_a_settle_job_releases_the_wait_as_soon_as_it_commits(
    worker, broker, make_job, tmp_path, monkeypatch
):
    # No re-read on a timer during this wait: only the job's notification can end it early.
    monkeypatch.setattr("jobs.settle.RECHECK_S", 30.0)
    job = make_job("sleep", settle=True, max_settle_wait_ms=10000, sleep_ms=400, label="settle")
    outcome = settle_wait(session_id=job.session_id)
    released = time.time()
    assert not outcome.timed_out and outcome.pending_job_ids == []
    assert outcome.waited_for == [str(job.job_id)] and outcome.limit_ms == 10000
    assert outcome.waited_ms >= 350
    committed = float(read_lines(tmp_path / "out" / "commits.log")[0].split()[1])
    latency_ms = (released - committed) * 1000
    print(f"settle release latency on {broker.kind}: {latency_ms:.1f} ms")
    # The worker's notification wakes the waiter (core/notify.py: Redis, or this machine's
    # sockets on the embedded default).
    assert 0 <= latency_ms < 100, latency_ms
    wait_for_state(job, "succeeded", timeout=1)
    assert SettleWait.objects.get().timed_out is False


def test_a_slow_settle_job_releases_the_wait_at_its_limit(worker, make_job, tmp_path):
    slow = make_job("sleep", settle=True, max_settle_wait_ms=600, sleep_ms=20000, label="slow")
    # Another settle job with a larger limit: the smallest limit wins.
    other = make_job("sleep", settle=True, runtime_id="b", sleep_ms=20000, label="slow2")
    started = time.monotonic()
    outcome = settle_wait(session_id=slow.session_id)
    elapsed_ms = (time.monotonic() - started) * 1000
    assert outcome.timed_out and outcome.limit_ms == 600
    assert 600 <= outcome.waited_ms < 900 and elapsed_ms < 1000
    assert outcome.pending_job_ids == sorted([str(slow.job_id), str(other.job_id)])
    event = settle_timeout_event(outcome)
    assert event["type"] == "settle-timeout" and event["pendingJobIds"] == outcome.pending_job_ids
    assert event["waitedMs"] == outcome.waited_ms
    recorded = SettleWait.objects.get()
    assert recorded.timed_out and recorded.pending_job_ids == outcome.pending_job_ids
    # Cancelling a running job stops its runner, and its writes are never saved.
    for job in (slow, other):
        wait_for_state(job, "running")
        job_cancel(job=job, actor=job.session.owner)
    time.sleep(1.0)  # > one lease renewal: the runner has noticed
    assert read_lines(tmp_path / "out" / "commits.log") == []
    assert not [x for x in read_lines(tmp_path / "out" / "runs.log") if " end " in x]
    for job in (slow, other):
        job.refresh_from_db()
        assert (job.state, job.reason) == (S.CANCELLED, "cancelled-by-user")


def test_a_job_queued_past_max_queue_ms_times_out_without_running(worker, make_job, tmp_path):
    blocker = make_job("sleep", sleep_ms=1200, label="blocker")
    # Same session, plugin and runtime: it must wait for the blocker, longer than it may queue.
    late = make_job("sleep", max_queue_ms=300, label="late")
    wait_for_state(late, "timed_out")
    assert late.reason == "queue-deadline-exceeded"
    assert late.started_at is None and _starts(tmp_path, "late") == []
    wait_for_state(blocker, "succeeded")


def test_a_job_running_past_max_execution_ms_is_stopped(worker, make_job, tmp_path):
    # This runner ignores the stop signal: Celery's soft time limit must interrupt it.
    job = make_job("sleep", max_execution_ms=300, sleep_ms=8000, cooperative=False, label="hog")
    wait_for_state(job, "timed_out")
    assert job.reason == "execution-deadline-exceeded"
    assert (job.finished_at - job.started_at).total_seconds() < 0.8
    time.sleep(1.5)  # past the soft limit (maxExecutionMs + 1 s)
    assert read_lines(tmp_path / "out" / "commits.log") == []
    assert not [x for x in read_lines(tmp_path / "out" / "runs.log") if " end " in x]
    # The worker process survived and runs the next job.
    after = make_job("sleep", runtime_id="next", sleep_ms=0, label="after")
    wait_for_state(after, "succeeded")


def test_duplicate_deliveries_run_each_job_once(worker, make_job, tmp_path):
    jobs = [make_job("sleep", runtime_id=f"r{i}", sleep_ms=50, label=f"j{i}") for i in range(4)]
    for job in jobs:
        send_run_job(job=job)
        send_run_job(job=job)
    for job in jobs:
        wait_for_state(job, "succeeded")
    time.sleep(0.3)  # let the duplicates be delivered too
    for i in range(4):
        assert len(_starts(tmp_path, f"j{i}")) == 1


def test_a_revoked_approval_makes_a_queued_job_stale(
    worker, make_job, approved_weather, bob, tmp_path
):
    blocker = make_job("sleep", plugin_id="weather", sleep_ms=800, label="first")
    queued = make_job("sleep", plugin_id="weather", label="second")
    wait_for_state(blocker, "running")
    queued.refresh_from_db()
    assert queued.state == S.QUEUED
    revoke("weather", bob)
    wait_for_state(queued, "stale")
    assert queued.reason == "approval-revoked" and "revoked" in queued.error
    assert _starts(tmp_path, "second") == []
    # The running one re-checks before committing: its writes are dropped too.
    wait_for_state(blocker, "stale")
    assert read_lines(tmp_path / "out" / "commits.log") == []
