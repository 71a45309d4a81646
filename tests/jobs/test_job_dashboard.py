"""The staff jobs dashboard: staff only, filters in the URL, constant queries, escaped text."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from jobs.models import JobState, RuntimeJob, SettleWait

pytestmark = pytest.mark.django_db


def _client(user=None) -> Client:
    client = Client()
    if user is not None:
        client.force_login(user)
    return client


def _finish(job: RuntimeJob, state: str = JobState.SUCCEEDED, run_ms: int = 40) -> None:
    start = job.created_at + timedelta(milliseconds=10)
    RuntimeJob.objects.filter(pk=job.pk).update(
        state=state,
        claimed_at=start,
        started_at=start,
        finished_at=start + timedelta(milliseconds=run_ms),
    )


def test_anonymous_visitors_are_sent_to_log_in():
    response = _client().get("/jobs/")
    assert response.status_code == 302
    assert response["Location"].startswith("/accounts/login/?next=/jobs/")


def test_players_are_refused(alice):
    assert _client(alice).get("/jobs/").status_code == 403


def test_staff_see_every_job_with_a_timeline(bob, make_job, play_session):
    done = make_job("noop")
    _finish(done)
    make_job("noop", runtime_id="queued-one")
    SettleWait.objects.create(
        session=play_session, started_at=timezone.now(), waited_ms=30, limit_ms=60000
    )
    response = _client(bob).get("/jobs/")
    assert response.status_code == 200
    html = response.content.decode()
    assert "notebook" in html and "queued-one" in html
    assert "<svg" in html and html.count('class="bar bar-run"') == 1
    assert html.count('class="bar bar-queue"') == 2
    assert html.count('class="bar bar-wait"') == 1
    assert "ran 40 ms (succeeded)" in html


def test_filters_live_in_the_url(bob, make_job, play_session, alice):
    from sessions.models import Session

    other = Session.objects.create(world=play_session.world, owner=alice, title="Another")
    failed = make_job("noop", runtime_id="fails")
    _finish(failed, JobState.FAILED)
    make_job("noop", runtime_id="elsewhere", session=other)
    make_job("noop", plugin_id="dice", runtime_id="roll")
    client = _client(bob)
    html = client.get("/jobs/?state=failed").content.decode()
    assert "fails" in html and "elsewhere" not in html and "roll" not in html
    html = client.get("/jobs/?plugin=dice").content.decode()
    assert "roll" in html and "fails" not in html
    html = client.get(f"/jobs/?session={other.pk}").content.decode()
    assert "elsewhere" in html and "fails" not in html
    # Nonsense filters are ignored rather than failing the page.
    assert client.get("/jobs/?state=nope&session=xyz").status_code == 200


def test_plugin_text_is_escaped(bob, make_job):
    job = make_job("noop", plugin_id="<script>alert(1)</script>", runtime_id="<b>x</b>")
    RuntimeJob.objects.filter(pk=job.pk).update(
        state=JobState.FAILED, error="<img src=x onerror=alert(2)>"
    )
    html = _client(bob).get("/jobs/").content.decode()
    assert "<script>alert(1)" not in html and "&lt;script&gt;alert(1)" in html
    assert "<img src=x" not in html and "<b>x</b>" not in html


def test_the_page_costs_the_same_queries_for_3_or_30_jobs(bob, make_job):
    client = _client(bob)

    def count() -> int:
        with CaptureQueriesContext(connection) as queries:
            assert client.get("/jobs/").status_code == 200
        return len(queries)

    for i in range(3):
        _finish(make_job("noop", runtime_id=f"a{i}"))
    few = count()
    for i in range(27):
        _finish(make_job("noop", plugin_id=f"p{i % 5}", runtime_id=f"b{i}"))
    assert count() == few
