"""Shared fixtures.

Personas (used across the suite):
- alice: a player who owns worlds and sessions; no staff rights.
- bob: staff; approves packages, may edit any world, sees every job.
- charlie: another player; may see nothing private of Alice's and edit nothing of hers.
- the anonymous visitor: browses the catalogue, is sent to log in for anything else.
"""

from __future__ import annotations

import os
import re
import shutil
import socket
import sys
from pathlib import Path
from urllib.parse import urlsplit

import pytest

REPO = Path(__file__).resolve().parent.parent
IN_CI = os.environ.get("CI") == "true"

# Processes a test starts (servers, workers) run with DEBUG off too: they get the suite's key
# (a signed-in cookie made here is valid there) and unhashed static files.
os.environ.setdefault("SECRET_KEY", __import__("django.conf").conf.settings.SECRET_KEY)
os.environ.setdefault("COVEL_STATIC_MANIFEST", "false")


def require_service(name: str, url: str, default_port: int) -> None:
    """Skip when a service is missing on a laptop; fail in CI, where it must be there."""
    parts = urlsplit(url)
    try:
        with socket.create_connection(
            (parts.hostname or "127.0.0.1", parts.port or default_port), 2
        ):
            return
    except OSError as exc:
        if IN_CI:
            pytest.fail(f"{name} at {url} is required in CI: {exc}")
        pytest.skip(f"{name} at {url} is not reachable: {exc}")


# The second pass of scripts/test.sh (COVEL_TEST_PASS=services: PostgreSQL and Redis) repeats
# only what could answer differently there. Left out, having run in the first pass:
# - tests that ask for no database and no Redis (pytest-django refuses them any query) and whose
#   module names nothing that reads the services from the environment or starts a process;
# - browser tests: they check what Chromium shows and does; the views under them run on both
#   databases through the client tests;
# - tests marked first_pass_only (their servers are their own).
_SERVICE_FIXTURES = {
    "db",
    "transactional_db",
    "live_server",
    "django_db_reset_sequences",
    "django_db_serialized_rollback",
    "redis_url",
}
_READS_SERVICES = re.compile(
    r"subprocess|Popen|environ|DATABASE|REDIS|redis|notify|connection|celery|spawn|postgres"
)


def _same_on_services(item: pytest.Item, module_texts: dict[Path, str]) -> bool:
    marks = {mark.name for mark in item.iter_markers()}
    if "first_pass_only" in marks or "browser" in marks or "chromium_path" in item.fixturenames:
        return True
    if _SERVICE_FIXTURES & set(item.fixturenames) or {"django_db", "services"} & marks:
        return False
    path = Path(item.path)
    if path not in module_texts:
        module_texts[path] = path.read_text(encoding="utf-8")
    return not _READS_SERVICES.search(module_texts[path])


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if os.environ.get("COVEL_TEST_PASS") != "services":
        return
    texts: dict[Path, str] = {}
    kept, left = [], []
    for item in items:
        (left if _same_on_services(item, texts) else kept).append(item)
    if left:
        config.hook.pytest_deselected(items=left)
        items[:] = kept


# Tables whose rows the database itself refuses to DELETE (approvals' append-only journal).
_TRUNCATE_ONLY = {"approvals_journalentry"}


@pytest.fixture(scope="session", autouse=True)
def _postgres_flush_by_delete():
    """Empty PostgreSQL's tables after a transactional test with DELETE, not Django's one
    TRUNCATE of every table: a test leaves a handful of rows, and TRUNCATE's fixed cost per
    table (new files for each of ~55 tables) made each flush take about a second, most of the
    PostgreSQL pass. Foreign keys are deferred, so the order of the DELETEs does not matter;
    the result is the same empty tables, sequences untouched as before."""
    from django.db.backends.postgresql.operations import DatabaseOperations

    truncate = DatabaseOperations.sql_flush

    def sql_flush(self, style, tables, *, reset_sequences=False, allow_cascade=False):
        if reset_sequences or allow_cascade:
            return truncate(
                self, style, tables, reset_sequences=reset_sequences, allow_cascade=allow_cascade
            )
        kept = [table for table in tables if table in _TRUNCATE_ONLY]
        deletes = [f"DELETE FROM {self.quote_name(t)};" for t in tables if t not in kept]
        return deletes + truncate(self, style, kept)

    DatabaseOperations.sql_flush = sql_flush
    yield
    DatabaseOperations.sql_flush = truncate


