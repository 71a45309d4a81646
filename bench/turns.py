"""Turns per second with the bundled function storyteller, in process (the turn loop, the Node
plugin host and the commit; no HTTP): one session played turn after turn, and 8 sessions played
at once from 8 threads (the web process's concurrency), p50/p95 latency of a turn.

Run from the checkout:
    .venv/bin/python bench/turns.py [--turns 60] [--parallel 8]
It measures the embedded default (a throw-away SQLite file) and, when DATABASE_URL names a
PostgreSQL database, that database too (it is migrated and gets bench rows). Each backend runs
in a process of its own, so settings are read fresh.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    index = min(len(ordered) - 1, max(0, round(q / 100 * (len(ordered) - 1))))
    return ordered[index]


def run_backend(turns: int, parallel: int) -> dict:
    import django

    django.setup()
    from django.contrib.auth import get_user_model
    from django.core.management import call_command
    from django.db import connection

    from catalogue.manifest.loader import load_package
    from catalogue.services import package_content_hash, package_index
    from sessions.services import session_create
    from sessions.turns import TurnRequest, turn_run
    from worlds.models import World

    call_command("migrate", verbosity=0)
    folder = REPO / "plugins" / "storyteller"
    loaded = load_package(folder, host_version="0.1.0")
    package_index(
        result=loaded,
        source="bundled",
        content_hash=package_content_hash(path=folder),
        host_version="0.1.0",
    )
    user, _ = get_user_model().objects.get_or_create(username="bench-turns")
    world, _ = World.objects.get_or_create(
        world_id="bench-turns",
        defaults={"name": "Bench", "description": "", "owner": user, "plugins": []},
    )
    sessions = [session_create(owner=user, world=world) for _ in range(parallel)]

    def play(session, count: int, out: list[float]) -> None:
        for i in range(count):
            started = time.perf_counter()
            turn_run(session=session, request=TurnRequest(message=f"I walk on ({i})."))
            out.append((time.perf_counter() - started) * 1000)
        connection.close()

    play(sessions[0], 3, [])  # warm: the Node host starts, the package loads
    one: list[float] = []
    started = time.perf_counter()
    play(sessions[0], turns, one)
    one_elapsed = time.perf_counter() - started

    many: list[float] = []
    per = max(1, turns // parallel)
    threads = [threading.Thread(target=play, args=(s, per, many)) for s in sessions[:parallel]]
    started = time.perf_counter()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    many_elapsed = time.perf_counter() - started

    return {
        "database": connection.vendor,
        "one_session": {
            "turns": len(one),
            "turns_per_s": round(len(one) / one_elapsed, 1),
            "p50_ms": round(statistics.median(one), 1),
            "p95_ms": round(percentile(one, 95), 1),
        },
        f"{parallel}_sessions": {
            "turns": len(many),
            "turns_per_s": round(len(many) / many_elapsed, 1),
            "p50_ms": round(statistics.median(many), 1),
            "p95_ms": round(percentile(many, 95), 1),
        },
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--turns", type=int, default=60)
    parser.add_argument("--parallel", type=int, default=8)
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(run_backend(args.turns, args.parallel)))
        return

    base = {**os.environ, "DJANGO_SETTINGS_MODULE": "config.settings", "DB_CONN_MAX_AGE": "0"}
    base.setdefault("SECRET_KEY", "bench-turns-" + "k" * 50)
    targets = []
    temp = Path(tempfile.mkdtemp(prefix="covel-bench-turns-"))
    targets.append({"DATABASE_URL": f"sqlite:///{temp / 'bench.sqlite3'}", "REDIS_URL": ""})
    if os.environ.get("DATABASE_URL", "").startswith("postgres"):
        targets.append({"DATABASE_URL": os.environ["DATABASE_URL"]})
    print(f"bench/turns.py: {os.cpu_count()} cores, {args.turns} turns, {args.parallel} parallel")
    for target in targets:
        env = {**base, "COVEL_VAR_DIR": str(temp), **target}
        done = subprocess.run(
            [
                sys.executable,
                __file__,
                "--child",
                f"--turns={args.turns}",
                f"--parallel={args.parallel}",
            ],
            env=env,
            capture_output=True,
            text=True,
        )
        if done.returncode != 0:
            print(done.stderr[-3000:])
            continue
        print(done.stdout.strip().splitlines()[-1], flush=True)


if __name__ == "__main__":
    main()
