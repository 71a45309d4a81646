"""The jobs panel a session page includes: owner and staff only, cancel and retry buttons.

Alice owns the session; Bob is staff; Charlie is another player; anonymous is not logged in.
"""

from __future__ import annotations

import pytest
from jobs_helpers import client_for, force_state

from jobs.models import JobState, RuntimeJob

pytestmark = pytest.mark.django_db

S = JobState
HX = {"HTTP_HX_REQUEST": "true"}


@pytest.fixture(autouse=True)
def no_broker(monkeypatch):
    monkeypatch.setattr("jobs.services.send_run_job", lambda *, job, countdown=None: None)


def test_the_owner_and_staff_see_the_panel_with_the_right_buttons(
    make_job, alice, bob, play_session
):
    running = force_state(make_job("noop", runtime_id="busy", settle=True), S.RUNNING)
    failed = force_state(make_job("noop", runtime_id="broken"), S.FAILED)
    done = force_state(make_job("noop", runtime_id="done"), S.SUCCEEDED)
    for user in (alice, bob):
        html = client_for(user).get(f"/jobs/sessions/{play_session.pk}/panel/").content.decode()
        assert f"/jobs/{running.job_id}/cancel/" in html
        assert f"/jobs/{failed.job_id}/retry/" in html
        assert f"/jobs/{done.job_id}/" not in html  # nothing to do with a succeeded job
        # Live while a job is unfinished, refreshed by the session's event stream, not a poll.
        assert 'data-live="true"' in html and "hx-trigger" not in html
        assert "waits up to 60000 ms" in html


def test_the_panel_stops_polling_when_every_job_finished(make_job, alice, play_session):
    force_state(make_job("noop"), S.SUCCEEDED)
    html = client_for(alice).get(f"/jobs/sessions/{play_session.pk}/panel/").content.decode()
    assert "hx-trigger" not in html and "data-live" not in html


def test_others_are_refused_and_anonymous_visitors_sent_to_log_in(make_job, charlie, play_session):
    job = force_state(make_job("noop"), S.RUNNING)
    assert client_for(charlie).get(f"/jobs/sessions/{play_session.pk}/panel/").status_code == 403
    assert client_for(charlie).post(f"/jobs/{job.job_id}/cancel/", **HX).status_code == 403
    anonymous = client_for().post(f"/jobs/{job.job_id}/cancel/")
    assert anonymous.status_code == 302 and "/accounts/login/" in anonymous["Location"]
    assert RuntimeJob.objects.get(pk=job.pk).state == S.RUNNING


def test_cancel_and_retry_from_the_panel(make_job, alice, play_session):
    job = force_state(make_job("noop"), S.RUNNING)
    client = client_for(alice)
    html = client.post(f"/jobs/{job.job_id}/cancel/", **HX).content.decode()
    assert RuntimeJob.objects.get(pk=job.pk).state == S.CANCELLED
    assert f"/jobs/{job.job_id}/retry/" in html
    response = client.post(f"/jobs/{job.job_id}/retry/")  # a plain form post
    assert response.status_code == 302 and response["Location"] == f"/sessions/{play_session.pk}/"
    retry = RuntimeJob.objects.get(retry_of=job)
    assert (retry.state, retry.attempt) == (S.QUEUED, 2)


def test_a_refused_action_shows_why(make_job, alice):
    job = force_state(make_job("noop"), S.SUCCEEDED)
    client = client_for(alice)
    plain = client.post(f"/jobs/{job.job_id}/cancel/")
    assert plain.status_code == 409
    assert "only queued, claimed or running jobs can be cancelled" in plain.content.decode()
    swapped = client.post(f"/jobs/{job.job_id}/retry/", **HX)
    assert swapped.status_code == 200 and 'role="alert"' in swapped.content.decode()


def test_the_panel_escapes_plugin_text(make_job, alice, play_session):
    job = make_job("noop", plugin_id="<script>x()</script>")
    RuntimeJob.objects.filter(pk=job.pk).update(state=S.FAILED, error="<b>boom</b>")
    html = client_for(alice).get(f"/jobs/sessions/{play_session.pk}/panel/").content.decode()
    assert "<script>x()" not in html and "<b>boom</b>" not in html
