"""The jobs API: who may see, cancel and retry, and the 409 rules.

Alice owns the session; Bob is staff; Charlie is another player; anonymous is not logged in.
"""

from __future__ import annotations

import json

import pytest
from django.test import Client
from jobs_helpers import client_for, force_state

from jobs.models import JobState, RuntimeJob

pytestmark = pytest.mark.django_db

S = JobState


@pytest.fixture(autouse=True)
def no_broker(monkeypatch):
    # Retries enqueue a job; these tests only look at rows, so nothing goes to a broker.
    monkeypatch.setattr("jobs.services.send_run_job", lambda *, job, countdown=None: None)


def test_the_owner_and_staff_see_a_job_and_the_session_list(make_job, alice, bob, play_session):
    job = make_job("noop", settle=True, max_settle_wait_ms=5000)
    for user in (alice, bob):
        response = client_for(user).get(f"/api/jobs/{job.job_id}")
        assert response.status_code == 200
        body = response.json()
        assert body["jobId"] == str(job.job_id)
        assert (body["state"], body["settle"], body["maxSettleWaitMs"]) == ("queued", True, 5000)
        assert body["pluginId"] == "notebook" and body["runtimeId"] == "summarise"
        listing = client_for(user).get(f"/api/sessions/{play_session.pk}/jobs").json()
        assert listing["count"] == 1 and listing["items"][0]["jobId"] == str(job.job_id)


def test_the_session_list_filters_by_state(make_job, alice, play_session):
    make_job("noop")
    done = force_state(make_job("noop", runtime_id="other"), S.SUCCEEDED)
    body = client_for(alice).get(f"/api/sessions/{play_session.pk}/jobs?state=succeeded").json()
    assert [item["jobId"] for item in body["items"]] == [str(done.job_id)]
    bad = client_for(alice).get(f"/api/sessions/{play_session.pk}/jobs?state=bogus")
    assert bad.status_code == 422


def test_another_player_is_refused_everything(make_job, charlie, play_session):
    job = force_state(make_job("noop"), S.FAILED)
    client = client_for(charlie)
    assert client.get(f"/api/jobs/{job.job_id}").status_code == 403
    assert client.get(f"/api/sessions/{play_session.pk}/jobs").status_code == 403
    assert client.post(f"/api/jobs/{job.job_id}/retry").status_code == 403
    running = force_state(make_job("noop", runtime_id="r2"), S.RUNNING)
    response = client.post(f"/api/jobs/{running.job_id}/cancel")
    assert response.status_code == 403 and response.json()["code"] == "forbidden"
    assert RuntimeJob.objects.get(pk=running.pk).state == S.RUNNING
    assert RuntimeJob.objects.count() == 2  # no retry was made


def test_anonymous_callers_get_401(make_job, play_session):
    job = make_job("noop")
    client = client_for()
    assert client.get(f"/api/jobs/{job.job_id}").status_code == 401
    assert client.get(f"/api/sessions/{play_session.pk}/jobs").status_code == 401
    assert client.post(f"/api/jobs/{job.job_id}/cancel").status_code == 401
    assert client.post(f"/api/jobs/{job.job_id}/retry").status_code == 401


def test_posts_need_the_csrf_token(make_job, alice):
    job = make_job("noop")
    client = Client(enforce_csrf_checks=True)
    client.force_login(alice)
    assert client.post(f"/api/jobs/{job.job_id}/cancel").status_code == 403
    assert RuntimeJob.objects.get(pk=job.pk).state == S.QUEUED


def test_unknown_jobs_and_sessions_are_404(alice):
    client = client_for(alice)
    assert (
        client.get("/api/jobs/8d3e9f8e-0000-4000-8000-000000000000").json()["code"] == "not_found"
    )
    assert client.get("/api/jobs/not-a-uuid").status_code == 404
    missing = client.get("/api/sessions/8d3e9f8e-0000-4000-8000-000000000000/jobs")
    assert missing.status_code == 404


