"""Scheduling and running source jobs in-process, with real plugin binaries."""

from __future__ import annotations

import json
import textwrap
import time
from datetime import timedelta
from pathlib import Path

import pytest
from django.utils import timezone

from sources import services
from sources.manifest.durations import MINUTE, SECOND
from sources.models import SourceJob, SourceJobRun
from tests.sources.conftest import PluginWriter, minimal_manifest

pytestmark = pytest.mark.django_db


@pytest.fixture
def var_dir(tmp_path: Path, settings) -> Path:
    settings.VAR_DIR = tmp_path / "var"
    settings.COVEL_SOURCE_PLUGIN_DIRS = [tmp_path / "plugins"]
    return settings.VAR_DIR


def feed(var_dir: Path, items: list[int]) -> None:
    folder = var_dir / "sources" / "localfeed"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "feed.json").write_text(
        json.dumps({"feed": "news", "items": [{"number": n} for n in items]})
    )


def scripted(
    write_plugin: PluginWriter, body: str, *, job: dict | None = None, **source: object
) -> SourceJob:
    """A plugin "scripted" whose binary is the given Python body, synced, with its one job."""
    data = minimal_manifest("scripted")
    data["source"]["jobs"] = [job or {"name": "ingest", "every": "5m", "timeout": "2s"}]
    data["source"].update(source)
    folder = write_plugin(data, folder="scripted")
    exe = folder / "scripted"
    exe.write_text("#!/usr/bin/env python3\n" + textwrap.dedent(body))
    exe.chmod(0o755)
    services.source_plugins_sync()
    return SourceJob.objects.get(plugin__plugin_id="scripted")


def run_once(job: SourceJob) -> SourceJobRun:
    """Make job (alone) due, dispatch it as beat would, and run it as a worker would."""
    SourceJob.objects.exclude(id=job.id).update(next_run_at=timezone.now() + timedelta(days=1))
    SourceJob.objects.filter(id=job.id).update(next_run_at=timezone.now())
    [run_id] = services.source_jobs_dispatch()
    return services.source_job_run_execute(run_id=run_id)


def test_beat_dispatches_source_jobs_every_few_seconds() -> None:
    from config.celery import app

    entry = app.conf.beat_schedule["sources-dispatch-jobs"]
    assert entry == {"task": "sources.dispatch_jobs", "schedule": 5.0}
    app.loader.import_default_modules()
    assert {"sources.dispatch_jobs", "sources.run_job"} <= set(app.tasks)


def test_a_new_job_is_due_at_once_and_claimed_once(var_dir: Path, example_copy: Path) -> None:
    services.source_plugins_sync()
    first = services.source_jobs_dispatch()
    assert len(first) == 2
    assert services.source_jobs_dispatch() == []  # both are running now
    assert set(SourceJob.objects.values_list("state", flat=True)) == {"running"}


def test_a_claim_needs_the_job_still_idle_and_due_as_read(
    var_dir: Path, example_copy: Path
) -> None:
    services.source_plugins_sync()
    job = SourceJob.objects.get(name="ingest")
    # Another dispatcher claimed it between our read and our update: our UPDATE changes nothing.
    claimed = SourceJob.objects.filter(id=job.id, state="idle", next_run_at=job.next_run_at).update(
        state="running"
    )
    assert claimed == 1
    assert (
        SourceJob.objects.filter(id=job.id, state="idle", next_run_at=job.next_run_at).update(
            state="running"
        )
        == 0
    )


def test_a_job_not_yet_due_is_left_alone(var_dir: Path, example_copy: Path) -> None:
    services.source_plugins_sync()
    SourceJob.objects.update(next_run_at=timezone.now() + timedelta(minutes=1))
    assert services.source_jobs_dispatch() == []


def test_a_run_calls_the_example_binarys_ingest(var_dir: Path, example_copy: Path) -> None:
    services.source_plugins_sync()
    feed(var_dir, [1, 2, 3])
    job = SourceJob.objects.get(name="ingest")
    run = run_once(job)
    assert run.outcome == "succeeded", run.error
    assert run.result == {"job": "ingest", "units": 3, "feed": "feed.json"}
    assert run.started_at <= run.ended_at and run.error == ""
    assert run.wait_ns == 5 * MINUTE and run.next_run_at == run.ended_at + timedelta(minutes=5)
    job.refresh_from_db()
    assert (job.state, job.failures, job.next_run_at) == ("idle", 0, run.next_run_at)
    units = json.loads((var_dir / "sources" / "localfeed" / "units.json").read_text())
    assert units == {"job": "ingest", "keys": ["news#1", "news#2", "news#3"]}


def test_as_shipped_the_example_ingests_its_own_example_feed(
    var_dir: Path, example_copy: Path
) -> None:
    """A fresh install has no feed.json yet: the example reads the feed it ships, so its jobs
    succeed rather than fail every five minutes; a feed.json, once there, wins."""
    shipped = json.loads((example_copy / "example-feed.json").read_text())
    services.source_plugins_sync()
    job = SourceJob.objects.get(name="ingest")
    run = run_once(job)
    assert run.outcome == "succeeded", run.error
    assert run.result == {"job": "ingest", "units": len(shipped["items"]), "feed": "example"}
    units = json.loads((var_dir / "sources" / "localfeed" / "units.json").read_text())
    assert units["keys"] == [f"example#{item['number']}" for item in shipped["items"]]
    feed(var_dir, [9])
    run = run_once(job)
    assert run.result == {"job": "ingest", "units": 1, "feed": "feed.json"}


