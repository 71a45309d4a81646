"""Turns per second over real HTTP, as a deployment serves them: a uvicorn web process
(DB_POOL=true, as scripts/run.sh starts it), the bundled storyteller, word-count and dice in
each session, 1, 8 and 32 sessions played at once (one client thread per session, each posting
its next action as soon as the last one answered), p50/p95 latency; next to the floor, a
signed-in read (GET /api/sessions/{id}) at the same concurrency on the same server.

Run from the checkout:
    .venv/bin/python bench/turns.py [--sessions 1,8,32] [--turns 96] [--web 1] [--model-ms 0]
--turns is the number of turns played at each level (shared among its sessions; at least one
each). --model-ms N plays the levels a second time with the bundled story agent as the
narrator, its model a local OpenAI-compatible stand-in that starts answering after N ms: turns
that wait on a model, as real ones do, next to turns that are all the hub's own CPU. It
measures the embedded default (a throw-away SQLite file) or, when DATABASE_URL names a
PostgreSQL database, that database (migrated; it gets bench rows) with REDIS_URL's Redis for
the cache and notifications. --web N starts N web processes and spreads the sessions over them.
The machine is usually shared: compare figures taken in the same run, never across runs.
"""

from __future__ import annotations

import argparse
import contextlib
import http.client
import json
import os
import secrets
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from urllib.parse import urlsplit

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "tests" / "sessions"))

SETUP = """
import json, os
import django
django.setup()
from pathlib import Path
from django.contrib.auth import get_user_model
from django.core.management import call_command
from accounts.services import token_create
from catalogue.manifest.loader import load_package
from catalogue.services import package_content_hash, package_index
from sessions.services import session_create
from worlds.models import World

call_command("migrate", verbosity=0)
model_url = os.environ.get("BENCH_MODEL_URL", "")
for name in ("storyteller", "word-count", "dice") + (("story-agent",) if model_url else ()):
    folder = Path("plugins") / name
    package_index(result=load_package(folder, host_version="0.1.0"), source="bundled",
                  content_hash=package_content_hash(path=folder), host_version="0.1.0")
user, _ = get_user_model().objects.get_or_create(username="bench-turns")
world, _ = World.objects.get_or_create(
    world_id="bench-turns",
    defaults={"name": "Bench", "description": "", "owner": user,
              "plugins": ["word-count", "dice"]},
)
count = int(os.environ["BENCH_SESSIONS"])
# The storyteller's sessions decline the story agent, which a story model slot would bring in.
sessions = [
    str(session_create(owner=user, world=world, excluded=["story-agent"]).pk) for _ in range(count)
]
model_sessions = []
if model_url:
    from agents.models import ModelSlot

    ModelSlot.objects.update_or_create(
        name="story", defaults={"base_url": model_url, "model": "stand-in"}
    )
    model_sessions = [str(session_create(owner=user, world=world).pk) for _ in range(count)]
_, token = token_create(user=user, name="bench-turns")
print(json.dumps({"sessions": sessions, "model_sessions": model_sessions, "token": token}))
"""


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    index = min(len(ordered) - 1, max(0, round(q / 100 * (len(ordered) - 1))))
    return ordered[index]


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class Client:
    """One keep-alive HTTP connection, signed in with a bearer token."""

    def __init__(self, port: int, token: str) -> None:
        self.port, self.token = port, token
        self.conn = http.client.HTTPConnection("127.0.0.1", port, timeout=120)

    def call(self, method: str, path: str, body: object = None) -> tuple[int, bytes]:
        headers = {"Authorization": f"Bearer {self.token}", "Content-Type": "application/json"}
        data = json.dumps(body) if body is not None else None
        try:
            self.conn.request(method, path, data, headers)
            answer = self.conn.getresponse()
        except (http.client.HTTPException, OSError):
            self.conn.close()
            self.conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=120)
            self.conn.request(method, path, data, headers)
            answer = self.conn.getresponse()
        return answer.status, answer.read()


