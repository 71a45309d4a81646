"""The session page's jobs panel in a real Chromium: a detached runtime's job appears when the
turn defers it and changes state when a worker runs it, pushed by the session's event stream."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect
from test_play_support import index_folder, make_world, write_plugin

from sessions.services import session_create

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

LATER = (
    'export default async (ctx) => ({ outcome: "success", value: { heard: ctx.playerMessage } });\n'
)


def test_the_jobs_panel_follows_a_job_from_queued_to_succeeded(
    page, live_server, log_in, alice, tmp_path
):
    from jobs.models import RuntimeJob
    from jobs.worker import job_execute

    runtime = {"schedule": {"stage": "post-turn", "detached": True}, "function": {}}
    index_folder(write_plugin(tmp_path, "scribe", {}, runtimes={"later": (runtime, LATER)}))
    session = session_create(owner=alice, world=make_world(owner=alice, plugins=["scribe"]))
    log_in(page, "alice", "alice-password", f"/sessions/{session.pk}/")
    panel = page.locator("#jobs-panel")
    expect(panel).to_have_count(1)
    expect(panel.locator("tr[data-job]")).to_have_count(0)
    # With no unfinished job the panel does not poll: only the stream can bring the new row.
    assert panel.get_attribute("hx-trigger") is None
    expect(page.locator("#play[data-connected=true]")).to_have_count(1)

    page.fill("#message", "ring the bell")
    page.click("#send")
    row = panel.locator("tr[data-job]")
    expect(row).to_have_count(1)
    job = RuntimeJob.objects.get(session=session)
    expect(row).to_have_attribute("data-job", str(job.job_id))
    expect(row).to_contain_text("scribe/later")
    expect(row.locator(".tag")).to_have_text("Queued")

    assert job_execute(job_pk=job.pk) == "succeeded"
    expect(page.locator(f'#jobs-panel tr[data-job="{job.job_id}"] .tag')).to_have_text("Succeeded")
    page.goto("about:blank")
    page.wait_for_timeout(3000)  # let the closed stream's server thread end (see test_play_browser)
