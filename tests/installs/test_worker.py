"""An install job from the add page runs on a real Celery worker process over real Redis: the
page sends the job after its commit, the worker claims the row, and the row says done (or why
not). Skipped on a laptop without Redis, required in CI."""

from __future__ import annotations

import copy
import os
import sqlite3
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest
from install_archives import plugin_files

REPO = Path(__file__).resolve().parents[2]
CELERY = str(Path(sys.executable).with_name("celery"))


@pytest.fixture
def shared_db(transactional_db, tmp_path):  # noqa: ANN001, ANN201
    """The test's database as a worker process can open it (a file copy swapped in on SQLite)."""
    from django.db import connections

    original = connections["default"]
    if original.vendor == "postgresql":
        s = original.settings_dict
        yield f"postgres://{s['USER']}@{s['HOST'] or '127.0.0.1'}:{s['PORT'] or 5432}/{s['NAME']}"
        return
    path = tmp_path / "worker.sqlite3"
    original.ensure_connection()
    target = sqlite3.connect(path)
    original.connection.backup(target)
    target.close()
    settings_dict = copy.deepcopy(original.settings_dict)
    settings_dict["NAME"] = str(path)
    swapped = original.__class__(settings_dict, "default")
    connections["default"] = swapped
    try:
        yield f"sqlite:///{path}"
    finally:
        swapped.close()
        connections["default"] = original


def _reset_producers() -> None:
    """Forget producers made for the suite's broker (an earlier test may have sent a task)."""
    from config.celery import app

    app._pool = None
    try:
        app.__dict__["amqp"]._producer_pool = None
    except (KeyError, AttributeError):
        pass


@pytest.fixture
def worker(redis_url, shared_db, hub_dirs, settings):  # noqa: ANN001, ANN201
    from config.celery import app

    queue = f"covel-installs-test-{uuid.uuid4().hex[:8]}"
    saved = {k: app.conf[k] for k in ("broker_url", "broker_transport")}
    app.conf.update(broker_url=redis_url, broker_transport=None)
    _reset_producers()
    settings.COVEL_JOBS_QUEUE = queue
    env = {
        **os.environ,
        "DATABASE_URL": shared_db,
        "DB_CONN_MAX_AGE": "0",
        "REDIS_URL": redis_url,
        "COVEL_JOBS_QUEUE": queue,
        "SECRET_KEY": settings.SECRET_KEY,
        "COVEL_VAR_DIR": str(settings.VAR_DIR),
        "COVEL_BUNDLED_PLUGINS_DIR": str(settings.COVEL_BUNDLED_PLUGINS_DIR),
        "COVEL_USER_PLUGINS_DIR": str(settings.COVEL_USER_PLUGINS_DIR),
        "COVEL_INSTALLED_PLUGINS_DIR": str(hub_dirs),
        "COVEL_COMMUNITY_PLUGIN_DIRS": "",
    }
    process = subprocess.Popen(
        [
            CELERY,
            "-A",
            "config",
            "worker",
            "-P",
            "solo",
            "-Q",
            queue,
            "--without-gossip",
            "--without-mingle",
            "--without-heartbeat",
            "-l",
            "WARNING",
        ],
        cwd=REPO,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    try:
        yield process
    finally:
        process.terminate()
        try:
            process.wait(15)
        except subprocess.TimeoutExpired:
            process.kill()
        app.conf.update(saved)
        _reset_producers()
        import redis

        client = redis.Redis.from_url(redis_url)
        keys = list(client.scan_iter(match=f"*{queue}*"))
        if keys:
            client.delete(*keys)


def test_a_link_install_runs_on_a_real_worker(
    worker, hub_dirs, git_server, client, bob, django_capture_on_commit_callbacks
):
    from catalogue.models import Package
    from installs.models import Installation, InstallJob

    git_server.repo("pkgs")
    git_server.commit("pkgs", plugin_files("lantern"))
    client.force_login(bob)
    preview = client.post(
        "/installs/add/", {"what": "link", "url": f"{git_server.url}/pkgs.git"}
    ).content.decode()
    token = preview.split('name="token" value="', 1)[1].split('"', 1)[0]
    with django_capture_on_commit_callbacks(execute=True):
        client.post("/installs/add/confirm", {"token": token, "accept_risk": "yes"})
    job = InstallJob.objects.get()
    deadline = time.monotonic() + 150
    while time.monotonic() < deadline:
        job.refresh_from_db()
        if job.state in ("done", "failed"):
            break
        assert worker.poll() is None, worker.stderr.read().decode()[-2000:]
        time.sleep(0.3)
    assert job.state == "done", (job.state, job.step, job.error)
    assert job.progress == 100 and job.result["id"] == "lantern"
    assert Installation.objects.get().package_id == "lantern"
    assert Package.objects.get(package_id="lantern").trust == "community"
    assert (hub_dirs / "lantern" / "PLUGIN.md").is_file()
