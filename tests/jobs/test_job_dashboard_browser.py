"""The staff jobs dashboard in Debian's Chromium: Bob filters by state from the form and sees
the timeline picture; Alice is refused."""

from __future__ import annotations

from datetime import timedelta

import pytest

from jobs.models import JobState, RuntimeJob

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def two_jobs(make_job, monkeypatch):
    # Made before the browser starts: Playwright's event loop would give the ORM calls of the
    # test body a connection of their own that nobody closes.
    monkeypatch.setattr("jobs.services.send_run_job", lambda *, job, countdown=None: None)
    for name, state in (("broken", JobState.FAILED), ("fine", JobState.SUCCEEDED)):
        job = make_job("noop", runtime_id=name)
        start = job.created_at + timedelta(milliseconds=20)
        RuntimeJob.objects.filter(pk=job.pk).update(
            state=state, claimed_at=start, started_at=start, finished_at=start + timedelta(1 / 864)
        )


def test_staff_filter_the_dashboard_and_players_are_refused(
    log_in, live_server, bob, alice, two_jobs, browser
):
    base = live_server.url
    context = browser.new_context()
    page = context.new_page()
    log_in(page, "bob", "bob-password", "/jobs/")
    page.wait_for_url(f"{base}/jobs/")
    assert page.locator("svg.jobs-timeline rect.bar-run").count() == 2
    assert page.locator("table.jobs-table tbody tr").count() == 2
    page.select_option("select[name=state]", "failed")
    page.click("form.jobs-filters button[type=submit]")
    page.wait_for_url("**/jobs/?state=failed*")
    rows = page.locator("table.jobs-table tbody tr")
    assert rows.count() == 1 and "broken" in rows.first.inner_text()
    context.close()

    context = browser.new_context()
    page = context.new_page()
    log_in(page, "alice", "alice-password", "/jobs/")
    assert page.goto(f"{base}/jobs/").status == 403
    context.close()