@pytest.mark.parametrize("state", [S.QUEUED, S.CLAIMED, S.RUNNING])
def test_queued_claimed_and_running_jobs_can_be_cancelled(make_job, alice, state):
    job = force_state(make_job("noop"), state)
    response = client_for(alice).post(f"/api/jobs/{job.job_id}/cancel")
    assert response.status_code == 200
    body = response.json()
    assert (body["state"], body["reason"]) == ("cancelled", "cancelled-by-user")
    assert body["error"] == "cancelled by alice"
    assert body["finishedAt"] is not None


@pytest.mark.parametrize(
    "state",
    [S.COMMITTING, S.SUCCEEDED, S.FAILED, S.TIMED_OUT, S.CANCELLED, S.STALE, S.ORPHANED],
)
def test_other_states_cannot_be_cancelled(make_job, bob, state):
    job = force_state(make_job("noop"), state)
    response = client_for(bob).post(f"/api/jobs/{job.job_id}/cancel")
    assert response.status_code == 409
    assert response.json()["code"] == "runtime_job_not_cancellable"
    assert f"is {state}" in response.json()["detail"]
    assert RuntimeJob.objects.get(pk=job.pk).state == state


@pytest.mark.parametrize("state", [S.FAILED, S.TIMED_OUT, S.CANCELLED, S.STALE, S.ORPHANED])
def test_failure_states_can_be_retried_as_a_new_job(make_job, alice, state):
    job = make_job("noop", settle=True, max_settle_wait_ms=7000, max_execution_ms=900, k="v")
    job = force_state(job, state)
    response = client_for(alice).post(f"/api/jobs/{job.job_id}/retry")
    assert response.status_code == 201
    body = response.json()
    assert body["jobId"] != str(job.job_id)
    assert (body["retryOf"], body["attempt"], body["state"]) == (str(job.job_id), 2, "queued")
    assert (body["settle"], body["maxSettleWaitMs"], body["maxExecutionMs"]) == (True, 7000, 900)
    retry = RuntimeJob.objects.get(job_id=body["jobId"])
    assert retry.inputs == job.inputs and retry.requested_by == alice
    # The failed job itself is left as it was.
    assert RuntimeJob.objects.get(pk=job.pk).state == state


@pytest.mark.parametrize("state", [S.QUEUED, S.CLAIMED, S.RUNNING, S.COMMITTING, S.SUCCEEDED])
def test_other_states_cannot_be_retried(make_job, bob, state):
    job = force_state(make_job("noop"), state)
    response = client_for(bob).post(f"/api/jobs/{job.job_id}/retry")
    assert response.status_code == 409
    assert response.json()["code"] == "runtime_job_not_retryable"
    assert RuntimeJob.objects.count() == 1


def test_a_job_is_retried_once_then_its_retry_is(make_job, alice):
    job = force_state(make_job("noop"), S.FAILED)
    client = client_for(alice)
    first = client.post(f"/api/jobs/{job.job_id}/retry").json()
    again = client.post(f"/api/jobs/{job.job_id}/retry")
    assert again.status_code == 409
    assert json.loads(again.content)["code"] == "runtime_job_not_retryable"
    assert first["jobId"] in again.json()["detail"]
    force_state(RuntimeJob.objects.get(job_id=first["jobId"]), S.TIMED_OUT)
    third = client.post(f"/api/jobs/{first['jobId']}/retry").json()
    assert third["attempt"] == 3 and third["retryOf"] == first["jobId"]


def test_a_retry_is_sent_only_after_its_transaction_commits(
    make_job, alice, monkeypatch, django_capture_on_commit_callbacks
):
    sent = []
    monkeypatch.setattr(
        "jobs.services.send_run_job", lambda *, job, countdown=None: sent.append(job.pk)
    )
    job = force_state(make_job("noop"), S.FAILED)
    with django_capture_on_commit_callbacks(execute=False) as callbacks:
        body = client_for(alice).post(f"/api/jobs/{job.job_id}/retry").json()
    assert sent == []  # nothing is sent before the commit
    for callback in callbacks:  # the job's message (and the event streams' wake-up)
        callback()
    assert sent == [RuntimeJob.objects.get(job_id=body["jobId"]).pk]
