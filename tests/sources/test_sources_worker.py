"""A source job run end to end through a REAL Celery worker process and the real binary.

The worker and a driver process (standing in for beat) share a file SQLite database and a
file-system broker in a temporary var folder: nothing here touches pytest's test database.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from datetime import datetime
from pathlib import Path

import pytest

from tests.sources.conftest import EXAMPLE, EXAMPLE_FEED, REPO, example_manifest, to_toml

RETRY_MS, EVERY_MS = 500, 1500
# The sources tests' own Redis database, so no colleague's worker takes our messages.
REDIS_DB = 11


@pytest.fixture(params=["filesystem", "redis"])
def broker_url(request: pytest.FixtureRequest) -> str:
    """The embedded file-system broker always; Redis too where it runs (required in CI)."""
    if request.param == "filesystem":
        return ""
    from urllib.parse import urlsplit

    import redis

    base = urlsplit(request.getfixturevalue("redis_url"))
    url = f"redis://{base.hostname or '127.0.0.1'}:{base.port or 6379}/{REDIS_DB}"
    redis.Redis.from_url(url).delete("celery")  # stale messages of an aborted earlier run
    return url


@pytest.fixture
def flaky_env(tmp_path: Path, broker_url: str) -> dict[str, str]:
    """A copy of the example plugin as "flakyfeed", with quick retry and every."""
    plugins = tmp_path / "plugins"
    folder = plugins / "flakyfeed"
    shutil.copytree(EXAMPLE, folder)
    (folder / "localfeed").rename(folder / "flakyfeed")
    # Without the shipped example feed, Ingest fails until the driver writes a feed.json.
    (folder / EXAMPLE_FEED).unlink()
    data = example_manifest()
    data["id"] = "flakyfeed"
    data["source"]["ui"]["views"] = [{"id": "flakyfeed-inbox", "rows": True}]
    data["source"]["ui"]["menubar"] = [{"id": "inbox", "view": "flakyfeed-inbox"}]
    data["source"]["jobs"] = [
        {"name": "ingest", "every": f"{EVERY_MS}ms", "retry": f"{RETRY_MS}ms", "timeout": "10s"}
    ]
    (folder / "plugin.toml").write_text(to_toml(data))
    var = tmp_path / "var"
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in {"DATABASE_URL", "REDIS_URL", "CELERY_TASK_ALWAYS_EAGER"}
    }
    env.update(
        {
            "COVEL_VAR_DIR": str(var),
            "DATABASE_URL": f"sqlite:///{var / 'hub.sqlite3'}",
            "COVEL_SOURCE_PLUGIN_DIRS": str(plugins),
            "PYTHONPATH": str(REPO),
            "DJANGO_SETTINGS_MODULE": "config.settings",
        }
    )
    if broker_url:
        env["REDIS_URL"] = broker_url
    return env


@pytest.fixture
def worker(flaky_env: dict[str, str], tmp_path: Path):
    log = open(tmp_path / "worker.log", "wb")  # noqa: SIM115 - closed below
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "celery",
            "-A",
            "config",
            "worker",
            "--pool=solo",
            "--loglevel=INFO",
            "--without-heartbeat",
            "--without-gossip",
            "--without-mingle",
        ],
        cwd=REPO,
        env=flaky_env,
        stdout=log,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    deadline = time.monotonic() + 60
    while b"ready." not in (tmp_path / "worker.log").read_bytes():
        if process.poll() is not None or time.monotonic() > deadline:
            pytest.fail(
                "the celery worker did not start:\n" + (tmp_path / "worker.log").read_text()[-3000:]
            )
        time.sleep(0.2)
    yield process
    os.killpg(process.pid, signal.SIGTERM)
    try:
        process.wait(timeout=15)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        process.wait()
    log.close()


def _t(value: str) -> datetime:
    return datetime.fromisoformat(value)


@pytest.mark.slow
def test_a_job_fails_three_times_then_succeeds_with_its_backoff(
    flaky_env: dict[str, str], worker, tmp_path: Path
) -> None:
    # The driver migrates the file database before it dispatches anything the worker could run.
    done = subprocess.run(
        [
            sys.executable,
            str(Path(__file__).with_name("worker_driver.py")),
            "flakyfeed",
            "ingest",
            "3",
            "90",
        ],
        cwd=REPO,
        env=flaky_env,
        capture_output=True,
        text=True,
        timeout=150,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    report = json.loads(done.stdout)
    runs = report["runs"]
    worker_log = (tmp_path / "worker.log").read_text()
    assert [r["outcome"] for r in runs] == ["failed", "failed", "failed", "succeeded"], worker_log[
        -3000:
    ]
    assert all("feed-unavailable: no feed at" in r["error"] for r in runs[:3])
    assert runs[3]["result"] == {"job": "ingest", "units": 2, "feed": "feed.json"}
    # The wait after each run: retry, doubled, then capped at every; every after the success.
    ms = 1_000_000
    assert [r["wait_ns"] for r in runs] == [
        RETRY_MS * ms,
        2 * RETRY_MS * ms,
        EVERY_MS * ms,
        EVERY_MS * ms,
    ]
    for before, after in zip(runs, runs[1:], strict=False):
        # Each run was due when the previous one said, and did not start before.
        assert after["scheduled_for"] == before["next_run_at"]
        gap = (_t(after["started_at"]) - _t(before["ended_at"])).total_seconds() * 1000
        assert gap >= before["wait_ns"] / ms - 1, (gap, before["wait_ns"])
    assert report["job"]["state"] == "idle" and report["job"]["failures"] == 0
    # The runs ran in the worker process, not in the driver.
    assert worker_log.count("Task sources.run_job[") >= 2 * len(runs)  # received and finished


@pytest.mark.slow
@pytest.mark.parametrize("broker_url", ["filesystem"], indirect=True)
def test_celery_beat_dispatches_and_the_worker_runs_the_job(
    flaky_env: dict[str, str], worker, tmp_path: Path
) -> None:
    import sqlite3
    from contextlib import closing

    subprocess.run(
        [sys.executable, "manage.py", "migrate", "-v0"], cwd=REPO, env=flaky_env, check=True
    )
    subprocess.run(
        [sys.executable, "manage.py", "sync_sources"],
        cwd=REPO,
        env=flaky_env,
        check=True,
        capture_output=True,
    )
    data_dir = Path(flaky_env["COVEL_VAR_DIR"]) / "sources" / "flakyfeed"
    data_dir.mkdir(parents=True)
    (data_dir / "feed.json").write_text(json.dumps({"feed": "news", "items": [{"number": 3}]}))
    beat_log = tmp_path / "beat.log"
    with open(beat_log, "wb") as log:
        beat = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "celery",
                "-A",
                "config",
                "beat",
                "--loglevel=INFO",
                f"--schedule={tmp_path / 'beat-schedule'}",
                "--pidfile=",
            ],
            cwd=REPO,
            # Beat's "Sending due task" lines are debug chatter by default; this test reads them.
            env={**flaky_env, "BEAT_LOG_LEVEL": "INFO"},
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        try:
            database = Path(flaky_env["COVEL_VAR_DIR"]) / "hub.sqlite3"
            deadline = time.monotonic() + 90
            outcome = None
            while time.monotonic() < deadline and outcome != "succeeded":
                time.sleep(0.5)
                with closing(sqlite3.connect(database, timeout=5)) as db:
                    row = db.execute(
                        "SELECT r.outcome FROM sources_sourcejobrun r JOIN sources_sourcejob j ON r.job_id = j.id "
                        "JOIN sources_sourceplugin p ON j.plugin_id = p.id "
                        "WHERE p.plugin_id = 'flakyfeed' AND r.outcome != 'running' ORDER BY r.id LIMIT 1"
                    ).fetchone()
                outcome = row[0] if row else None
        finally:
            os.killpg(beat.pid, signal.SIGTERM)
            beat.wait(timeout=15)
    assert outcome == "succeeded", (
        beat_log.read_text()[-2000:] + (tmp_path / "worker.log").read_text()[-2000:]
    )
    assert "Sending due task sources-dispatch-jobs (sources.dispatch_jobs)" in beat_log.read_text()
    assert json.loads((data_dir / "units.json").read_text()) == {
        "job": "ingest",
        "keys": ["news#3"],
    }
