"""Fixtures of the job tests: real Celery worker processes sharing a real database.

Personas come from tests/conftest.py: alice owns the session, bob is staff, charlie is another
player who may not touch Alice's jobs, and the anonymous client is not logged in.

Workers are separate processes, so they cannot see pytest-django's in-memory SQLite database:
for SQLite `shared_database` swaps the default connection to a migrated file for one test
module (and back afterwards); on PostgreSQL the workers use the test database itself. Tests that
talk to workers use `transactional_db`, so their rows are committed and visible.
"""

from __future__ import annotations

import copy
import os
import signal
import sqlite3
import subprocess
import sys
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import quote, urlsplit

import pytest
from django.conf import settings as django_settings
from django.test import override_settings
from jobs_helpers import STARTED_WORKERS
from jobs_test_runners import TEST_RUNNERS

HERE = Path(__file__).resolve().parent
REPO = HERE.parent.parent
IN_CI = os.environ.get("CI") == "true"
CELERY = str(Path(sys.executable).with_name("celery"))
WORKER_APP_NAME = "covel-jobs-test-worker"


# --- Database ---------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def shared_database(
    django_db_setup: None, django_db_blocker: Any, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[str]:
    """The DATABASE_URL under which a worker process reaches the test's database."""
    from django.db import connections

    original = connections["default"]
    if original.vendor == "postgresql":
        s = original.settings_dict
        auth = quote(s["USER"] or "")
        if s.get("PASSWORD"):
            auth += ":" + quote(s["PASSWORD"])
        yield f"postgres://{auth}@{s['HOST'] or '127.0.0.1'}:{s['PORT'] or 5432}/{s['NAME']}"
        # Killed workers' server sessions take a moment to go; the test database is dropped next.
        # (Workers name their sessions through PGAPPNAME, so only theirs are waited for.)
        with django_db_blocker.unblock(), original.cursor() as cursor:
            deadline = time.monotonic() + 10
            while time.monotonic() < deadline:
                cursor.execute(
                    "SELECT count(*) FROM pg_stat_activity "
                    "WHERE datname = current_database() AND application_name = %s",
                    [WORKER_APP_NAME],
                )
                if cursor.fetchone()[0] == 0:
                    break
                time.sleep(0.05)
        return
    path = tmp_path_factory.mktemp("jobs-db") / "jobs.sqlite3"
    settings_dict = copy.deepcopy(original.settings_dict)
    settings_dict["NAME"] = str(path)
    settings_dict["TEST"] = {**settings_dict.get("TEST", {}), "NAME": str(path)}
    with django_db_blocker.unblock():
        # The in-memory test database is already migrated: copy it rather than migrate again.
        original.ensure_connection()
        target = sqlite3.connect(path)
        original.connection.backup(target)
        target.close()
    swapped = original.__class__(settings_dict, "default")
    connections["default"] = swapped
    try:
        yield f"sqlite:///{path}"
    finally:
        with django_db_blocker.unblock():
            swapped.close()
        connections["default"] = original


# --- Broker -----------------------------------------------------------------------------------


def _reachable(url: str) -> str | None:
    import socket

    parts = urlsplit(url)
    try:
        with socket.create_connection((parts.hostname or "127.0.0.1", parts.port or 6379), 2):
            return None
    except OSError as exc:
        return str(exc)


@dataclass
class Broker:
    kind: str  # "filesystem" | "redis"
    queue: str
    var_dir: Path
    redis_url: str = ""
    env: dict[str, str] = field(default_factory=dict)


def _reset_producer_pool() -> None:
    from config.celery import app

    # Drop the references only: kombu's global pools still share these connections.
    app._pool = None
    try:
        app.__dict__["amqp"]._producer_pool = None
    except (KeyError, AttributeError):
        pass


def _notify_env() -> dict[str, str]:
    """The worker wakes this test process's settle waits: the same notification channel, as a
    deployment's services share one environment (docs/deploy.md)."""
    from django.conf import settings

    from core import notify

    return {
        "COVEL_NOTIFY_BACKEND": notify.backend().name,
        "COVEL_NOTIFY_DIR": str(settings.COVEL_NOTIFY_DIR),
        "COVEL_NOTIFY_REDIS_URL": settings.COVEL_NOTIFY_REDIS_URL or settings.REDIS_URL or "",
    }


