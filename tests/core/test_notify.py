"""core/notify: a publish wakes every subscriber of its channel, from another thread, another
process (the local backend's sockets), through Redis, or through PostgreSQL LISTEN/NOTIFY;
other channels stay asleep."""

from __future__ import annotations

import asyncio
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from core import notify

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture
def backend_settings(settings, tmp_path):
    settings.COVEL_NOTIFY_DIR = str(tmp_path / "notify")
    notify.reset()
    yield settings
    notify.reset()


def run(coroutine):
    return asyncio.run(coroutine)


def test_local_publish_from_another_thread_wakes_only_that_channel(backend_settings):
    backend_settings.COVEL_NOTIFY_BACKEND = "local"

    async def scenario():
        mine = await notify.subscribe("session:a")
        other = await notify.subscribe("session:b")
        threading.Thread(target=notify.publish, args=("session:a",)).start()
        assert await mine.wait(5) is True
        assert await other.wait(0.2) is False
        assert await mine.wait(0.1) is False  # the flag was cleared: one wake-up per publish
        mine.close()
        other.close()
        assert notify.subscriber_count() == 0

    run(scenario())


def test_local_publish_from_another_process_wakes_this_one(backend_settings):
    backend_settings.COVEL_NOTIFY_BACKEND = "local"
    folder = backend_settings.COVEL_NOTIFY_DIR
    script = (
        "import django, os; os.environ['DJANGO_SETTINGS_MODULE']='config.settings'; "
        f"os.environ['COVEL_NOTIFY_DIR']={folder!r}; os.environ['COVEL_NOTIFY_BACKEND']='local'; "
        "django.setup(); from core import notify; notify.publish('session:x')"
    )

    async def scenario():
        sub = await notify.subscribe("session:x")
        done = await asyncio.to_thread(
            subprocess.run, [sys.executable, "-c", script], cwd=REPO, capture_output=True
        )
        assert done.returncode == 0, done.stderr
        assert await sub.wait(5) is True
        sub.close()

    run(scenario())


def test_redis_publish_wakes_a_subscriber(backend_settings, redis_url):
    backend_settings.COVEL_NOTIFY_BACKEND = "redis"
    backend_settings.COVEL_NOTIFY_REDIS_URL = redis_url

    async def scenario():
        sub = await notify.subscribe("session:r")
        quiet = await notify.subscribe("session:q")
        # A second process's publish, as a worker's would be: a plain Redis PUBLISH.
        import redis

        redis.Redis.from_url(redis_url).publish(notify.PREFIX + "session:r", b"")
        assert await sub.wait(5) is True
        assert await quiet.wait(0.2) is False
        sub.close()
        quiet.close()

    run(scenario())


@pytest.mark.django_db(transaction=True)
def test_postgres_notify_wakes_a_subscriber(backend_settings):
    from django.db import connection

    if connection.vendor != "postgresql":
        pytest.skip("LISTEN/NOTIFY is PostgreSQL's")
    backend_settings.COVEL_NOTIFY_BACKEND = "postgres"

    async def scenario():
        sub = await notify.subscribe("session:p")
        await asyncio.to_thread(notify.publish, "session:p")
        assert await sub.wait(5) is True
        sub.close()

    run(scenario())


def test_an_unknown_backend_is_refused_by_name(backend_settings):
    backend_settings.COVEL_NOTIFY_BACKEND = "carrier-pigeon"
    with pytest.raises(ValueError, match="carrier-pigeon"):
        notify.backend()


def test_the_listen_connection_gets_every_libpq_parameter_quoted():
    """The PostgreSQL listener connects as Django does: a password with a space and a quote,
    and TLS files from OPTIONS, survive; Django's own parameters are not handed to libpq."""
    from psycopg.conninfo import conninfo_to_dict

    params = {
        "dbname": "covel",
        "host": "db.internal",
        "port": 5432,
        "user": "covel",
        "password": "it's a secret",
        "sslmode": "verify-full",
        "sslrootcert": "/etc/covel/root.crt",
        "client_encoding": "UTF8",
        "cursor_factory": object,
        "context": object(),
        "prepare_threshold": None,
    }
    assert conninfo_to_dict(notify.pg_conninfo(params)) == {
        "dbname": "covel",
        "host": "db.internal",
        "port": "5432",
        "user": "covel",
        "password": "it's a secret",
        "sslmode": "verify-full",
        "sslrootcert": "/etc/covel/root.crt",
        "client_encoding": "UTF8",
    }


@pytest.mark.django_db
def test_the_default_backend_is_redis_then_postgres_then_local(backend_settings):
    from django.db import connection

    backend_settings.COVEL_NOTIFY_BACKEND = ""
    backend_settings.REDIS_URL = "redis://127.0.0.1:6379/5"
    assert notify.backend().name == "redis"
    notify.reset()
    backend_settings.REDIS_URL = ""
    # Without Redis: LISTEN/NOTIFY reaches every machine of a PostgreSQL deployment; SQLite is
    # one machine, whose processes the local sockets reach.
    expected = "postgres" if connection.vendor == "postgresql" else "local"
    assert notify.backend().name == expected