def cpu_ms(pids: list[int], database: str = "") -> dict[str, float]:
    """CPU time (user + system, ms) of each web process and, apart, of its children (the Node
    plugin hosts), of the PostgreSQL backends serving `database` (other databases' users of a
    shared server left out), and of this process (the clients), read from /proc."""
    tick = os.sysconf("SC_CLK_TCK")
    out = {"web": 0.0, "node": 0.0, "db": 0.0, "clients": time.process_time() * 1000}

    def stat(pid: int) -> float:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) * 1000 / tick

    if database:
        for entry in Path("/proc").iterdir():
            if not entry.name.isdigit():
                continue
            try:
                # A backend's title: "postgres: [cluster: ]user database client state".
                words = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode().split()
                if words[:1] == ["postgres:"] and database in words[1:4]:
                    out["db"] += stat(int(entry.name))
            except (OSError, UnicodeDecodeError):
                continue

    for pid in pids:
        try:
            out["web"] += stat(pid)
            for task in Path(f"/proc/{pid}/task").iterdir():
                for child in (task / "children").read_text().split():
                    out["node"] += stat(int(child))
        except OSError:
            continue
    return out


def run_level(
    ports: list[int], token: str, sessions: list[str], per: int, action: bool
) -> dict[str, float]:
    """Each session's thread plays `per` requests back to back; all threads start together."""
    latencies: list[float] = []
    failures: list[str] = []
    start = threading.Barrier(len(sessions) + 1)

    def play(index: int, session_id: str) -> None:
        client = Client(ports[index % len(ports)], token)
        start.wait()
        for i in range(per):
            began = time.perf_counter()
            if action:
                path, body = f"/api/sessions/{session_id}/actions", {"message": f"I walk ({i})."}
                status, text = client.call("POST", path, body)
            else:
                status, text = client.call("GET", f"/api/sessions/{session_id}")
            latencies.append((time.perf_counter() - began) * 1000)
            if status != 200:
                failures.append(f"{status} {text[:200]!r}")

    threads = [
        threading.Thread(target=play, args=(i, sid), daemon=True) for i, sid in enumerate(sessions)
    ]
    for thread in threads:
        thread.start()
    start.wait()
    began = time.perf_counter()
    for thread in threads:
        thread.join()
    elapsed = time.perf_counter() - began
    if failures:
        raise SystemExit(f"{len(failures)} requests failed, first: {failures[0]}")
    return {
        "per_s": len(latencies) / elapsed,
        "p50": statistics.median(latencies),
        "p95": percentile(latencies, 95),
        "n": len(latencies),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sessions", default="1,8,32", help="levels of sessions played at once")
    parser.add_argument("--turns", type=int, default=96, help="turns played at each level")
    parser.add_argument("--web", type=int, default=1, help="web processes")
    parser.add_argument(
        "--model-ms",
        type=int,
        default=0,
        help="also play the story agent, its model (a local stand-in) answering after this long",
    )
    args = parser.parse_args()
    levels = [int(x) for x in args.sessions.split(",")]

    from stream_servers import Server  # the web server the stream tests and bench/streams use

    from agents.standin import StandInModel

    temp = Path(tempfile.mkdtemp(prefix="covel-bench-turns-"))
    env = {
        "DJANGO_SETTINGS_MODULE": "config.settings",
        "COVEL_VAR_DIR": str(temp),
        "DB_POOL": "true",
        "LOG_LEVEL": "WARNING",
        # A bench is not a deployment: a throw-away key, and no per-player turn limit.
        "SECRET_KEY": os.environ.get("SECRET_KEY") or "bench-turns-" + secrets.token_hex(24),
        "COVEL_TURN_RATE": "1000000/s",
    }
    database = os.environ.get("DATABASE_URL", "")
    if not database.startswith("postgres"):
        env.update({"DATABASE_URL": f"sqlite:///{temp / 'bench.sqlite3'}", "REDIS_URL": ""})
    os.environ.update(env)
    with contextlib.ExitStack() as stack:
        # The model: one short paragraph, streamed word by word after the first-token wait, to
        # every request (in this process: its CPU counts with the clients').
        model, model_url = None, ""
        if args.model_ms:
            reply = {"content": STORY_REPLY, "firstTokenDelayMs": args.model_ms}
            model = stack.enter_context(StandInModel([reply], repeat=True))
            model_url = model.base_url
        setup = subprocess.run(
            [sys.executable, "-c", SETUP],
            cwd=REPO,
            env={
                **os.environ,
                "BENCH_SESSIONS": str(max(levels)),
                "BENCH_MODEL_URL": model_url,
            },
            capture_output=True,
            text=True,
        )
        if setup.returncode != 0:
            raise SystemExit(setup.stderr[-3000:])
        rows = json.loads(setup.stdout.strip().splitlines()[-1])
        servers = [
            Server(free_port(), env, temp / f"web{i}.log", args=("--no-access-log",))
            for i in range(args.web)
        ]
        for server in servers:
            stack.callback(server.stop)
        kind = "postgresql" if database.startswith("postgres") else "sqlite"
        dbname = urlsplit(database).path.lstrip("/") if kind == "postgresql" else ""
        print(
            f"bench/turns.py: {os.cpu_count()} cores, {kind}, redis: {os.environ.get('REDIS_URL') or '-'}"
            f", {args.web} web process(es), {args.turns} turns a level (shared machine: noisy)"
        )
        play = Play(servers, rows["token"], dbname, levels, args.turns)
        print("The storyteller (no model: every turn is the hub's own work):")
        play.table(rows["sessions"])
        if model is not None:
            print(f"The story agent, its model answering after {args.model_ms} ms:")
            played = play.table(rows["model_sessions"])
            # Each of those turns was narrated by the model, not by the storyteller.
            if len(model.requests) < played:
                raise SystemExit(f"{played} turns made only {len(model.requests)} model calls")


STORY_REPLY = "The lamps along the quay flicker as you walk, and somewhere a bell rings twice."


class Play:
    """Plays each level of sessions on the running servers and prints one table and verdict."""

    def __init__(self, servers: list, token: str, dbname: str, levels: list[int], turns: int):
        self.ports = [s.port for s in servers]
        self.pids = [s.proc.pid for s in servers]
        self.token, self.dbname, self.levels, self.turns = token, dbname, levels, turns

    def table(self, all_sessions: list[str]) -> int:
        """The table of one kind of session; returns how many turns it played in all."""
        # Warm: every session's first turn (the Node host starts, the packages load).
        warm = run_level(self.ports, self.token, all_sessions[: max(self.levels)], 1, action=True)
        played = warm["n"]
        print(
            "| sessions | turns/s | p50 / p95 ms | CPU ms a turn: web / node / db / clients "
            "| read req/s | read p50 ms | turn vs read |"
        )
        print("|---|---|---|---|---|---|---|")
        measured: dict[int, tuple[float, float, float]] = {}  # level -> turns/s, p95, CPU ms
        for level in self.levels:
            sessions = all_sessions[:level]
            per = max(1, self.turns // level)
            before = cpu_ms(self.pids, self.dbname)
            turns = run_level(self.ports, self.token, sessions, per, action=True)
            after = cpu_ms(self.pids, self.dbname)
            web, node, db, clients = (
                (after[k] - before[k]) / turns["n"] for k in ("web", "node", "db", "clients")
            )
            reads = run_level(self.ports, self.token, sessions, per * 2, action=False)
            print(
                f"| {level} | {turns['per_s']:.1f} | {turns['p50']:.0f} / {turns['p95']:.0f} "
                f"| {web:.0f} / {node:.0f} / {db:.0f} / {clients:.0f} | {reads['per_s']:.1f} | {reads['p50']:.1f} "
                f"| {reads['per_s'] / turns['per_s']:.1f}x |",
                flush=True,
            )
            measured[level] = (turns["per_s"], turns["p95"], web + node + db + clients)
            played += turns["n"]
        scale_verdict(measured)
        return played


def scale_verdict(measured: dict[int, tuple[float, float, float]]) -> None:
    """The issue's scale targets (the most sessions reach 3x the turns/s of one, p95 under
    1 s), next to what this machine's cores allow: when one session already keeps a core busy,
    no code change reaches 3x on two cores, and the bench says so rather than only 'missed'."""
    if 1 not in measured or len(measured) < 2:
        return
    top = max(measured)
    one_rate, _, one_cpu = measured[1]
    rate, p95, _ = measured[top]
    cores = os.cpu_count() or 1
    # Turns/s the cores could serve at one session's CPU a turn, over one session's rate.
    ceiling = cores * 1000 / one_cpu / one_rate if one_cpu > 0 else float("inf")
    # (About: the idle work of the processes, spread over fewer turns, weighs more at one session.)
    ratio = rate / one_rate
    print(
        f"{top} sessions / 1: {ratio:.1f}x ({'meets' if ratio >= 3 else 'MISSES'} the target of "
        f"at least 3x; these {cores} cores allow about {ceiling:.1f}x at one session's "
        f"{one_cpu:.0f} ms of CPU a turn); "
        f"p95 at {top}: {p95:.0f} ms ({'meets' if p95 < 1000 else 'MISSES'} the 1 s target)"
    )


if __name__ == "__main__":
    main()
