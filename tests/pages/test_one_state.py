"""One state per runtime on every panel, and Retry only where it can succeed: a deferred
runtime's row in the Runtimes panel shows its job's state (not "deferred" beside a "Failed"
job), and a job that failed for want of a model offers no Retry until the slot is configured."""

from __future__ import annotations

import pytest
from django.utils import timezone

pytestmark = pytest.mark.django_db

NO_MODEL = "no model is configured for slot 'utility'"


@pytest.fixture
def failed_chronicle(harbor_session):
    from jobs.models import RuntimeJob
    from sessions.models import Turn

    turn = Turn.objects.create(
        session=harbor_session,
        number=1,
        player_message="I walk along the quay.",
        status="committed",
        results=[
            {"runtime": "storyteller", "status": "succeeded", "code": "", "reason": ""},
            {"runtime": "chronicle/summarize", "status": "deferred", "code": "", "reason": ""},
        ],
    )
    return RuntimeJob.objects.create(
        session=harbor_session,
        plugin_id="chronicle",
        runtime_id="chronicle/summarize",
        source_turn=str(turn.pk),
        state="failed",
        error=NO_MODEL,
        created_at=timezone.now(),
        updated_at=timezone.now(),
    )


def runtimes_panel(html: str) -> str:
    return html[html.index('id="runtimes"') : html.index('id="notifications"')]


def test_the_runtimes_panel_shows_the_jobs_state(client, alice, harbor_session, failed_chronicle):
    client.force_login(alice)
    html = client.get(f"/sessions/{harbor_session.pk}/").content.decode()
    row = runtimes_panel(html)
    row = row[row.index('data-runtime="chronicle/summarize"') :]
    row = row[: row.index("</li>")]
    assert "deferred" not in row
    assert "needs a model" in row and "staff: set slot utility" in row


def test_retry_is_offered_only_when_it_can_succeed(client, alice, harbor_session, failed_chronicle):
    from agents.models import ModelSlot

    client.force_login(alice)
    panel = client.get(f"/jobs/sessions/{harbor_session.pk}/panel/").content.decode()
    assert ">Retry<" not in panel
    assert "Retry once staff configure the model slot utility" in panel
    ModelSlot.objects.create(
        name="utility", base_url="http://127.0.0.1:9/v1", model="stand-in", enabled=True
    )
    panel = client.get(f"/jobs/sessions/{harbor_session.pk}/panel/").content.decode()
    assert ">Retry<" in panel and "waits-for-slot" not in panel
