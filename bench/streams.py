"""Open event streams on one web process (uvicorn) on PostgreSQL + Redis.

For each N (default 100, 500, 1000) pushed streams, and a small N of the old polling design
(COVEL_EVENT_STREAM=poll) as the baseline:
1. all N connect (each gets the session's first event by replay);
2. the server's memory (RSS), threads, CPU and the database's transactions per second while
   the N streams sit idle for --idle seconds (target: 0 beyond the bench's own sampling);
3. latency from an event's commit (written by this process, as a worker would, and woken
   through Redis) to each stream receiving it, p50 and p95 over every (stream, event) pair, and
   p95 of the slowest stream per event (target p95 < 100 ms at 1,000 streams).

The client is one asyncio loop in this process; on a 2-core machine it shares the CPU with the
server, so latencies include the client's own parsing of N copies of each event.

Run from the checkout (the database is migrated and gets bench rows):
    DATABASE_URL=postgres://postgres@127.0.0.1:5432/serve REDIS_URL=redis://127.0.0.1:6379/7 \\
        .venv/bin/python bench/streams.py [--n 100,500,1000] [--poll-n 30] [--port 8750]
The polling baseline holds one database connection per stream: keep --poll-n well below the
server's max_connections (the database is shared).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import re
import resource
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    index = min(len(ordered) - 1, max(0, round(q / 100 * (len(ordered) - 1))))
    return ordered[index]


def proc_stat(pid: int) -> tuple[float, int, int]:
    """(cpu seconds, RSS KiB, threads) of a process."""
    stat = Path(f"/proc/{pid}/stat").read_text()
    fields = stat[stat.rindex(")") + 2 :].split()
    ticks = os.sysconf("SC_CLK_TCK")
    cpu = (int(fields[11]) + int(fields[12])) / ticks
    status = Path(f"/proc/{pid}/status").read_text().splitlines()
    rss = int(next(x for x in status if x.startswith("VmRSS:")).split()[1])
    threads = int(next(x for x in status if x.startswith("Threads:")).split()[1])
    return cpu, rss, threads


def db_transactions() -> int:
    from django.db import connection

    with connection.cursor() as cursor:
        # This backend's own counts reach the view at its next report, not at once.
        cursor.execute("SELECT pg_stat_force_next_flush()")
        cursor.execute(
            "SELECT xact_commit + xact_rollback FROM pg_stat_database WHERE datname = %s",
            [connection.settings_dict["NAME"]],
        )
        return int(cursor.fetchone()[0])


ID = re.compile(rb"^id: (\d+)$", re.M)


class Client:
    """One SSE connection: records when each event id arrived."""

    def __init__(self) -> None:
        self.arrivals: dict[int, float] = {}
        self.connected = asyncio.Event()
        self.task: asyncio.Task | None = None
        self.writer: asyncio.StreamWriter | None = None

    async def run(self, port: int, path: str, cookie: str) -> None:
        reader, writer = await asyncio.open_connection("127.0.0.1", port, limit=1 << 20)
        self.writer = writer
        writer.write(
            (
                f"GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nCookie: sessionid={cookie}\r\n"
                "Accept: text/event-stream\r\n\r\n"
            ).encode()
        )
        await writer.drain()
        status = await reader.readline()
        if b" 200 " not in status:
            raise RuntimeError(status.decode(errors="replace"))
        # Whole chunks, not lines: a Python line parser for 1,000 streams would be the bottleneck.
        tail = b""
        while True:
            data = await reader.read(65536)
            if not data:
                return
            now = time.time()
            data = tail + data
            cut = data.rfind(b"\n")
            tail, data = data[cut + 1 :], data[: cut + 1]
            for match in ID.finditer(data):
                self.arrivals[int(match.group(1))] = now
                self.connected.set()

    def close(self) -> None:
        if self.writer is not None:
            self.writer.close()
        if self.task is not None:
            self.task.cancel()


def start_server(port: int, env: dict[str, str], log: Path) -> subprocess.Popen:
    import socket

    proc = subprocess.Popen(
        [
            str(REPO / ".venv" / "bin" / "uvicorn"),
            "config.asgi:application",
            "--host",
            "127.0.0.1",
            "--port",
            str(port),
            "--lifespan",
            "off",
            "--no-access-log",
            "--timeout-graceful-shutdown",
            "1",
            "--backlog",
            "4096",
        ],
        cwd=REPO,
        env={**os.environ, **env},
        stdout=log.open("wb"),
        stderr=subprocess.STDOUT,
    )
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        try:
            socket.create_connection(("127.0.0.1", port), 0.2).close()
            return proc
        except OSError:
            time.sleep(0.1)
    proc.kill()
    raise RuntimeError(log.read_text()[-2000:])


def stop_server(proc: subprocess.Popen) -> None:
    proc.send_signal(signal.SIGTERM)
    try:
        proc.wait(15)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


async def measure(
    *, mode: str, n: int, port: int, session, cookie: str, idle: float, events: int, log: Path
) -> dict:
    from asgiref.sync import sync_to_async

    from sessions.services import event_append

    env = {"COVEL_EVENT_STREAM": mode, "DB_POOL": "true" if mode == "push" else "false"}
    env.update({"DB_POOL_MAX_SIZE": "10", "DB_CONN_MAX_AGE": "0"})
    server = start_server(port, env, log)
    clients = [Client() for _ in range(n)]
    path = f"/api/sessions/{session.pk}/events?wait={3600 if mode == 'push' else 55}"
    result: dict = {"mode": mode, "n": n}
    try:
        # A warm-up request loads Django's modules, so RSS growth below is the streams' own.
        import urllib.request

        urllib.request.urlopen(f"http://127.0.0.1:{port}/healthz", timeout=30).read()
        _cpu0, rss0, threads0 = proc_stat(server.pid)
        started = time.monotonic()
        for i, client in enumerate(clients):
            client.task = asyncio.create_task(client.run(port, path, cookie))
            if i % 50 == 49:
                await asyncio.sleep(0.05)  # a ramp, as tabs open, not one SYN burst
        waits = [asyncio.wait_for(c.connected.wait(), 60) for c in clients]
        done = await asyncio.gather(*waits, return_exceptions=True)
        result["connected"] = sum(1 for d in done if d is True)
        result["connect_s"] = round(time.monotonic() - started, 2)
        # PostgreSQL reports a backend's counts up to 10 s after its last transaction: wait so
        # the connects' own reads are not counted as idle work.
        await asyncio.sleep(11.0)
        cpu1, _rss1, _ = proc_stat(server.pid)
        tx1 = await sync_to_async(db_transactions)()
        await asyncio.sleep(idle)
        cpu2, rss2, threads2 = proc_stat(server.pid)
        tx2 = await sync_to_async(db_transactions)()
        result["rss_mb"] = round(rss2 / 1024, 1)
        result["rss_per_stream_kb"] = round((rss2 - rss0) / max(1, n), 1)
        result["threads"] = threads2
        result["threads_added"] = threads2 - threads0
        result["idle_cpu_pct"] = round((cpu2 - cpu1) / idle * 100, 1)
        # One transaction is this bench's own sampling query.
        result["idle_db_tx_per_s"] = round(max(0, tx2 - tx1 - 1) / idle, 1)

        latencies: list[float] = []
        slowest: list[float] = []
        missing = 0
        for k in range(events):
            before = {id(c): len(c.arrivals) for c in clients}
            committed = time.time()
            await sync_to_async(event_append)(
                session_id=session.pk, type="bench.tick", payload={"k": k}
            )
            deadline = time.monotonic() + 5
            live = [c for c in clients if c.connected.is_set()]
            while time.monotonic() < deadline and any(
                len(c.arrivals) == before[id(c)] for c in live
            ):
                await asyncio.sleep(0.002)
            got = []
            for c in live:
                if len(c.arrivals) > before[id(c)]:
                    got.append((max(c.arrivals.values()) - committed) * 1000)
                else:
                    missing += 1
            latencies += got
            if got:
                slowest.append(max(got))
            await asyncio.sleep(0.3)
        if latencies:
            result["latency_p50_ms"] = round(statistics.median(latencies), 1)
            result["latency_p95_ms"] = round(percentile(latencies, 95), 1)
            result["last_stream_p95_ms"] = round(percentile(slowest, 95), 1)
        result["missed"] = missing
    finally:
        for c in clients:
            c.close()
        await asyncio.sleep(0.2)
        stop_server(server)
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--n", default="100,500,1000")
    parser.add_argument("--poll-n", type=int, default=30)
    parser.add_argument("--idle", type=float, default=10.0)
    parser.add_argument("--events", type=int, default=20)
    parser.add_argument("--port", type=int, default=8750)
    args = parser.parse_args()

    if not os.environ.get("DATABASE_URL", "").startswith("postgres"):
        sys.exit("bench/streams.py measures PostgreSQL: set DATABASE_URL (see the docstring)")
    os.environ.setdefault("REDIS_URL", "redis://127.0.0.1:6379/7")
    temp = Path(tempfile.mkdtemp(prefix="covel-bench-streams-"))
    os.environ["COVEL_VAR_DIR"] = str(temp)
    os.environ["DB_CONN_MAX_AGE"] = "0"
    os.environ["DJANGO_SETTINGS_MODULE"] = "config.settings"
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (min(hard, 65536), hard))
    if not os.environ.get("SECRET_KEY"):
        os.environ["SECRET_KEY"] = "bench-streams-" + "k" * 50

    import django

    django.setup()
    from django.contrib.auth import get_user_model
    from django.core.management import call_command
    from django.test import Client as DjangoClient

    from sessions.services import session_create
    from worlds.models import World

    call_command("migrate", verbosity=0)
    user, _ = get_user_model().objects.get_or_create(username="bench-streams")
    world, _ = World.objects.get_or_create(
        world_id="bench-streams", defaults={"name": "Bench", "description": "", "owner": user}
    )
    session = session_create(owner=user, world=world)
    web = DjangoClient()
    web.force_login(user)
    cookie = web.cookies["sessionid"].value

    runs = [("poll", args.poll_n)] + [("push", int(x)) for x in args.n.split(",") if x]
    print(f"bench/streams.py: {os.cpu_count()} cores, idle {args.idle} s, {args.events} events")
    for mode, n in runs:
        result = asyncio.run(
            measure(
                mode=mode,
                n=n,
                port=args.port,
                session=session,
                cookie=cookie,
                idle=args.idle,
                events=args.events,
                log=temp / f"server-{mode}-{n}.log",
            )
        )
        print(json.dumps(result), flush=True)


if __name__ == "__main__":
    main()
