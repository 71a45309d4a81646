"""Small typed readers for environment variables (settings come from the environment)."""

from __future__ import annotations

import os
from pathlib import Path
from urllib.parse import unquote, urlsplit


def env_str(name: str, default: str = "") -> str:
    return os.environ.get(name, default)


def env_bool(name: str, default: bool = False) -> bool:
    value = os.environ.get(name)
    if value is None:
        return default
    return value.strip().lower() in {"1", "true", "yes", "on"}


def env_int(name: str, default: int) -> int:
    value = os.environ.get(name)
    return default if value in (None, "") else int(value)


def env_paths(name: str) -> list[Path]:
    """A list of folders separated by the OS path separator (':' on Linux)."""
    value = os.environ.get(name, "")
    return [Path(part).expanduser() for part in value.split(os.pathsep) if part.strip()]


def database_from_url(url: str, *, sqlite_default: Path) -> dict:
    """Turn DATABASE_URL into a Django DATABASES entry (parsed by dj-database-url).

    postgres://user:pass@host:port/name?sslmode=require&... keeps every query option (sslmode,
    connect_timeout, options, ...). sqlite:////absolute/path, or an empty URL for the embedded
    SQLite file, gets the options two processes need to share the file.

    PostgreSQL connections: DB_POOL=true (the web process under ASGI, where every request runs
    on a thread of its own and a per-thread persistent connection would leak) hands them out
    from a psycopg pool of DB_POOL_MAX_SIZE, waiting up to DB_POOL_TIMEOUT seconds for a free
    one; otherwise (workers) each thread keeps one for DB_CONN_MAX_AGE seconds, health-checked.
    """
    if not url:
        return _sqlite(sqlite_default)
    import dj_database_url

    scheme = urlsplit(url).scheme
    if scheme == "sqlite":
        return _sqlite(Path(unquote(urlsplit(url).path)))
    if scheme not in {"postgres", "postgresql", "pgsql"}:
        raise ValueError(
            f"DATABASE_URL: unsupported scheme {scheme!r} (use postgres:// or sqlite://)"
        )
    pooled = env_bool("DB_POOL", False)
    config = dict(
        dj_database_url.parse(
            url,
            conn_max_age=0 if pooled else env_int("DB_CONN_MAX_AGE", 60),
            conn_health_checks=not pooled,
        )
    )
    config["ENGINE"] = "django.db.backends.postgresql"
    if pooled:
        config.setdefault("OPTIONS", {})["pool"] = {
            "min_size": env_int("DB_POOL_MIN_SIZE", 2),
            "max_size": env_int("DB_POOL_MAX_SIZE", 20),
            # A request waits this long for a connection, then answers 503 (core/middleware.py).
            "timeout": float(env_int("DB_POOL_TIMEOUT", 10)),
        }
    # A fresh database per test run (the test runs set DB_CONN_MAX_AGE=0 so no connection
    # outlives a live-server thread and blocks dropping it).
    config["TEST"] = {"NAME": None}
    return config


def _sqlite(path: Path) -> dict:
    return {
        "ENGINE": "django.db.backends.sqlite3",
        "NAME": str(path),
        "OPTIONS": {
            # IMMEDIATE takes the write lock at BEGIN, so the web process and a worker
            # never deadlock upgrading a read lock; the timeout lets one wait for the other.
            "transaction_mode": "IMMEDIATE",
            "timeout": 20,
            "init_command": "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;",
        },
    }