@pytest.fixture(scope="module", params=["filesystem", "redis"])
def broker(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Broker]:
    """A private broker for this module's workers, and the test process pointed at it."""
    from config.celery import app

    var_dir = tmp_path_factory.mktemp(f"jobs-{request.param}")
    queue = f"covel-jobs-test-{uuid.uuid4().hex[:10]}"
    env = {"COVEL_VAR_DIR": str(var_dir), "JOBS_TEST_QUEUE": queue, "REDIS_URL": ""}
    env.update(_notify_env())
    if request.param == "redis":
        url = os.environ.get("REDIS_URL") or os.environ.get(
            "TEST_REDIS_URL", "redis://127.0.0.1:6379/0"
        )
        problem = _reachable(url)
        if problem:
            if IN_CI:
                pytest.fail(f"Redis at {url} is required in CI: {problem}")
            pytest.skip(f"Redis at {url} is not reachable: {problem}")
        found = Broker("redis", queue, var_dir, redis_url=url, env={**env, "REDIS_URL": url})
        conf = {
            "broker_url": url,
            "broker_transport": None,  # the URL's scheme picks Redis
            "broker_transport_options": {"visibility_timeout": 3600},
        }
    else:
        folder = var_dir / "celery-broker"
        for sub in ("out", "processed", "control"):
            (folder / sub).mkdir(parents=True, exist_ok=True)
        found = Broker("filesystem", queue, var_dir, env=env)
        conf = {
            "broker_url": "filesystem://",
            "broker_transport": "config.broker:Transport",
            "broker_transport_options": {
                "data_folder_in": str(folder / "out"),
                "data_folder_out": str(folder / "out"),
                "processed_folder": str(folder / "processed"),
                "control_folder": str(folder / "control"),
                "store_processed": False,
                "polling_interval": 0.02,
            },
        }
    saved = {key: app.conf[key] for key in conf}
    app.conf.update(conf)
    _reset_producer_pool()
    overrides = override_settings(
        REDIS_URL=found.redis_url,
        # The channel the workers were given: this process keeps to it whatever REDIS_URL now
        # says (each test chooses the backend again, see _notify_chosen_again).
        COVEL_NOTIFY_BACKEND=env["COVEL_NOTIFY_BACKEND"],
        COVEL_NOTIFY_REDIS_URL=env["COVEL_NOTIFY_REDIS_URL"],
        COVEL_JOBS_QUEUE=queue,
        COVEL_JOB_RUNNERS={**django_settings.COVEL_JOB_RUNNERS, **TEST_RUNNERS},
        COVEL_JOB_LEASE_SECONDS=1.5,
    )
    overrides.enable()
    try:
        yield found
    finally:
        overrides.disable()
        from core import notify

        notify.reset()  # chosen under the overrides: chosen again under the settings restored
        app.conf.update(saved)
        _reset_producer_pool()
        if found.redis_url:
            _forget_queue(found.redis_url, queue)


@pytest.fixture(autouse=True)
def _notify_chosen_again() -> Iterator[None]:
    """The notification backend is picked from the settings when first used, then kept: under
    the broker's REDIS_URL="" on PostgreSQL that is "postgres" (a pg_notify per publish), which
    must not outlive the test and its overrides (the next test's settings choose again)."""
    yield
    from core import notify

    notify.reset()


def _forget_queue(url: str, queue: str) -> None:
    """Remove the module's private queue (and kombu's bindings of it) from the shared Redis."""
    import redis

    client = redis.Redis.from_url(url)
    keys = list(client.scan_iter(match=f"*{queue}*"))
    if keys:
        client.delete(*keys)
    # Messages of killed workers wait in kombu's shared "unacked" hash to be restored later.
    for tag, message in client.hscan_iter("unacked"):
        if queue.encode() in message:
            client.hdel("unacked", tag)
            client.zrem("unacked_index", tag)
    client.close()


# --- Workers ----------------------------------------------------------------------------------


@dataclass
class Worker:
    name: str
    process: subprocess.Popen[bytes]
    log: Path

    def text(self) -> str:
        return self.log.read_text(encoding="utf-8", errors="replace")

    def kill(self) -> None:
        """SIGKILL the whole worker (main process and pool children): a machine dying."""
        if self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait(10)

    def stop(self) -> None:
        # The tests are done with it: nothing to finish gracefully, so no shutdown to wait for.
        self.kill()


def _spawn(
    *, name: str, concurrency: int, beat: bool, folder: Path, broker: Broker, database_url: str
) -> Worker:
    log = folder / "worker.log"
    env = {
        **os.environ,
        **broker.env,
        "DATABASE_URL": database_url,
        "DJANGO_SETTINGS_MODULE": "jobs_worker_settings",
        "PYTHONPATH": os.pathsep.join([str(REPO), str(HERE)]),
        "PYTHONUNBUFFERED": "1",
        "PGAPPNAME": WORKER_APP_NAME,  # libpq's variable: psycopg names the server sessions
    }
    command = [
        CELERY, "-A", "config", "worker", "-P", "prefork", "-c", str(concurrency),
        "-Q", broker.queue, "-n", f"{name}-{broker.queue}@%h", "-l", "info",
        "--without-gossip", "--without-mingle", "--without-heartbeat",
    ]  # fmt: skip
    if beat:
        command += ["-B", "-s", str(folder / "beat-schedule")]
    with open(log, "wb") as out:
        process = subprocess.Popen(
            command, cwd=REPO, env=env, stdout=out, stderr=subprocess.STDOUT,
            start_new_session=True,
        )  # fmt: skip
    worker = Worker(name, process, log)
    STARTED_WORKERS.append(worker)
    deadline = time.monotonic() + 60
    while " ready." not in worker.text():
        if process.poll() is not None or time.monotonic() > deadline:
            worker.kill()
            pytest.fail(f"worker {name} did not start:\n{worker.text()[-4000:]}")
        time.sleep(0.05)
    return worker


