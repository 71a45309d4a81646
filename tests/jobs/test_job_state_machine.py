"""The job's state machine, claiming, deadlines and staleness, run in-process (no broker)."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone
from jobs_helpers import read_lines
from jobs_test_runners import TEST_RUNNERS

from jobs.errors import InvalidTransition, JobOptionsError
from jobs.models import JobReason, JobState, RuntimeJob
from jobs.services import (
    ALLOWED_TRANSITIONS,
    job_cancel,
    job_options_clean,
    job_options_from_schedule,
    job_reap_orphans,
    job_time_out_queued,
    job_transition,
)
from jobs.worker import Claim, job_claim, job_execute

pytestmark = pytest.mark.django_db

S = JobState


@pytest.fixture(autouse=True)
def test_runners(settings):
    settings.COVEL_JOB_RUNNERS = {**settings.COVEL_JOB_RUNNERS, **TEST_RUNNERS}
    settings.COVEL_JOB_LEASE_SECONDS = 1.5


@pytest.fixture
def sent(monkeypatch):
    """Messages the services would hand to Celery (kept here instead of a broker)."""
    calls: list[tuple[int, float | None]] = []
    monkeypatch.setattr(
        "jobs.services.send_run_job",
        lambda *, job, countdown=None: calls.append((job.pk, countdown)),
    )
    return calls


def _force(job: RuntimeJob, state: str, **fields) -> RuntimeJob:
    RuntimeJob.objects.filter(pk=job.pk).update(state=state, **fields)
    job.refresh_from_db()
    return job


def test_every_transition_outside_the_table_is_refused(make_job):
    job = make_job("noop")
    for from_state in S.values:
        for to_state in S.values:
            if to_state in ALLOWED_TRANSITIONS[from_state]:
                continue
            with pytest.raises(InvalidTransition, match=f"from {from_state} to {to_state}"):
                job_transition(job_pk=job.pk, from_state=from_state, to_state=to_state)
    assert RuntimeJob.objects.get(pk=job.pk).state == S.QUEUED


def test_the_table_is_the_spec_state_machine():
    assert ALLOWED_TRANSITIONS[S.QUEUED] >= {S.CLAIMED, S.TIMED_OUT, S.CANCELLED, S.STALE}
    assert S.COMMITTING in ALLOWED_TRANSITIONS[S.RUNNING]
    assert S.SUCCEEDED in ALLOWED_TRANSITIONS[S.COMMITTING]
    # A job only succeeds through committing, and terminal states are final.
    assert [s for s, targets in ALLOWED_TRANSITIONS.items() if S.SUCCEEDED in targets] == [
        S.COMMITTING
    ]
    for terminal in (S.SUCCEEDED, S.FAILED, S.TIMED_OUT, S.CANCELLED, S.STALE, S.ORPHANED):
        assert ALLOWED_TRANSITIONS[terminal] == frozenset()


def test_a_transition_only_changes_a_row_still_in_the_expected_state(make_job):
    job = make_job("noop")
    assert job_transition(job_pk=job.pk, from_state=S.QUEUED, to_state=S.CANCELLED)
    # The second caller lost the race: nothing changes.
    assert not job_transition(job_pk=job.pk, from_state=S.QUEUED, to_state=S.STALE)
    job.refresh_from_db()
    assert job.state == S.CANCELLED and job.finished_at is not None


def test_only_one_of_two_claims_wins(make_job):
    job = make_job("noop")
    assert job_claim(job_pk=job.pk, owner="w1:1") == Claim.CLAIMED
    assert job_claim(job_pk=job.pk, owner="w2:2") == Claim.LOST
    job.refresh_from_db()
    assert job.state == S.CLAIMED and job.lease_owner == "w1:1"
    assert job.lease_expires_at > timezone.now()


def test_a_job_waits_for_the_earlier_job_of_its_key(make_job):
    first = make_job("noop")
    second = make_job("noop")
    other_runtime = make_job("noop", runtime_id="another")
    assert job_claim(job_pk=second.pk, owner="w") == Claim.WAITING
    assert job_claim(job_pk=other_runtime.pk, owner="w") == Claim.CLAIMED
    assert job_claim(job_pk=first.pk, owner="w") == Claim.CLAIMED
    assert job_claim(job_pk=second.pk, owner="w") == Claim.WAITING
    _force(first, S.FAILED)  # a failed predecessor counts as finished
    assert job_claim(job_pk=second.pk, owner="w") == Claim.CLAIMED


def test_a_waiting_job_is_sent_again_and_not_run(make_job, sent, tmp_path):
    make_job("sleep", label="first")
    second = make_job("sleep", label="second")
    assert job_execute(job_pk=second.pk, owner="w") == "waiting"
    assert sent == [(second.pk, 1.0)]
    assert read_lines(tmp_path / "out" / "runs.log") == []


def test_a_waiting_job_past_its_queue_deadline_times_out_on_delivery(make_job, sent, tmp_path):
    make_job("sleep", label="first")
    late = make_job("sleep", max_queue_ms=50, label="late")
    _force(late, S.QUEUED, created_at=timezone.now() - timedelta(milliseconds=80))
    assert job_execute(job_pk=late.pk, owner="w") == "timed_out"
    late.refresh_from_db()
    assert (late.state, late.reason) == (S.TIMED_OUT, "queue-deadline-exceeded")
    assert sent == []  # not sent again to wait for its predecessor
    assert read_lines(tmp_path / "out" / "runs.log") == []


def test_a_finished_job_wakes_the_next_queued_job_of_its_key(
    make_job, sent, alice, django_capture_on_commit_callbacks
):
    first = make_job("noop")
    second = make_job("noop")
    third = make_job("noop")
    make_job("noop", runtime_id="another")  # another key: never woken by these
    with django_capture_on_commit_callbacks(execute=True):
        assert job_execute(job_pk=first.pk, owner="w") == "succeeded"
    assert sent == [(second.pk, None)]  # the next one only, not every later one
    sent.clear()
    with django_capture_on_commit_callbacks(execute=True):
        assert job_cancel(job=second, actor=alice).state == S.CANCELLED
    assert sent == [(third.pk, None)]  # any end wakes it, not only a success
    sent.clear()
    with django_capture_on_commit_callbacks(execute=True):
        assert job_execute(job_pk=third.pk, owner="w") == "succeeded"
    assert sent == []  # the last of its key wakes nobody


def test_a_job_runs_in_eight_statements(make_job):
    """The claim reads the row back, the start writes its event, the commit re-checks under the
    session lock and finds the next job of the key in its last UPDATE: a trivial job's whole
    database work (djangopackages' habit: a page's query count, here a job's)."""
    job = make_job("noop")
    with CaptureQueriesContext(connection) as queries:
        assert job_execute(job_pk=job.pk, owner="w") == "succeeded"
    statements = [
        q["sql"] for q in queries if not q["sql"].upper().startswith(("SAVEPOINT", "RELEASE"))
    ]
    # claim, staleness check, claimed -> running, its event; running -> committing, the
    # re-check, committing -> succeeded, the commit's events.
    assert len(statements) == 8, [sql[:70] for sql in statements]


def test_a_duplicate_delivery_runs_the_job_once(make_job, tmp_path):
    job = make_job("sleep", sleep_ms=0, label="once")
    assert job_execute(job_pk=job.pk, owner="w1") == "succeeded"
    assert job_execute(job_pk=job.pk, owner="w2") == "duplicate"
    assert len([x for x in read_lines(tmp_path / "out" / "runs.log") if " start " in x]) == 1
    assert len(read_lines(tmp_path / "out" / "commits.log")) == 1


def test_a_job_queued_too_long_times_out_without_running(make_job, tmp_path):
    job = make_job("sleep", max_queue_ms=50, label="late")
    _force(job, S.QUEUED, created_at=timezone.now() - timedelta(milliseconds=80))
    assert job_execute(job_pk=job.pk, owner="w") == "timed_out"
    job.refresh_from_db()
    assert (job.state, job.reason) == (S.TIMED_OUT, "queue-deadline-exceeded")
    assert "maxQueueMs (50 ms)" in job.error
    assert read_lines(tmp_path / "out" / "runs.log") == []


def test_the_reaper_times_out_a_queued_job_no_worker_picked_up(make_job, tmp_path):
    """With every worker down or busy, nobody receives the message: beat's reaper still times
    the job out at its maxQueueMs, so settle waits and the panel do not wait on it."""
    late = make_job("sleep", max_queue_ms=50, label="late")
    not_yet = make_job("sleep", max_queue_ms=60_000, runtime_id="r2", label="not-yet")
    no_limit = make_job("sleep", runtime_id="r3", label="no-limit")
    claimed = make_job("sleep", max_queue_ms=50, runtime_id="r4", label="claimed")
    an_hour_ago = timezone.now() - timedelta(hours=1)
    for job in (late, not_yet, no_limit):
        _force(job, S.QUEUED, created_at=timezone.now() - timedelta(milliseconds=80))
    _force(no_limit, S.QUEUED, created_at=an_hour_ago)
    _force(claimed, S.CLAIMED, created_at=an_hour_ago, lease_owner="w:1")
    assert job_time_out_queued() == [late.pk]
    late.refresh_from_db()
    assert (late.state, late.reason) == (S.TIMED_OUT, "queue-deadline-exceeded")
    assert "maxQueueMs (50 ms)" in late.error and late.finished_at is not None
    states = dict(RuntimeJob.objects.values_list("pk", "state"))
    assert (states[not_yet.pk], states[no_limit.pk], states[claimed.pk]) == (
        S.QUEUED,
        S.QUEUED,
        S.CLAIMED,  # a worker has it: its own deadline checks apply, not the reaper's
    )
    assert job_time_out_queued() == []  # nothing twice
    # The worker that finally receives the message runs nothing.
    assert job_execute(job_pk=late.pk, owner="w") == "duplicate"
    assert read_lines(tmp_path / "out" / "runs.log") == []


def test_a_job_running_too_long_times_out_and_saves_nothing(make_job, tmp_path):
    job = make_job("sleep", sleep_ms=3000, max_execution_ms=150, label="slow")
    started = timezone.now()
    assert job_execute(job_pk=job.pk, owner="w") == "timed_out"
    job.refresh_from_db()
    assert (job.state, job.reason) == (S.TIMED_OUT, "execution-deadline-exceeded")
    assert job.finished_at - started < timedelta(seconds=2)
    assert read_lines(tmp_path / "out" / "commits.log") == []


def test_a_failing_runner_fails_the_job_and_nothing_replays_it(make_job, sent):
    job = make_job("fail")
    assert job_execute(job_pk=job.pk, owner="w") == "failed"
    job.refresh_from_db()
    assert job.state == S.FAILED
    assert job.error == "RuntimeError: the test runner failed on purpose"
    assert job_execute(job_pk=job.pk, owner="w") == "duplicate"
    assert sent == []


def test_an_unknown_runner_kind_fails_with_a_clear_error(make_job):
    job = make_job("nonexistent-kind")
    job_execute(job_pk=job.pk, owner="w")
    job.refresh_from_db()
    assert job.state == S.FAILED
    assert "no job runner is registered for kind 'nonexistent-kind'" in job.error


def test_the_runtime_runner_is_the_sessions_background_turn():
    from jobs.runners import resolve_runner
    from sessions.background import run_detached

    assert resolve_runner("runtime") is run_detached


def test_a_changed_package_version_makes_a_queued_job_stale(make_job, notebook, tmp_path):
    job = make_job("sleep", label="v1")
    assert job.package_version == "1.0.0"
    notebook.version = "1.1.0"
    notebook.save()
    job_execute(job_pk=job.pk, owner="w")
    job.refresh_from_db()
    assert (job.state, job.reason) == (S.STALE, JobReason.VERSION_CHANGED)
    assert "from version 1.0.0 to 1.1.0" in job.error
    assert read_lines(tmp_path / "out" / "runs.log") == []


def test_a_job_of_an_ended_session_goes_stale_without_running(make_job, play_session, tmp_path):
    paused = make_job("sleep", label="paused-runs")
    play_session.status = "paused"
    play_session.save()
    job_execute(job_pk=paused.pk, owner="w")
    paused.refresh_from_db()
    assert paused.state == S.SUCCEEDED  # a paused session still takes its jobs' results
    job = make_job("sleep", label="after-the-end")
    play_session.status = "ended"
    play_session.save()
    job_execute(job_pk=job.pk, owner="w")
    job.refresh_from_db()
    assert (job.state, job.reason) == (S.STALE, JobReason.SESSION_ENDED)
    assert "after-the-end" not in "".join(read_lines(tmp_path / "out" / "runs.log"))


def test_the_reaper_hands_on_only_expired_leases_then_orphans(make_job, sent, settings):
    settings.COVEL_JOB_MAX_RERUNS = 2
    expired = make_job("noop")
    spent = make_job("noop", runtime_id="r4")
    fresh = make_job("noop", runtime_id="r2")
    queued = make_job("noop", runtime_id="r3")
    sent.clear()
    past = timezone.now() - timedelta(seconds=5)
    _force(expired, S.RUNNING, lease_owner="dead:1", lease_expires_at=past)
    _force(spent, S.CLAIMED, lease_owner="dead:1", lease_expires_at=past, reruns=2)
    _force(fresh, S.RUNNING, lease_owner="alive:1", lease_expires_at=timezone.now() + timedelta(30))
    assert sorted(job_reap_orphans()) == sorted([expired.pk, spent.pk])
    expired.refresh_from_db()
    # Its worker died before it finished: it is queued again, unleased, and its message re-sent.
    assert (expired.state, expired.reruns, expired.lease_owner) == (S.QUEUED, 1, "")
    assert expired.lease_expires_at is None and expired.started_at is None
    assert sent == [(expired.pk, None)]
    # Handed on as often as allowed already: orphaned, and nothing sends it again.
    spent.refresh_from_db()
    assert (spent.state, spent.reason) == (S.ORPHANED, "lease-expired")
    assert RuntimeJob.objects.get(pk=fresh.pk).state == S.RUNNING
    assert RuntimeJob.objects.get(pk=queued.pk).state == S.QUEUED
    # The re-sent job runs once, and the reaper leaves it alone from then on.
    assert job_execute(job_pk=expired.pk, owner="w2:1") == "succeeded"
    assert job_reap_orphans() == []
    assert RuntimeJob.objects.get(pk=expired.pk).state == S.SUCCEEDED


def test_settle_options_follow_the_spec_defaults_and_cap():
    assert job_options_clean().max_settle_wait_ms == 60000
    assert job_options_clean(settle=True, max_settle_wait_ms=500000).max_settle_wait_ms == 120000
    options = job_options_from_schedule(
        {"settle": True, "maxSettleWaitMs": 2500, "maxQueueMs": 100, "maxExecutionMs": 900}
    )
    assert (options.settle, options.max_settle_wait_ms) == (True, 2500)
    assert (options.max_queue_ms, options.max_execution_ms) == (100, 900)
    assert job_options_from_schedule(True).settle is False


@pytest.mark.parametrize(
    "field, kwargs",
    [
        ("maxSettleWaitMs", {"max_settle_wait_ms": 0}),
        ("maxQueueMs", {"max_queue_ms": -5}),
        ("maxExecutionMs", {"max_execution_ms": "10"}),
    ],
)
def test_bad_options_name_the_field(field, kwargs):
    with pytest.raises(JobOptionsError, match=f"{field} must be a positive integer"):
        job_options_clean(**kwargs)


def test_a_revoked_approval_makes_a_queued_job_stale(make_job, approved_weather, bob, tmp_path):
    from jobs_helpers import revoke

    from approvals.selectors import package_is_usable

    assert package_is_usable(package_id="weather")
    job = make_job("sleep", plugin_id="weather", label="forecast")
    revoke("weather", bob)
    job_execute(job_pk=job.pk, owner="w")
    job.refresh_from_db()
    assert (job.state, job.reason) == (S.STALE, JobReason.APPROVAL_REVOKED)
    assert "revoked" in job.error
    assert read_lines(tmp_path / "out" / "runs.log") == []


def test_an_approval_revoked_while_running_stops_the_commit(
    make_job, approved_weather, bob, tmp_path, settings
):
    settings.COVEL_JOB_RUNNERS = {
        **settings.COVEL_JOB_RUNNERS,
        "revoking": "jobs_test_runners.revoke_then_write",
    }
    job = make_job("revoking", plugin_id="weather", label="midway", revoke_as=bob.pk)
    assert job_execute(job_pk=job.pk, owner="w") == "stale"
    job.refresh_from_db()
    assert (job.state, job.reason) == (S.STALE, JobReason.APPROVAL_REVOKED)
    assert read_lines(tmp_path / "out" / "commits.log") == []


def test_a_rolled_back_turn_queues_nothing(
    play_session, notebook, monkeypatch, django_capture_on_commit_callbacks
):
    from django.db import transaction

    from jobs.services import job_enqueue

    sent = []
    monkeypatch.setattr("jobs.tasks.run_job.apply_async", lambda **kw: sent.append(kw))
    with django_capture_on_commit_callbacks(execute=True):
        with pytest.raises(RuntimeError):
            with transaction.atomic():
                job_enqueue(session_id=play_session.pk, plugin_id="notebook", runtime_id="r")
                raise RuntimeError("the turn failed")
    assert sent == [] and not RuntimeJob.objects.exists()

    with django_capture_on_commit_callbacks(execute=True):
        with transaction.atomic():
            job = job_enqueue(
                session_id=play_session.pk,
                plugin_id="notebook",
                runtime_id="r",
                options=job_options_clean(max_execution_ms=2500),
            )
            assert sent == []  # nothing leaves before the commit
    assert len(sent) == 1
    assert sent[0]["args"] == [job.pk]
    # Celery's time limits come from maxExecutionMs: soft just after it, hard a little later.
    assert sent[0]["soft_time_limit"] == pytest.approx(3.5)
    assert sent[0]["time_limit"] == pytest.approx(13.5)


def test_without_max_execution_ms_the_ceiling_applies(make_job, settings):
    from jobs.services import effective_execution_ms

    settings.COVEL_JOB_EXECUTION_CEILING_MS = 600_000
    assert effective_execution_ms(make_job("noop")) == 600_000
    assert effective_execution_ms(make_job("noop", max_execution_ms=10**9)) == 600_000
    assert effective_execution_ms(make_job("noop", max_execution_ms=1234)) == 1234


def test_settle_wait_refuses_to_run_inside_a_transaction(play_session):
    from jobs.settle import settle_wait

    with pytest.raises(RuntimeError, match="must not run inside a transaction"):
        settle_wait(session_id=play_session.pk)


def test_event_payloads_have_the_documented_shapes(make_job):
    from jobs.events import (
        accepted_payload,
        job_status_event,
        runtime_deferred_event,
        settle_timeout_event,
    )
    from jobs.settle import SettleOutcome

    job = make_job("noop", settle=True, max_settle_wait_ms=3000, max_queue_ms=100)
    status = job_status_event(job)
    assert status["type"] == "job-status.updated"
    assert (status["jobId"], status["state"], status["attempt"]) == (str(job.job_id), "queued", 1)
    assert status["sourceTurnId"] == job.source_turn
    deferred = runtime_deferred_event(job)
    assert deferred["type"] == "runtime.deferred"
    assert (deferred["settle"], deferred["maxSettleWaitMs"], deferred["maxQueueMs"]) == (
        True,
        3000,
        100,
    )
    assert accepted_payload(job) == {"jobId": str(job.job_id), "status": "accepted"}
    assert settle_timeout_event(SettleOutcome(waited_ms=5)) is None
    timeout = settle_timeout_event(
        SettleOutcome(waited_ms=3001, pending_job_ids=["a"], timed_out=True, limit_ms=3000)
    )
    assert timeout == {
        "type": "settle-timeout",
        "pendingJobIds": ["a"],
        "waitedMs": 3001,
        "limitMs": 3000,
        "waitedFor": [],
    }


def test_a_runner_that_stops_on_its_own_fails_the_job(make_job, settings):
    settings.COVEL_JOB_RUNNERS = {
        **settings.COVEL_JOB_RUNNERS,
        "gives-up": "jobs_test_runners.gives_up",
    }
    job = make_job("gives-up")
    assert job_execute(job_pk=job.pk, owner="w") == "failed"
    job.refresh_from_db()
    assert job.state == S.FAILED and job.error == "JobStopped: the runner decided to stop"


def test_a_lost_message_is_sent_again_with_a_growing_back_off(make_job, sent, settings):
    from jobs.services import job_resend_lost

    settings.COVEL_JOB_RESEND_AFTER_SECONDS = 60
    lost = make_job("noop")
    waiting = make_job("noop")  # behind `lost` (same key): its predecessor wakes it instead
    fresh = make_job("noop", runtime_id="fresh")
    now = timezone.now()
    RuntimeJob.objects.filter(pk__in=[lost.pk, waiting.pk]).update(
        sent_at=now - timedelta(seconds=61)
    )
    assert job_resend_lost(now=now) == [lost.pk]
    assert sent == [(lost.pk, None)]
    lost.refresh_from_db()
    assert (lost.sends, lost.sent_at) == (2, now)
    # The next re-send waits twice as long (fresh, sent once, is due after 60 s of its own).
    assert job_resend_lost(now=now + timedelta(seconds=100)) == [fresh.pk]
    assert job_resend_lost(now=now + timedelta(seconds=121)) == [lost.pk]
    # A claimed job is never re-sent.
    _force(lost, S.RUNNING)
    _force(fresh, S.SUCCEEDED)
    assert job_resend_lost(now=now + timedelta(days=1)) == []  # waiting is still behind it
    _force(lost, S.SUCCEEDED)
    assert job_resend_lost(now=now + timedelta(days=1)) == [waiting.pk]


def test_a_message_the_broker_refused_is_sent_again_when_it_is_back(make_job, monkeypatch):
    """Redis down when a turn's job is sent: the request does not fail (the turn committed),
    the job stays queued, and the reaper's re-send delivers it once the broker answers."""
    from celery import current_app
    from kombu.exceptions import OperationalError

    from jobs.services import job_resend_lost, send_run_job

    task = current_app.tasks["jobs.run_job"]
    job = make_job("noop")

    def refuse(*args, **kwargs):
        raise OperationalError("Error 111 connecting to 127.0.0.1:6379. Connection refused.")

    monkeypatch.setattr(task, "apply_async", refuse)
    send_run_job(job=job)  # no exception reaches the caller
    assert RuntimeJob.objects.get(pk=job.pk).state == S.QUEUED
    delivered: list[list[int]] = []
    monkeypatch.setattr(task, "apply_async", lambda args, **kwargs: delivered.append(args))
    assert job_resend_lost(now=timezone.now() + timedelta(minutes=5)) == [job.pk]
    assert delivered == [[job.pk]]
