"""A process killed in the middle of an install leaves nothing behind: `manage.py plugin_install`
runs in a child process against the test's database and gets SIGKILL at moments spread over
its work (unpacking, validating, writing, renaming, indexing); afterwards the package is either
wholly there (folder, catalogue row, provenance) or wholly absent once the next install has
cleaned up after it."""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest
from install_archives import make_zip, plugin_files

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture
def shared_db(transactional_db, tmp_path):  # noqa: ANN001, ANN201
    """A DATABASE_URL a child process can open, and a way to count rows in it."""
    from django.db import connection

    if connection.vendor == "postgresql":
        s = connection.settings_dict
        url = f"postgres://{s['USER']}@{s['HOST'] or '127.0.0.1'}:{s['PORT'] or 5432}/{s['NAME']}"

        def count(table: str, package_id: str) -> int:
            with connection.cursor() as cursor:
                cursor.execute(f"SELECT count(*) FROM {table} WHERE package_id = %s", [package_id])  # noqa: S608
                return cursor.fetchone()[0]

        yield url, count
        return
    path = tmp_path / "shared.sqlite3"
    connection.ensure_connection()
    target = sqlite3.connect(path)
    connection.connection.backup(target)
    target.close()

    def count(table: str, package_id: str) -> int:
        with sqlite3.connect(path) as db:
            return db.execute(
                f"SELECT count(*) FROM {table} WHERE package_id = ?", [package_id]
            ).fetchone()[0]  # noqa: S608

    yield f"sqlite:///{path}", count


def child_env(hub_dirs: Path, db_url: str) -> dict[str, str]:
    from django.conf import settings

    return {
        **os.environ,
        "DATABASE_URL": db_url,
        "DB_CONN_MAX_AGE": "0",
        "SECRET_KEY": settings.SECRET_KEY,
        "COVEL_VAR_DIR": str(hub_dirs.parent / "var"),
        "COVEL_BUNDLED_PLUGINS_DIR": str(hub_dirs.parent / "bundled"),
        "COVEL_USER_PLUGINS_DIR": str(hub_dirs.parent / "user"),
        "COVEL_INSTALLED_PLUGINS_DIR": str(hub_dirs),
        "COVEL_COMMUNITY_PLUGIN_DIRS": "",
    }


def install(zip_path: Path, env: dict[str, str]) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, str(REPO / "manage.py"), "plugin_install", str(zip_path), "--yes"],
        env=env,
        cwd=REPO,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )


def test_a_kill_at_any_moment_leaves_the_package_whole_or_absent(hub_dirs, shared_db, tmp_path):
    db_url, count = shared_db
    env = child_env(hub_dirs, db_url)
    files = {
        **plugin_files("lantern", code=True),
        **{f"data/{i:04}.txt": os.urandom(512) for i in range(1200)},
    }
    big = tmp_path / "lantern.zip"
    big.write_bytes(make_zip(files))
    small = tmp_path / "compass.zip"
    small.write_bytes(make_zip(plugin_files("compass")))
    # How long an undisturbed install takes here, to spread the kills over it.
    started = time.monotonic()
    probe = install(big, env)
    assert probe.wait(120) == 0, probe.stderr.read().decode()
    took = time.monotonic() - started
    subprocess.run(
        [sys.executable, str(REPO / "manage.py"), "plugin_uninstall", "lantern"],
        env=env,
        cwd=REPO,
        check=True,
        capture_output=True,
    )
    assert count("installs_installation", "lantern") == 0

    outcomes = set()
    for step in range(1, 5):
        child = install(big, env)
        time.sleep(took * step / 5)
        child.send_signal(signal.SIGKILL)
        child.wait(30)
        # The next install (of another package) finishes or undoes what the killed one left.
        other = install(small, env)
        assert other.wait(120) == 0, other.stderr.read().decode()
        subprocess.run(
            [sys.executable, str(REPO / "manage.py"), "plugin_uninstall", "compass"],
            env=env,
            cwd=REPO,
            check=True,
            capture_output=True,
        )
        folder = (hub_dirs / "lantern").is_dir()
        row = count("installs_installation", "lantern")
        package = count("catalogue_package", "lantern")
        leftovers = [p.name for p in hub_dirs.iterdir() if p.name.startswith(".")]
        assert leftovers == [], f"kill {step}: left {leftovers}"
        assert (folder, row, package) in ((True, 1, 1), (False, 0, 0)), (
            f"kill {step}: folder={folder} rows={row},{package}"
        )
        if folder:
            outcomes.add("whole")
            subprocess.run(
                [sys.executable, str(REPO / "manage.py"), "plugin_uninstall", "lantern"],
                env=env,
                cwd=REPO,
                check=True,
                capture_output=True,
            )
        else:
            outcomes.add("absent")
    assert "absent" in outcomes  # at least one kill landed before the commit
