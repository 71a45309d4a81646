"""A fresh install plays a bundled world without a model and without red: a runtime that only
lacks a model slot is a note for staff; plugin data reads as JSON for people; the bundled
source plugin's row says how its jobs are doing."""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest
from django.utils import timezone

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "sessions"))
from test_play_support import play  # noqa: E402

pytestmark = pytest.mark.django_db


def test_a_runtime_without_a_model_is_a_note_for_staff_not_a_failure(
    client, harbor_session, alice
) -> None:
    result = play(harbor_session, "I walk along the quay.")
    rapport = next(r for r in result["runtimes"] if r["runtime"] == "rapport")
    assert rapport["code"] == "no-model-configured"  # the engine still records why
    client.force_login(alice)
    html = client.get(f"/sessions/{harbor_session.pk}/").content.decode()
    runtimes = html[html.index('id="runtimes"') : html.index('id="notifications"')]
    assert "status-failed" not in runtimes
    assert runtimes.count("needs a model") == 1
    assert "staff: set slot utility" in runtimes
    assert "no-model-configured" in runtimes  # kept as data-code for tools, not shown as text
    assert ">no-model-configured<" not in runtimes


def test_plugin_data_values_are_indented_json_in_a_fold(client, harbor_session, alice) -> None:
    from sessions.models import PluginData

    PluginData.objects.create(
        session=harbor_session,
        plugin_id="rapport",
        namespace="scores",
        key="current",
        value={"Wren": {"score": 4, "note": "kept a promise"}, "Oduya": {"score": -2}},
    )
    client.force_login(alice)
    html = client.get(f"/sessions/{harbor_session.pk}/").content.decode()
    row = html[html.index('data-key="rapport/scores/current"') :]
    row = row[: row.index("</tr>")]
    assert "<details>" in row and "<summary>" in row
    pre = re.search(r"<pre[^>]*>(.*?)</pre>", row, re.S).group(1)
    assert "\n  &quot;Oduya&quot;: {\n    &quot;score&quot;: -2\n  }" in pre


def test_the_bundled_source_plugins_real_jobs_succeed_and_its_row_has_no_red(
    client, fresh_install, alice, settings, tmp_path
) -> None:
    """The jobs a fresh install runs, with the real binary and no feed configured: they read
    the example feed the plugin ships, so the row reads plainly "Loaded"."""
    from sources import services
    from sources.models import SourceJob, SourceJobRun

    settings.VAR_DIR = tmp_path / "var"  # the plugin's data folder: empty, as on a fresh install
    SourceJob.objects.exclude(plugin__plugin_id="localfeed").update(active=False)
    run_ids = services.source_jobs_dispatch()
    assert len(run_ids) == SourceJob.objects.filter(plugin__plugin_id="localfeed").count() == 2
    runs = [services.source_job_run_execute(run_id=run_id) for run_id in run_ids]
    assert [(r.outcome, r.error) for r in runs] == [("succeeded", "")] * 2
    assert {r.result["feed"] for r in runs} == {"example"}
    assert SourceJobRun.objects.filter(outcome="failed").count() == 0
    client.force_login(alice)
    html = client.get("/sources/").content.decode()
    row = html[html.index("<code>localfeed</code>") :]
    row = row[: row.index("</tr>")]
    assert '<span class="state-loaded">Loaded</span>' in row
    assert "failing" not in row and "state-error" not in row and "not run yet" not in row


def test_the_source_plugin_row_shows_failing_jobs(client, fresh_install, alice) -> None:
    from sources.models import SourceJob, SourceJobRun

    client.force_login(alice)
    html = client.get("/sources/").content.decode()
    assert "jobs not run yet" in html
    job = SourceJob.objects.get(plugin__plugin_id="localfeed", name="ingest")
    SourceJobRun.objects.create(
        job=job,
        outcome="failed",
        scheduled_for=timezone.now(),
        error="feed-unavailable: no feed at var/sources/localfeed/feed.json",
    )
    SourceJob.objects.filter(pk=job.pk).update(failures=1)
    html = client.get("/sources/").content.decode()
    assert "Loaded, 1 job failing" in html
    assert "feed-unavailable: no feed at" in html
