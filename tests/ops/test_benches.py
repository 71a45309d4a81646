"""Every benchmark under bench/ runs once at its smallest size, as its docstring says, and
passes its own checks (exit status 0), so none can rot unnoticed. Figures are not judged here:
the machine running the suite is not a measuring machine.

Each runs in a process of its own, on a throw-away database (SQLite, or for bench/streams.py,
which measures PostgreSQL and Redis, the private servers of tests/ops/private_services.py),
never on the database the suite's own tests use.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

from private_services import PrivatePostgres, PrivateRedis, free_port  # noqa: E402

REPO = Path(__file__).resolve().parents[2]
PYTHON = str(REPO / ".venv" / "bin" / "python")

# scripts/test.sh runs the suite twice (embedded, and PostgreSQL + Redis); the benches ignore
# the suite's database either way, so test.sh leaves this file out of the second pass.
# Throw-away databases of its own: the same in both passes of scripts/test.sh.
pytestmark = [pytest.mark.slow, pytest.mark.first_pass_only]

# bench file: (smallest arguments, a line its output must contain)
SMALLEST = {
    "validate.py": (["-n", "12", "--repeat", "1"], "packages/s"),
    "catalogue.py": (["--packages", "24", "--requests", "6"], "misspelt"),
    "jshost.py": (
        ["--seconds", "0.2", "--gets", "20", "--starts", "1", "--rounds", "1"],
        "calls/s",
    ),
    # Both narrators: the storyteller, then the story agent and its stand-in model.
    "turns.py": (
        ["--sessions", "1,2", "--turns", "2", "--model-ms", "5"],
        "The story agent, its model answering after 5 ms",
    ),
    # The checkout against itself: two trees' children, the medians and their ratio.
    "compare_trees.py": (
        ["--old", ".", "--rounds", "1", "--turns", "4", "--parallel", "2", "--calls", "20"],
        "new/old",
    ),
}


def _env(**extra: str) -> dict[str, str]:
    # A fresh clone's shell: no SECRET_KEY, no database or Redis unless the bench is given one.
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in {"SECRET_KEY", "DATABASE_URL", "REDIS_URL", "DJANGO_SETTINGS_MODULE"}
    }
    return {**env, **extra}


def _run(args: list[str], env: dict[str, str], expect: str) -> None:
    done = subprocess.run(
        [PYTHON, *args], cwd=REPO, env=env, capture_output=True, text=True, timeout=600
    )
    assert done.returncode == 0, (done.stdout[-3000:], done.stderr[-6000:])
    assert expect in done.stdout, done.stdout[-3000:]


def test_every_bench_is_covered_here():
    benches = {p.name for p in (REPO / "bench").glob("*.py") if not p.name.startswith("_")}
    assert benches == {*SMALLEST, "jobs.py", "streams.py"}


@pytest.mark.parametrize("bench", sorted(SMALLEST))
def test_a_bench_runs_at_its_smallest_size(bench):
    args, expect = SMALLEST[bench]
    _run([f"bench/{bench}", *args], _env(), expect)


def test_the_jobs_bench_runs_at_its_smallest_size():
    # The embedded default (folder broker): no shared Redis needed, nothing left in one.
    args = ["--jobs", "6", "--settle", "2", "--rounds", "1", "--broker", "filesystem"]
    _run(["bench/jobs.py", *args], _env(), "settle release latency")


def test_the_jobs_and_streams_benches_run_on_postgres_and_redis():
    pg, redis = PrivatePostgres(), PrivateRedis()
    try:
        env = _env(DATABASE_URL=pg.url, REDIS_URL=redis.url)
        _run(["bench/jobs.py", "--jobs", "6", "--settle", "2", "--rounds", "1"], env, "bare")
        args = ["--n", "4", "--poll-n", "2", "--idle", "0.5", "--events", "2", "--clients", "1"]
        _run(["bench/streams.py", *args, "--port", str(free_port())], env, "p95")
    finally:
        pg.close()
        redis.close()