def test_a_broken_feed_is_an_error_not_a_fall_back_to_the_example(
    var_dir: Path, example_copy: Path
) -> None:
    services.source_plugins_sync()
    folder = var_dir / "sources" / "localfeed"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "feed.json").write_text("{not json")
    run = run_once(SourceJob.objects.get(name="ingest"))
    assert run.outcome == "failed" and "feed-unavailable: unreadable feed at" in run.error
    assert "feed.json" in run.error


def test_a_failed_run_waits_retry_then_doubles_up_to_every(
    var_dir: Path, feedless_copy: Path
) -> None:
    services.source_plugins_sync()
    job = SourceJob.objects.get(name="ingest")  # every 5m, retry 30s
    waits = []
    for _ in range(5):
        run = run_once(job)
        assert run.outcome == "failed" and "feed-unavailable: no feed at" in run.error
        waits.append(run.wait_ns // SECOND)
    assert waits == [30, 60, 120, 240, 300]
    feed(var_dir, [7])
    run = run_once(job)
    assert run.outcome == "succeeded" and run.wait_ns == 5 * MINUTE
    job.refresh_from_db()
    assert job.failures == 0


def test_without_retry_a_failure_backs_off_from_every(
    var_dir: Path, write_plugin: PluginWriter
) -> None:
    job = scripted(
        write_plugin,
        "import sys; sys.exit(1)\n",
        job={"name": "ingest", "every": "2m", "timeout": "5s"},
    )
    assert [run_once(job).wait_ns for _ in range(3)] == [2 * MINUTE] * 3


def test_a_run_past_its_timeout_is_killed(
    var_dir: Path, write_plugin: PluginWriter, tmp_path: Path
) -> None:
    pid_file = tmp_path / "child.pid"
    job = scripted(
        write_plugin,
        f"""
        import os, subprocess, time
        child = subprocess.Popen(["sleep", "60"])
        open({str(pid_file)!r}, "w").write(str(child.pid))
        time.sleep(60)
        """,
        job={"name": "ingest", "every": "5m", "timeout": "1s", "retry": "10s"},
    )
    started = time.monotonic()
    run = run_once(job)
    assert time.monotonic() - started < 10
    assert run.outcome == "timed_out" and "did not answer within 1s" in run.error
    assert run.wait_ns == 10 * SECOND
    # The whole process group went, the binary's own child included.
    pid = int(pid_file.read_text())
    deadline = time.monotonic() + 5
    while Path(f"/proc/{pid}").exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert (
        not Path(f"/proc/{pid}").exists()
        or "zombie" in Path(f"/proc/{pid}/status").read_text().lower()
    )


@pytest.mark.parametrize(
    ("body", "error"),
    [
        ("print('hello, host')\n", "stdout line 1 is not JSON"),
        (
            "import sys; print('boom', file=sys.stderr); sys.exit(3)\n",
            "exited with status 3 without answering Ingest: boom",
        ),
        ("import json; print(json.dumps({'id': 1}))\n", "neither result nor error"),
        (
            "import json; print(json.dumps({'id': 1, 'error': {'code': 'rate-limited', 'message': 'slow down'}}))\n",
            "Ingest of job 'ingest' failed: rate-limited: slow down",
        ),
    ],
)
def test_a_misbehaving_binary_fails_the_run_with_a_clear_error(
    var_dir: Path, write_plugin: PluginWriter, body: str, error: str
) -> None:
    run = run_once(scripted(write_plugin, body))
    assert run.outcome == "failed" and error in run.error


def test_a_missing_binary_fails_the_run(var_dir: Path, write_plugin: PluginWriter) -> None:
    write_plugin(minimal_manifest("nobin"), binary=False)
    services.source_plugins_sync()
    run = run_once(SourceJob.objects.get())
    assert run.outcome == "failed" and "has no binary" in run.error


ECHO = """
import json, os, sys
request = json.loads(sys.stdin.readline())
reply = {"id": request["id"], "result": {"request": request, "env": sorted(os.environ)}}
print(json.dumps(reply))
"""


def test_the_request_names_the_job_and_carries_config_reads(
    var_dir: Path, write_plugin: PluginWriter, settings, monkeypatch
) -> None:
    settings.COVEL_SOURCE_CONFIG = {"sweep": {"fast": "10m"}, "other": "secret"}
    monkeypatch.setenv("SECRET_KEY", "hub-secret")
    job = scripted(write_plugin, ECHO, config_reads=["sweep"])
    run = run_once(job)
    assert run.outcome == "succeeded", run.error
    request = run.result["request"]
    assert request["method"] == "Ingest" and request["id"] == 1
    assert request["params"]["job"] == "ingest" and request["params"]["protocol"] == 1
    # The plugin's own table always (empty here), and the config_reads keys: nothing else.
    assert request["params"]["config"] == {"scripted": {}, "sweep": {"fast": "10m"}}
    assert request["params"]["data_dir"] == str(var_dir / "sources" / "scripted")
    assert "SECRET_KEY" not in run.result["env"] and "COVEL_PROTOCOL" in run.result["env"]


def test_ingest_receives_the_plugins_own_table(
    var_dir: Path, write_plugin: PluginWriter, settings
) -> None:
    settings.COVEL_SOURCE_CONFIG = {
        "scripted": {"token": "t1", "feeds": {"news": True}},
        "scripted.limit": 5,  # a flat key of its table
        "sweep.fast": "90s",
        "pulls": {"token": "not-ours"},
    }
    run = run_once(scripted(write_plugin, ECHO, config_reads=["sweep"]))
    assert run.outcome == "succeeded", run.error
    assert run.result["request"]["params"]["config"] == {
        "scripted": {"token": "t1", "feeds": {"news": True}, "limit": 5},
        "sweep": {"fast": "90s"},
    }


def test_every_from_reads_the_interval_from_configuration(
    var_dir: Path, example_copy: Path, settings
) -> None:
    services.source_plugins_sync()
    job = SourceJob.objects.get(name="sweep")  # every 1h, every_from sweep.fast
    assert services.source_job_interval_ns(job=job) == 60 * MINUTE
    settings.COVEL_SOURCE_CONFIG = {"sweep": {"fast": "10m"}}
    assert services.source_job_interval_ns(job=job) == 10 * MINUTE
    settings.COVEL_SOURCE_CONFIG = {"sweep.fast": "90s"}
    assert services.source_job_interval_ns(job=job) == 90 * SECOND
    settings.COVEL_SOURCE_CONFIG = {"sweep": {"fast": "1d"}}  # not a Go duration: every
    assert services.source_job_interval_ns(job=job) == 60 * MINUTE
    feed(var_dir, [1])
    settings.COVEL_SOURCE_CONFIG = {"sweep": {"fast": "10m"}}
    assert run_once(job).wait_ns == 10 * MINUTE


def test_a_message_delivered_twice_runs_the_binary_once(
    var_dir: Path, write_plugin: PluginWriter, tmp_path: Path
) -> None:
    counter = tmp_path / "count"
    job = scripted(
        write_plugin,
        f"""
        import json, sys
        request = json.loads(sys.stdin.readline())
        with open({str(counter)!r}, "a") as f:
            f.write("x")
        print(json.dumps({{"id": request["id"], "result": {{}}}}))
        """,
    )
    SourceJob.objects.filter(id=job.id).update(next_run_at=timezone.now())
    [run_id] = services.source_jobs_dispatch()
    services.source_job_run_execute(run_id=run_id)
    again = services.source_job_run_execute(run_id=run_id)
    assert again.outcome == "succeeded" and counter.read_text() == "x"


def test_the_reaper_gives_back_a_job_whose_worker_died(var_dir: Path, example_copy: Path) -> None:
    services.source_plugins_sync()
    job = SourceJob.objects.get(name="ingest")
    [run_id, _] = services.source_jobs_dispatch()
    run = SourceJobRun.objects.get(id=run_id)
    later = timezone.now() + timedelta(minutes=10)  # past timeout (20s) and grace
    reaped = services.source_jobs_reap(now=later)
    assert reaped == 2
    run.refresh_from_db()
    job = run.job
    assert run.outcome == "orphaned" and "lease expired" in run.error
    assert job.state == "idle" and job.failures == 1
    assert run.next_run_at == later + timedelta(seconds=30 if job.name == "ingest" else 3600)


def test_an_inactive_plugins_jobs_are_not_dispatched(
    var_dir: Path, write_plugin: PluginWriter
) -> None:
    data = minimal_manifest()
    write_plugin(data)
    services.source_plugins_sync()
    data["protocol"] = 5
    write_plugin(data)
    services.source_plugins_sync()
    assert services.source_jobs_dispatch() == []


def test_dispatch_sends_the_run_task_after_commit(
    var_dir: Path, example_copy: Path, django_capture_on_commit_callbacks, monkeypatch
) -> None:
    from sources import tasks

    sent: list[int] = []
    monkeypatch.setattr(tasks.source_job_run, "delay", lambda run_id: sent.append(run_id))
    services.source_plugins_sync()
    with django_capture_on_commit_callbacks(execute=True) as callbacks:
        run_ids = services.source_jobs_dispatch(send=tasks.source_job_run_send)
    assert len(callbacks) == 2 and sorted(sent) == sorted(run_ids)


def test_old_runs_are_pruned(var_dir: Path, write_plugin: PluginWriter, monkeypatch) -> None:
    monkeypatch.setattr(services, "RUNS_KEPT", 3)
    job = scripted(write_plugin, "import sys; sys.exit(2)\n")
    ids = [run_once(job).id for _ in range(5)]
    assert list(job.runs.order_by("id").values_list("id", flat=True)) == ids[-3:]