@pytest.fixture(autouse=True)
def _model_slots_uncached():
    """The model slots a test's database holds, not a cached set of an earlier test's (on the
    PostgreSQL and Redis pass they are cached in Redis, which no rollback empties)."""
    from agents.selectors import slots_forget

    slots_forget()


@pytest.fixture(autouse=True)
def _job_lease_keeper_idle():
    """After a test that ran jobs in this process, wait for the lease keeper thread to put its
    database work down, so it cannot hold the shared in-memory SQLite database's write lock
    while the next test begins its transaction."""
    yield
    worker = sys.modules.get("jobs.worker")
    if worker is not None:
        assert worker._keeper.wait_idle(), "the job lease keeper thread is still busy"


@pytest.fixture
def redis_url() -> str:
    url = os.environ.get("REDIS_URL") or os.environ.get(
        "TEST_REDIS_URL", "redis://127.0.0.1:6379/0"
    )
    require_service("Redis", url, 6379)
    return url


@pytest.fixture(scope="session")
def chromium_path() -> str:
    path = shutil.which("chromium") or shutil.which("chromium-browser")
    if not path:
        if IN_CI:
            pytest.fail(
                "Debian's chromium is required in CI (scripts/install.sh --dev installs it)"
            )
        pytest.skip("chromium is not installed")
    return path


@pytest.fixture
def alice(django_user_model):
    return django_user_model.objects.create_user("alice", "alice@example.com", "alice-password")


@pytest.fixture
def bob(django_user_model):
    return django_user_model.objects.create_user(
        "bob", "bob@example.com", "bob-password", is_staff=True
    )


@pytest.fixture
def charlie(django_user_model):
    return django_user_model.objects.create_user(
        "charlie", "charlie@example.com", "charlie-password"
    )


@pytest.fixture
def browser(chromium_path, monkeypatch):
    """A headless Debian Chromium driven by Playwright (no browser download)."""
    from playwright.sync_api import sync_playwright

    # Playwright's sync API runs an event loop in this thread; the ORM calls here are still sync.
    monkeypatch.setenv("DJANGO_ALLOW_ASYNC_UNSAFE", "true")
    with sync_playwright() as pw:
        instance = pw.chromium.launch(
            executable_path=chromium_path,
            headless=True,
            args=[
                "--no-sandbox",
                "--disable-gpu",
                "--disable-quic",
                "--no-first-run",
                "--disable-background-networking",
                "--disable-component-update",
                "--disable-sync",
            ],
        )
        yield instance
        instance.close()
    # Code run under Playwright's event loop opens a second database connection; left open on
    # PostgreSQL it blocks dropping the test database.
    from django.db import connections

    connections.close_all()


@pytest.fixture
def page(transactional_db, browser, live_server, monkeypatch):
    """A fresh browser page against the live server."""
    from django.db import connections

    # The live server's request threads share this settings dict: with CONN_MAX_AGE they would
    # keep PostgreSQL connections open past the test and block dropping the test database.
    monkeypatch.setitem(connections["default"].settings_dict, "CONN_MAX_AGE", 0)
    context = browser.new_context()
    page = context.new_page()
    page.set_default_timeout(20_000)
    yield page
    context.close()
    connections.close_all()


@pytest.fixture
def log_in(live_server):
    """log_in(page, username, password, next_url="/"): sign in through the real login form."""

    def sign_in(page, username: str, password: str, next_url: str = "/") -> None:
        page.goto(f"{live_server.url}/accounts/login/?next={next_url}")
        page.fill("input[name=username]", username)
        page.fill("input[name=password]", password)
        with page.expect_navigation():
            page.click("form.card button[type=submit]")

    return sign_in
