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
    """Turn DATABASE_URL into a Django DATABASES entry.

    Supported: postgres://user:pass@host:port/name and sqlite:///absolute/path.
    An empty URL means the embedded SQLite file.
    """
    if not url:
        return _sqlite(sqlite_default)
    parts = urlsplit(url)
    if parts.scheme == "sqlite":
        return _sqlite(Path(unquote(parts.path)))
    if parts.scheme in {"postgres", "postgresql", "pgsql"}:
        return {
            "ENGINE": "django.db.backends.postgresql",
            "NAME": unquote(parts.path.lstrip("/")),
            "USER": unquote(parts.username or ""),
            "PASSWORD": unquote(parts.password or ""),
            "HOST": parts.hostname or "",
            "PORT": str(parts.port or ""),
            # Persistent connections in deployments; the test runs set 0 so no connection
            # outlives a live-server thread and blocks dropping the test database.
            "CONN_MAX_AGE": env_int("DB_CONN_MAX_AGE", 60),
            "TEST": {"NAME": None},
        }
    raise ValueError(
        f"DATABASE_URL: unsupported scheme {parts.scheme!r} (use postgres:// or sqlite://)"
    )


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
