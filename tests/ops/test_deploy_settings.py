"""Settings with DEBUG off: a secret key is required, the documented production variables pass
`manage.py check --deploy` without a warning, and DATABASE_URL keeps its options."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from config.env import database_from_url

REPO = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.slow


def manage(*args: str, var: Path, **env: str) -> subprocess.CompletedProcess:
    base = {k: v for k, v in os.environ.items() if k not in {"SECRET_KEY", "DEBUG"}}
    base.pop("DATABASE_URL", None)
    base.pop("REDIS_URL", None)
    return subprocess.run(
        [str(REPO / ".venv" / "bin" / "python"), "manage.py", *args],
        cwd=REPO,
        env={**base, "COVEL_VAR_DIR": str(var), **env},
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_without_a_secret_key_the_hub_refuses_to_start_and_says_why(tmp_path):
    done = manage("check", var=tmp_path)
    assert done.returncode != 0
    assert "SECRET_KEY is not set" in done.stderr


def test_the_documented_production_variables_pass_check_deploy(tmp_path):
    done = manage(
        "check",
        "--deploy",
        "--fail-level",
        "WARNING",
        var=tmp_path,
        SECRET_KEY="k3y-Zq8!wR5tLm2Vn9Xc4Bf7Hd1Jg6Ps0Ua" * 2,
        ALLOWED_HOSTS="hub.example.org",
        COVEL_HTTPS="true",
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "no issues" in done.stdout


def test_without_https_check_deploy_warns_about_cookies(tmp_path):
    done = manage(
        "check", "--deploy", var=tmp_path, SECRET_KEY="k3y-Zq8!wR5tLm2Vn9Xc4Bf7Hd1Jg6Ps0Ua" * 2
    )
    assert "SESSION_COOKIE_SECURE" in done.stdout + done.stderr


def test_database_url_keeps_sslmode_and_options_and_pools_on_request(monkeypatch, tmp_path):
    url = "postgres://hub:s%40cret@db.internal:6432/covel?sslmode=verify-full&connect_timeout=5"
    monkeypatch.delenv("DB_POOL", raising=False)
    monkeypatch.setenv("DB_CONN_MAX_AGE", "120")
    plain = database_from_url(url, sqlite_default=tmp_path / "x")
    assert plain["PASSWORD"] == "s@cret" and plain["PORT"] == 6432
    assert plain["OPTIONS"] == {"sslmode": "verify-full", "connect_timeout": 5}
    assert plain["CONN_MAX_AGE"] == 120 and plain["CONN_HEALTH_CHECKS"] is True
    monkeypatch.setenv("DB_POOL", "true")
    pooled = database_from_url(url, sqlite_default=tmp_path / "x")
    assert pooled["CONN_MAX_AGE"] == 0  # Django's pool hands connections out per request
    assert pooled["OPTIONS"]["sslmode"] == "verify-full"
    assert pooled["OPTIONS"]["pool"]["max_size"] == 20


def test_an_unknown_database_scheme_is_refused_by_name(tmp_path):
    with pytest.raises(ValueError, match="mysql"):
        database_from_url("mysql://x@y/z", sqlite_default=tmp_path / "x")