def _stop_all(workers: list[Worker]) -> None:
    for worker in workers:
        worker.stop()
        if worker in STARTED_WORKERS:
            STARTED_WORKERS.remove(worker)


def _workers(
    database_url: str, broker: Broker, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Callable[..., Worker]]:
    """A worker starter for a fixture; the workers it started are stopped when it resumes."""
    started: list[Worker] = []

    def start(*, name: str = "w1", concurrency: int = 1, beat: bool = False) -> Worker:
        folder = tmp_path_factory.mktemp(f"worker-{name}")
        started.append(
            _spawn(name=name, concurrency=concurrency, beat=beat, folder=folder, broker=broker,
                   database_url=database_url)
        )  # fmt: skip
        return started[-1]

    yield start
    _stop_all(started)


@pytest.fixture(scope="module")
def start_worker(
    shared_database: str, broker: Broker, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Callable[..., Worker]]:
    """Start `celery -A config worker` processes that live for the whole test module."""
    yield from _workers(shared_database, broker, tmp_path_factory)


@pytest.fixture
def spawn_worker(
    shared_database: str, broker: Broker, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Callable[..., Worker]]:
    """Start worker processes that are stopped when the test ends."""
    yield from _workers(shared_database, broker, tmp_path_factory)


@pytest.fixture(scope="module")
def worker(start_worker: Callable[..., Worker]) -> Worker:
    """One worker (two pool processes, and Celery beat for the reaper) shared by a module."""
    return start_worker(name="main", concurrency=2, beat=True)


# --- Rows -------------------------------------------------------------------------------------


@pytest.fixture
def play_session(alice: Any) -> Any:
    """A session of Alice's (a world made by hand; the session model is still minimal)."""
    from sessions.models import Session
    from worlds.models import World

    world = World.objects.create(world_id=f"w-{uuid.uuid4().hex[:8]}", name="Test world")
    return Session.objects.create(world=world, owner=alice, title="Alice's game")


@pytest.fixture
def notebook() -> Any:
    """A bundled (trusted, always usable) package whose runtime the jobs run."""
    from catalogue.models import Package

    return Package.objects.create(
        package_id="notebook",
        version="1.0.0",
        source_dir="/nonexistent/notebook",
        trust=Package.Trust.BUNDLED,
        state=Package.State.LOADED,
        content_hash="0" * 64,
    )


@pytest.fixture
def make_job(play_session: Any, notebook: Any, tmp_path: Path) -> Callable[..., Any]:
    """Enqueue a job in its own transaction (so Celery hears of it at the commit)."""
    from django.db import transaction

    from jobs.services import job_enqueue, job_options_clean

    def make(
        runner: str = "sleep",
        *,
        session: Any = None,
        plugin_id: str = "notebook",
        runtime_id: str = "summarise",
        settle: bool = False,
        max_settle_wait_ms: int | None = None,
        max_queue_ms: int | None = None,
        max_execution_ms: int | None = None,
        **inputs: Any,
    ) -> Any:
        with transaction.atomic():
            return job_enqueue(
                session_id=(session or play_session).pk,
                plugin_id=plugin_id,
                runtime_id=runtime_id,
                source_turn=str(uuid.uuid4()),
                inputs={"dir": str(tmp_path / "out"), **inputs},
                options=job_options_clean(
                    settle=settle,
                    max_settle_wait_ms=max_settle_wait_ms,
                    max_queue_ms=max_queue_ms,
                    max_execution_ms=max_execution_ms,
                ),
                runner=runner,
            )

    return make


@pytest.fixture
def approved_weather(tmp_path: Path, bob: Any) -> Any:
    """A community package with server code, approved by Bob (revoke it to make jobs stale)."""
    from approvals.selectors import approval_current
    from approvals.services import approval_decide, approval_request_sync
    from catalogue.models import Package

    folder = tmp_path / "plugins" / "weather"
    (folder / "server").mkdir(parents=True)
    (folder / "PLUGIN.md").write_text("---\nid: weather\nversion: 2.0.0\n---\nForecasts.\n")
    (folder / "server" / "index.js").write_text("export default function register() {}\n")
    package = Package.objects.create(
        package_id="weather",
        version="2.0.0",
        source_dir=str(folder),
        trust=Package.Trust.COMMUNITY,
        source=Package.Source.COMMUNITY,
        state=Package.State.LOADED,
        content_hash="1" * 64,
        manifest={"id": "weather", "version": "2.0.0", "entry": "./server/index.js"},
    )
    approval_request_sync(package=package)
    request = approval_current(package_key="weather")
    approval_decide(request_id=request.pk, decision="allow", actor=bob)
    return package
