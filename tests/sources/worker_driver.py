"""Plays beat and the outside world for test_sources_worker.py, in its own process.

It shares a file SQLite database and a file-system broker with a real `celery worker`
(pytest's in-memory test database is invisible to other processes). It migrates, syncs,
then dispatches due jobs every 200 ms, as beat would, until the flaky plugin's job has
failed `failures` times and then succeeded. The feed appears only after the last failure.
Prints the runs as one JSON document on stdout.
"""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path

import django

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
django.setup()

from django.core.management import call_command  # noqa: E402

from sources import services, tasks  # noqa: E402
from sources.models import SourceJob, SourceJobRun  # noqa: E402

PLUGIN, JOB = sys.argv[1], sys.argv[2]
FAILURES = int(sys.argv[3])
DEADLINE = time.monotonic() + float(sys.argv[4])

call_command("migrate", verbosity=0)
call_command("sync_sources", stdout=sys.stderr)
# Only the flaky plugin's job runs here: the bundled example's jobs wait.
SourceJob.objects.exclude(plugin__plugin_id=PLUGIN, name=JOB).update(active=False)

feed_written = False
while time.monotonic() < DEADLINE:
    services.source_jobs_dispatch(send=tasks.source_job_run_send)  # autocommit: sent at once
    runs = list(
        SourceJobRun.objects.filter(job__plugin__plugin_id=PLUGIN, job__name=JOB).order_by("id")
    )
    done = [r for r in runs if r.outcome != "running"]
    failed = [r for r in done if r.outcome != "succeeded"]
    if len(failed) >= FAILURES and not feed_written:
        data_dir = services.source_job_data_dir(plugin_id=PLUGIN)
        data_dir.mkdir(parents=True, exist_ok=True)
        (data_dir / "feed.json").write_text(
            json.dumps({"feed": "news", "items": [{"number": 1}, {"number": 2}]})
        )
        feed_written = True
    if any(r.outcome == "succeeded" for r in done):
        break
    time.sleep(0.2)

job = SourceJob.objects.get(plugin__plugin_id=PLUGIN, name=JOB)
runs = SourceJobRun.objects.filter(job=job).order_by("id")
print(
    json.dumps(
        {
            "job": {
                "state": job.state,
                "failures": job.failures,
                "next_run_at": job.next_run_at.isoformat(),
            },
            "runs": [
                {
                    "outcome": r.outcome,
                    "error": r.error,
                    "result": r.result,
                    "scheduled_for": r.scheduled_for.isoformat(),
                    "started_at": r.started_at.isoformat() if r.started_at else None,
                    "ended_at": r.ended_at.isoformat() if r.ended_at else None,
                    "wait_ns": r.wait_ns,
                    "next_run_at": r.next_run_at.isoformat() if r.next_run_at else None,
                }
                for r in runs
            ],
        }
    )
)
