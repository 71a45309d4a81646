"""Workers that die and workers that compete: leases, the reaper, and never running twice."""

from __future__ import annotations

import time

import pytest
from jobs_helpers import read_lines, wait_for_state
from jobs_test_runners import committed_counts

from jobs.models import JobState, RuntimeJob
from jobs.services import send_run_job
from jobs.settle import settle_wait

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True)]

S = JobState


def test_a_killed_worker_s_job_runs_again_on_another_worker_and_commits_once(
    spawn_worker, make_job, tmp_path
):
    victim = spawn_worker(name="victim", concurrency=1)
    job = make_job("sleep", settle=True, max_settle_wait_ms=30000, sleep_ms=2000, label="doomed")
    wait_for_state(job, "running")
    assert job.lease_owner.startswith("victim-")
    deadline = time.monotonic() + 15
    while not read_lines(tmp_path / "out" / "runs.log"):  # its runner has begun
        assert time.monotonic() < deadline, "the victim never started the runner"
        time.sleep(0.01)
    victim.kill()
    killed_at = time.monotonic()
    # The survivor runs Celery beat, whose reaper entry finds the lease expired.
    spawn_worker(name="survivor", concurrency=1, beat=True)
    outcome = settle_wait(session_id=job.session_id)
    finished_after = time.monotonic() - killed_at
    job.refresh_from_db()
    assert (job.state, job.reruns) == (S.SUCCEEDED, 1)
    assert job.lease_owner.startswith("survivor-")
    assert not outcome.timed_out and outcome.waited_for == [str(job.job_id)]
    # The survivor's start, lease 1.5 s, one beat interval and the 2 s run: below the wait limit.
    assert finished_after < 20, finished_after
    # It started twice (the victim's run was cut short) and committed once.
    starts = [x for x in read_lines(tmp_path / "out" / "runs.log") if x.startswith("doomed start")]
    assert len(starts) == 2
    assert [x.split()[0] for x in read_lines(tmp_path / "out" / "commits.log")] == ["doomed"]


def test_a_worker_killed_under_load_loses_no_job_and_runs_none_twice(
    spawn_worker, make_job, tmp_path
):
    spawn_worker(name="keeper", concurrency=1, beat=True)
    victim = spawn_worker(name="victim", concurrency=2)
    jobs = [make_job("sleep", runtime_id=f"r{i}", sleep_ms=300, label=f"j{i}") for i in range(30)]
    deadline = time.monotonic() + 20
    while not RuntimeJob.objects.filter(
        state=S.RUNNING, lease_owner__startswith="victim-"
    ).exists():
        assert time.monotonic() < deadline, "the victim never ran a job"
        time.sleep(0.01)
    victim.kill()
    spawn_worker(name="helper", concurrency=2)
    for job in jobs:
        wait_for_state(job, "succeeded", timeout=60)
    # Each effect exactly once, counted in the database: a worker killed inside its commit may
    # leave a line in commits.log (a file is not rolled back), never a counted commit.
    assert committed_counts(jobs[0].session_id) == {f"j{i}": 1 for i in range(30)}
    handed_on = RuntimeJob.objects.filter(pk__in=[j.pk for j in jobs], reruns__gt=0)
    assert handed_on.exists()  # the victim's jobs were re-run, not lost
    assert not handed_on.filter(lease_owner__startswith="victim-").exists()


def test_two_workers_never_run_a_job_twice_and_keep_each_key_in_order(
    spawn_worker, make_job, tmp_path
):
    spawn_worker(name="alpha", concurrency=2)
    spawn_worker(name="beta", concurrency=2)
    jobs = [make_job("sleep", runtime_id=f"r{i}", sleep_ms=20, label=f"p{i}") for i in range(24)]
    # Six jobs of one key must run one after another, in the order they were created.
    ordered = [
        make_job("sleep", runtime_id="ordered", sleep_ms=30, label=f"o{i}") for i in range(6)
    ]
    for job in jobs + ordered:
        send_run_job(job=job)  # every message delivered twice
    for job in jobs + ordered:
        wait_for_state(job, "succeeded", timeout=30)
    time.sleep(0.3)
    starts = [x.split() for x in read_lines(tmp_path / "out" / "runs.log") if " start " in x]
    labels = [parts[0] for parts in starts]
    assert sorted(labels) == sorted([f"p{i}" for i in range(24)] + [f"o{i}" for i in range(6)])
    owners = set(RuntimeJob.objects.values_list("lease_owner", flat=True))
    assert {owner.split("-")[0] for owner in owners} == {"alpha", "beta"}
    events = [x.split() for x in read_lines(tmp_path / "out" / "runs.log")]
    sequence = [(parts[0], parts[1]) for parts in events if parts[0].startswith("o")]
    expected = [(f"o{i}", step) for i in range(6) for step in ("start", "end")]
    assert sequence == expected


def test_an_action_waits_only_for_its_own_session(spawn_worker, make_job, alice):
    from sessions.models import Session

    spawn_worker(name="gamma", concurrency=2)
    mine = make_job("sleep", settle=True, sleep_ms=300, label="mine")
    other_session = Session.objects.create(world=mine.session.world, owner=alice, title="Other")
    theirs = make_job("sleep", session=other_session, settle=True, sleep_ms=4000, label="theirs")
    outcome = settle_wait(session_id=mine.session_id, record=False)
    assert not outcome.timed_out and outcome.waited_for == [str(mine.job_id)]
    assert outcome.waited_ms < 3000
    theirs.refresh_from_db()
    assert theirs.state in (S.QUEUED, S.CLAIMED, S.RUNNING)
