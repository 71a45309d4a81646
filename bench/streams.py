"""Open event streams on one web process (uvicorn) on PostgreSQL + Redis.

For each N (default 100, 500, 1000) pushed streams, and a small N of the old polling design
(COVEL_EVENT_STREAM=poll) as the baseline:
1. all N connect (each gets the session's first event by replay);
2. the server's memory (RSS), threads, CPU and the database's transactions per second while
   the N streams sit idle for --idle seconds (target: 0 beyond the bench's own sampling);
3. latency from an event's commit (taken just before the write, which a worker would make;
   the wake-up goes through Redis) to each stream receiving it, p50 and p95 over every
   (stream, event) pair, and p95 of the slowest stream per event (target: p95 < 100 ms at
   1,000 streams).

The client is cheap and measured: --clients processes (default 2), each one event loop of
plain asyncio protocols (uvloop when installed) that only look for `id:` lines; a stream's
arrival is stamped when its bytes are handed to the protocol. The machine has 2 cores, so the
clients still share the CPU with the server; the "floor" line measures what they cost: the
same clients against a bare asyncio server that writes one ready-made frame to every
connection (no Django, no database), latency from the trigger to each arrival. Each result also
gives the clients' CPU per event.

--storm N adds the reconnect storm (docs/deploy.md): N EventSources (obeying 503 +
Retry-After, reconnecting with Last-Event-ID) open at the same moment on one session, then a
turn reaches them, then the server is restarted with all N open while an event is written:
every client must be back with that event exactly once. Then the same N spread over
--storm-sessions sessions with a turn in --storm-turns of them, and a bare asyncio SSE server
as the floor. Each prints connect rate, time to all connected, refusals by status, server CPU
per connect and memory per open stream. --storm-only skips the idle and latency runs.

Run from the checkout (the database is migrated and gets bench rows):
    DATABASE_URL=postgres://postgres@127.0.0.1:5432/serve REDIS_URL=redis://127.0.0.1:6379/7 \\
        .venv/bin/python bench/streams.py [--n 100,500,1000] [--poll-n 30] [--port 8750] \\
        [--storm 3000 [--storm-only]]
The polling baseline holds one database connection per stream: keep --poll-n well below the
server's max_connections (the database is shared). --py-spy PATH records the server's
samples during the latency phase (one file per N, in the bench's temporary folder).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import multiprocessing
import os
import re
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from multiprocessing.connection import Connection
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "tests" / "sessions"))  # stream_servers: the one server helper

ID = re.compile(rb"^id: (\d+)$", re.M)
EVENT_GAP_SECONDS = 0.3
EVENT_DEADLINE_SECONDS = 5.0


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


# ------------------------------------------------------------------ the client processes


class _Stream(asyncio.Protocol):
    """One SSE connection: stamps each `id:` it sees; tells its book."""

    def __init__(self, book: _Book, request: bytes) -> None:
        self.book = book
        self.request = request
        self.tail = b""
        self.status_seen = False
        self.seqs: set[int] = set()

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        transport.write(self.request)  # type: ignore[attr-defined]

    def data_received(self, data: bytes) -> None:
        now = time.time()
        if not self.status_seen:
            if b" 200 " not in data.split(b"\r\n", 1)[0]:
                self.book.failed(data[:200])
                return
            self.status_seen = True
        data = self.tail + data
        cut = data.rfind(b"\n")
        self.tail, data = data[cut + 1 :], data[: cut + 1]
        for match in ID.finditer(data):
            seq = int(match.group(1))
            if seq not in self.seqs:  # a replayed seq is not a new arrival
                self.seqs.add(seq)
                self.book.arrived(self, seq, now)


class _Book:
    """A client process's arrivals; tells the bench when every stream has a seq."""

    def __init__(self, pipe: Connection) -> None:
        self.pipe = pipe
        self.connected: set[_Stream] = set()
        self.arrivals: dict[int, list[float]] = {}
        self.errors: list[str] = []

    def arrived(self, stream: _Stream, seq: int, now: float) -> None:
        self.connected.add(stream)
        times = self.arrivals.setdefault(seq, [])
        times.append(now)
        if len(times) == len(self.connected) and seq > 1:
            self.pipe.send(("all", seq))

    def failed(self, head: bytes) -> None:
        self.errors.append(head.decode(errors="replace"))


async def _client_main(pipe: Connection, port: int, path: str, cookie: str, n: int) -> None:
    loop = asyncio.get_running_loop()
    book = _Book(pipe)
    request = (
        f"GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nCookie: sessionid={cookie}\r\n"
        "Accept: text/event-stream\r\n\r\n"
    ).encode()
    transports = []
    for i in range(n):
        transport, _ = await loop.create_connection(
            lambda: _Stream(book, request), "127.0.0.1", port
        )
        transports.append(transport)
        if i % 50 == 49:
            await asyncio.sleep(0.05)  # a ramp, as tabs open, not one SYN burst
    deadline = time.monotonic() + 60
    while len(book.connected) < n and time.monotonic() < deadline and not book.errors:
        await asyncio.sleep(0.05)
    pipe.send(("connected", len(book.connected), book.errors[:3]))
    commands = asyncio.Queue()
    loop.add_reader(pipe.fileno(), lambda: commands.put_nowait(pipe.recv()))
    cpu0 = time.process_time()
    while (command := await commands.get()) != "report":
        if command == "cpu":
            cpu0 = time.process_time()
    pipe.send(("report", book.arrivals, time.process_time() - cpu0))
    for transport in transports:
        transport.abort()


def _client_process(pipe: Connection, port: int, path: str, cookie: str, n: int) -> None:
    try:
        import uvloop

        uvloop.run(_client_main(pipe, port, path, cookie, n))
    except ImportError:
        asyncio.run(_client_main(pipe, port, path, cookie, n))


class Clients:
    """--clients processes holding n streams between them."""

    def __init__(self, count: int, port: int, path: str, cookie: str, n: int) -> None:
        context = multiprocessing.get_context("spawn")
        self.pipes: list[Connection] = []
        self.procs = []
        for i in range(count):
            share = n // count + (1 if i < n % count else 0)
            mine, theirs = context.Pipe()
            proc = context.Process(
                target=_client_process, args=(theirs, port, path, cookie, share), daemon=True
            )
            proc.start()
            self.pipes.append(mine)
            self.procs.append(proc)

    def connected(self, timeout: float) -> int:
        total = 0
        for pipe in self.pipes:
            if not pipe.poll(timeout):
                raise RuntimeError("a client process did not connect its streams")
            kind, count, errors = pipe.recv()
            if errors:
                raise RuntimeError(f"a stream was refused: {errors}")
            total += count
        return total

    def send(self, command: str) -> None:
        for pipe in self.pipes:
            pipe.send(command)

    def wait_all(self, seq: int, timeout: float) -> None:
        """Until every process says each of its streams has seq (or the timeout)."""
        waiting = set(range(len(self.pipes)))
        deadline = time.monotonic() + timeout
        while waiting and time.monotonic() < deadline:
            for i in list(waiting):
                while self.pipes[i].poll():
                    kind, got = self.pipes[i].recv()
                    if kind == "all" and got >= seq:
                        waiting.discard(i)
            time.sleep(0.002)

    def report(self) -> tuple[dict[int, list[float]], float]:
        self.send("report")
        arrivals: dict[int, list[float]] = {}
        cpu = 0.0
        for pipe in self.pipes:
            while True:
                message = pipe.recv()
                if message[0] == "report":
                    break
            for seq, times in message[1].items():
                arrivals.setdefault(seq, []).extend(times)
            cpu += message[2]
        return arrivals, cpu

    def close(self) -> None:
        for proc in self.procs:
            proc.join(5)
            if proc.is_alive():
                proc.kill()


def latency_figures(
    committed: dict[int, float], arrivals: dict[int, list[float]], streams: int
) -> dict:
    latencies: list[float] = []
    slowest: list[float] = []
    missed = 0
    for seq, at in committed.items():
        got = [(t - at) * 1000 for t in arrivals.get(seq, [])]
        missed += streams - len(got)
        latencies += got
        if got:
            slowest.append(max(got))
    result: dict = {"missed": missed}
    if latencies:
        result["latency_p50_ms"] = round(statistics.median(latencies), 1)
        result["latency_p95_ms"] = round(percentile(latencies, 95), 1)
        result["last_stream_p95_ms"] = round(percentile(slowest, 95), 1)
    return result


# ------------------------------------------------------------------ the hub's server


def _free_port_near(port: int) -> int:
    """port when nothing listens there, else any free one (--port N may be a random free port
    whose neighbour is taken)."""
    import socket

    with socket.socket() as sock:
        try:
            sock.bind(("127.0.0.1", port))
        except OSError:
            sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def start_hub(port: int, env: dict[str, str], log: Path):
    from stream_servers import Server

    return Server(port, env, log, args=("--no-access-log", "--backlog", "4096"))


def start_py_spy(py_spy: str, pid: int, out: Path, seconds: float) -> subprocess.Popen:
    return subprocess.Popen(
        [py_spy, "record", "-p", str(pid), "--duration", str(int(seconds) + 1)]
        + ["--format", "raw", "--nonblocking", "-r", "250", "-o", str(out)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )


def measure(*, mode: str, n: int, args, session, cookie: str, temp: Path) -> dict:
    from eventlog.selectors import last_event_seq
    from sessions.services import event_append

    env = {"COVEL_EVENT_STREAM": mode, "DB_POOL": "true" if mode == "push" else "false"}
    # Every stream of the bench is one user's: lift the per-user cap (sessions/stream_limits.py).
    env["COVEL_STREAMS_PER_USER"] = "0"
    env.update({"DB_POOL_MAX_SIZE": "10", "DB_CONN_MAX_AGE": "0"})
    server = start_hub(args.port, env, temp / f"server-{mode}-{n}.log")
    path = f"/api/sessions/{session.pk}/events?wait={3600 if mode == 'push' else 55}"
    result: dict = {"mode": mode, "n": n}
    clients = None
    try:
        # A warm-up request loads Django's modules, so RSS growth below is the streams' own.
        import urllib.request

        urllib.request.urlopen(f"http://127.0.0.1:{args.port}/healthz", timeout=30).read()
        pid = server.proc.pid
        _cpu0, rss0, threads0 = proc_stat(pid)
        started = time.monotonic()
        clients = Clients(min(args.clients, n), args.port, path, cookie, n)
        result["connected"] = clients.connected(90)
        result["connect_s"] = round(time.monotonic() - started, 2)
        # PostgreSQL reports a backend's counts up to 10 s after its last transaction: wait so
        # the connects' own reads are not counted as idle work.
        time.sleep(11.0)
        cpu1, _rss1, _ = proc_stat(pid)
        tx1 = db_transactions()
        time.sleep(args.idle)
        cpu2, rss2, threads2 = proc_stat(pid)
        tx2 = db_transactions()
        result["rss_mb"] = round(rss2 / 1024, 1)
        result["rss_per_stream_kb"] = round((rss2 - rss0) / max(1, n), 1)
        result["threads"] = threads2
        result["threads_added"] = threads2 - threads0
        result["idle_cpu_pct"] = round((cpu2 - cpu1) / args.idle * 100, 1)
        # One transaction is this bench's own sampling query.
        result["idle_db_tx_per_s"] = round(max(0, tx2 - tx1 - 1) / args.idle, 1)

        spy = None
        if args.py_spy:
            seconds = args.events * (EVENT_GAP_SECONDS + 0.2)
            spy = start_py_spy(args.py_spy, pid, temp / f"py-spy-{mode}-{n}.txt", seconds)
            time.sleep(1.0)
        committed: dict[int, float] = {}
        clients.send("cpu")
        cpu_start = proc_stat(pid)[0]
        for k in range(args.events):
            at = time.time()
            event_append(session_id=session.pk, type="bench.tick", payload={"k": k})
            seq = last_event_seq(session=session)
            committed[seq] = at
            clients.wait_all(seq, EVENT_DEADLINE_SECONDS)
            time.sleep(EVENT_GAP_SECONDS)
        server_cpu = proc_stat(pid)[0] - cpu_start
        arrivals, client_cpu = clients.report()
        result.update(latency_figures(committed, arrivals, result["connected"]))
        result["server_cpu_ms_per_event"] = round(server_cpu / args.events * 1000, 1)
        result["client_cpu_ms_per_event"] = round(client_cpu / args.events * 1000, 1)
        if spy is not None:
            spy.wait()
            result["py_spy"] = str(temp / f"py-spy-{mode}-{n}.txt")
    finally:
        if clients is not None:
            clients.close()
        server.stop()
    return result


# ------------------------------------------------------------------ the floor


async def _bare_server(port: int, frame_ready: bytes) -> None:
    """Accept streams; on `POST /tick?seq=N` write one frame with id N to every other one."""
    streams: list[asyncio.WriteTransport] = []
    head = b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\n\r\n"

    class Peer(asyncio.Protocol):
        def connection_made(self, transport):
            self.transport = transport
            self.buffer = b""

        def data_received(self, data):
            self.buffer += data
            if b"\r\n\r\n" not in self.buffer:
                return
            line = self.buffer.split(b"\r\n", 1)[0]
            if line.startswith(b"POST /tick"):
                seq = line.split(b"seq=")[1].split(b" ")[0]
                frame = b"id: " + seq + frame_ready
                for stream in streams:
                    stream.write(frame)
                self.transport.write(b"HTTP/1.1 204 No Content\r\n\r\n")
                self.transport.close()
            else:
                self.transport.write(head + b"id: 1" + frame_ready)
                streams.append(self.transport)

    server = await asyncio.get_running_loop().create_server(Peer, "127.0.0.1", port, backlog=4096)
    async with server:
        await server.serve_forever()


def _bare_server_process(port: int, frame_ready: bytes) -> None:
    with contextlib.suppress(KeyboardInterrupt):
        try:
            import uvloop

            uvloop.run(_bare_server(port, frame_ready))
        except ImportError:
            asyncio.run(_bare_server(port, frame_ready))


def start_bare_server(args) -> tuple[multiprocessing.Process, int]:
    """The floor's server process, listening (it writes the hub's own frame, so sizes match)."""
    import socket

    from sessions.events import format_event

    frame = format_event(seq=0, type="bench.tick", payload={"k": 0}).encode()
    port = _free_port_near(args.port + 1)
    server = multiprocessing.get_context("spawn").Process(
        target=_bare_server_process, args=(port, frame[len(b"id: 0") :]), daemon=True
    )
    server.start()
    deadline = time.monotonic() + 30
    while True:
        try:
            socket.create_connection(("127.0.0.1", port), 0.2).close()
            return server, port
        except OSError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.1)


def measure_floor(*, n: int, args) -> dict:
    """The clients against a server that only writes: what the clients and kernel cost."""
    import http.client

    server, port = start_bare_server(args)
    clients = Clients(min(args.clients, n), port, "/events", "-", n)
    result: dict = {"mode": "floor", "n": n}
    try:
        result["connected"] = clients.connected(90)
        committed: dict[int, float] = {}
        clients.send("cpu")
        for k in range(args.events):
            seq = k + 2
            committed[seq] = time.time()
            conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
            conn.request("POST", f"/tick?seq={seq}")
            conn.getresponse().read()
            conn.close()
            clients.wait_all(seq, EVENT_DEADLINE_SECONDS)
            time.sleep(EVENT_GAP_SECONDS)
        arrivals, client_cpu = clients.report()
        result.update(latency_figures(committed, arrivals, result["connected"]))
        result["client_cpu_ms_per_event"] = round(client_cpu / args.events * 1000, 1)
    finally:
        clients.close()
        server.kill()
        server.join()
    return result


# ------------------------------------------------------------------ storms (reconnects at once)

ID_LINE = re.compile(rb"^id: (\d+)")
RETRY_AFTER = re.compile(rb"(?im)^retry-after: *(\d+)")


class _EventSource:
    """One browser tab's EventSource: connects, obeys 503 + Retry-After, reconnects with
    Last-Event-ID when the connection ends, and counts every seq it sees (and repeats)."""

    def __init__(self, book: _StormBook, session: int, path: str) -> None:
        self.book = book
        self.session = session
        self.path = path
        self.last_id: int | None = None
        self.seqs: set[int] = set()

    async def run(self, port: int, cookie: str) -> None:
        while True:
            head = f"GET {self.path} HTTP/1.1\r\nHost: 127.0.0.1\r\nCookie: sessionid={cookie}\r\n"
            head += "Accept: text/event-stream\r\n"
            if self.last_id is not None:
                head += f"Last-Event-ID: {self.last_id}\r\n"
            writer = None
            try:
                reader, writer = await asyncio.open_connection("127.0.0.1", port, limit=1 << 20)
                writer.write((head + "\r\n").encode())
                headers = await reader.readuntil(b"\r\n\r\n")
                status = headers.split(b" ", 2)[1].decode()
                if status != "200":
                    self.book.refused[status] = self.book.refused.get(status, 0) + 1
                    wait = RETRY_AFTER.search(headers)
                    await asyncio.sleep(int(wait.group(1)) if wait else 1)
                    continue
                while line := await reader.readline():
                    match = ID_LINE.match(line)
                    if match:
                        self.seen(int(match.group(1)))
            except (OSError, asyncio.IncompleteReadError, asyncio.LimitOverrunError):
                self.book.errors += 1
            finally:
                if writer is not None:
                    writer.close()
            self.book.reconnects += 1
            await asyncio.sleep(1.0)  # the hub's `retry: 1000`

    def seen(self, seq: int) -> None:
        now = time.time()
        if self.last_id is None:
            self.book.connected_at.append(now)
        self.last_id = seq
        if seq in self.seqs:
            self.book.repeats += 1
            return
        self.seqs.add(seq)
        self.book.arrivals.setdefault((self.session, seq), []).append(now)


class _StormBook:
    def __init__(self) -> None:
        self.connected_at: list[float] = []
        self.arrivals: dict[tuple[int, int], list[float]] = {}
        self.refused: dict[str, int] = {}
        self.errors = self.reconnects = self.repeats = 0


async def _storm_client_main(
    pipe: Connection, port: int, paths: list[tuple[int, str]], cookie: str
):
    book = _StormBook()
    sources = [_EventSource(book, session, path) for session, path in paths]
    tasks = [asyncio.create_task(source.run(port, cookie)) for source in sources]  # all at once
    loop = asyncio.get_running_loop()
    commands: asyncio.Queue = asyncio.Queue()
    loop.add_reader(pipe.fileno(), lambda: commands.put_nowait(pipe.recv()))
    while (command := await commands.get()) != "stop":
        if command == "count":
            pipe.send(len(book.connected_at))
        elif isinstance(command, tuple) and command[0] == "have":
            # How many of this process's streams of each listed session have every seq listed.
            wanted: dict[int, set[int]] = command[1]
            pipe.send(
                sum(1 for s in sources if s.session in wanted and wanted[s.session] <= s.seqs)
            )
        elif command == "report":
            pipe.send(
                {
                    "connected_at": book.connected_at,
                    "arrivals": book.arrivals,
                    "refused": book.refused,
                    "errors": book.errors,
                    "reconnects": book.reconnects,
                    "repeats": book.repeats,
                }
            )
    for task in tasks:
        task.cancel()


def _storm_client_process(pipe, port, paths, cookie) -> None:
    try:
        import uvloop

        uvloop.run(_storm_client_main(pipe, port, paths, cookie))
    except ImportError:
        asyncio.run(_storm_client_main(pipe, port, paths, cookie))


class StormClients:
    """--clients processes whose EventSources all open at the same moment."""

    def __init__(self, count: int, port: int, paths: list[tuple[int, str]], cookie: str) -> None:
        context = multiprocessing.get_context("spawn")
        self.pipes, self.procs = [], []
        self.started = time.time()
        for i in range(count):
            mine, theirs = context.Pipe()
            proc = context.Process(
                target=_storm_client_process,
                args=(theirs, port, paths[i::count], cookie),
                daemon=True,
            )
            proc.start()
            self.pipes.append(mine)
            self.procs.append(proc)

    def ask(self, command) -> list:
        for pipe in self.pipes:
            pipe.send(command)
        return [pipe.recv() for pipe in self.pipes]

    def wait(self, command, target: int, timeout: float) -> bool:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if sum(self.ask(command)) >= target:
                return True
            time.sleep(0.2)
        return False

    def report(self) -> dict:
        merged = {"connected_at": [], "arrivals": {}, "refused": {}}
        for part in self.ask("report"):
            merged["connected_at"] += part["connected_at"]
            for key, times in part["arrivals"].items():
                merged["arrivals"].setdefault(key, []).extend(times)
            for status, count in part["refused"].items():
                merged["refused"][status] = merged["refused"].get(status, 0) + count
            for name in ("errors", "reconnects", "repeats"):
                merged[name] = merged.get(name, 0) + part[name]
        return merged

    def close(self) -> None:
        for pipe in self.pipes:
            with contextlib.suppress(OSError):
                pipe.send("stop")
        for proc in self.procs:
            proc.join(5)
            if proc.is_alive():
                proc.kill()


def storm(*, n: int, sessions: list, turns_in: int, args, cookie: str, temp: Path, restart: bool):
    """n EventSources over the sessions (round-robin) open at once; then a turn's event in
    `turns_in` of the sessions; then (restart) the server is restarted with every stream open
    and events are written while it is down: each stream must get each one exactly once."""
    from eventlog.selectors import last_event_seq
    from sessions.services import event_append

    env = {"COVEL_EVENT_STREAM": "push", "DB_POOL": "true", "DB_CONN_MAX_AGE": "0"}
    env.update({"DB_POOL_MAX_SIZE": str(args.pool), "COVEL_STREAMS_PER_USER": "0"})
    log = temp / f"server-storm-{n}-{len(sessions)}.log"
    server = start_hub(args.port, env, log)
    result: dict = {"mode": "storm", "n": n, "sessions": len(sessions)}
    paths = [
        (i % len(sessions), f"/api/sessions/{sessions[i % len(sessions)].pk}/events?wait=3600")
        for i in range(n)
    ]
    clients = None
    try:
        import urllib.request

        urllib.request.urlopen(f"http://127.0.0.1:{args.port}/healthz", timeout=30).read()
        pid = server.proc.pid
        cpu0, rss0, _ = proc_stat(pid)
        if args.py_spy:  # the storm's first 20 s, sampled
            out = temp / f"py-spy-storm-{n}-{len(sessions)}.txt"
            start_py_spy(args.py_spy, pid, out, 20)
            result["py_spy"] = str(out)
        clients = StormClients(args.clients, args.port, paths, cookie)
        all_in = clients.wait("count", n, args.storm_timeout)
        report = clients.report()
        cpu1, rss1, threads = proc_stat(pid)
        times = sorted(report["connected_at"])
        result["connected"] = len(times)
        result["all_connected"] = all_in
        if times:
            span = times[-1] - clients.started
            result["time_to_all_connected_s"] = round(span, 2)
            result["connect_rate_per_s"] = round(len(times) / max(span, 1e-3), 1)
        result["refused"] = report["refused"]
        result["errors"] = report["errors"]
        result["server_cpu_ms_per_connect"] = round((cpu1 - cpu0) / max(1, len(times)) * 1000, 2)
        result["rss_per_stream_kb"] = round((rss1 - rss0) / max(1, len(times)), 1)
        result["threads"] = threads

        # A turn's event in turns_in sessions: latency from the write to each of their streams.
        committed: dict[tuple[int, int], float] = {}
        for s in range(turns_in):
            at = time.time()
            event_append(session_id=sessions[s].pk, type="bench.tick", payload={"k": s})
            committed[(s, last_event_seq(session=sessions[s]))] = at
        watching = sum(1 for s, _ in paths if s < turns_in)
        wanted = {s: {seq} for (s, seq) in committed}
        clients.wait(("have", wanted), watching, EVENT_DEADLINE_SECONDS * 2)
        arrivals = clients.report()["arrivals"]
        latencies = [
            (t - at) * 1000 for key, at in committed.items() for t in arrivals.get(key, [])
        ]
        result["turn_streams"] = watching
        result["turn_received"] = len(latencies)
        if latencies:
            result["turn_p50_ms"] = round(statistics.median(latencies), 1)
            result["turn_p95_ms"] = round(percentile(latencies, 95), 1)

        if restart:
            server.stop()
            missed: dict[int, set[int]] = {}
            for s in range(len(sessions)):  # written while the server is down
                event_append(session_id=sessions[s].pk, type="bench.down", payload={})
                missed.setdefault(s, set()).add(last_event_seq(session=sessions[s]))
            started = time.monotonic()
            server = start_hub(args.port, env, temp / f"server-storm-restart-{n}.log")
            back = clients.wait(("have", missed), n, args.storm_timeout)
            result["restart_all_back"] = back
            result["restart_all_back_s"] = round(time.monotonic() - started, 2)
            final = clients.report()
            result["restart_repeats"] = final["repeats"]
            result["restart_refused"] = {
                status: count - report["refused"].get(status, 0)
                for status, count in final["refused"].items()
                if count > report["refused"].get(status, 0)
            }
    finally:
        if clients is not None:
            clients.close()
        server.stop()
    return result


def storm_floor(*, n: int, args) -> dict:
    """The same storm against a bare asyncio SSE server (no Django, no database)."""
    server, port = start_bare_server(args)
    cpu0 = proc_stat(server.pid)[0]
    clients = StormClients(args.clients, port, [(0, "/events")] * n, "-")
    result: dict = {"mode": "storm-floor", "n": n}
    try:
        result["all_connected"] = clients.wait("count", n, args.storm_timeout)
        times = sorted(clients.report()["connected_at"])
        result["connected"] = len(times)
        if times:
            span = times[-1] - clients.started
            result["time_to_all_connected_s"] = round(span, 2)
            result["connect_rate_per_s"] = round(len(times) / max(span, 1e-3), 1)
        result["server_cpu_ms_per_connect"] = round(
            (proc_stat(server.pid)[0] - cpu0) / max(1, len(times)) * 1000, 2
        )
    finally:
        clients.close()
        server.kill()
        server.join()
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--n", default="100,500,1000")
    parser.add_argument("--poll-n", type=int, default=30)
    parser.add_argument("--idle", type=float, default=10.0)
    parser.add_argument("--events", type=int, default=20)
    parser.add_argument("--port", type=int, default=8750)
    parser.add_argument("--clients", type=int, default=2, help="client processes")
    parser.add_argument("--no-floor", action="store_true", help="skip the bare-server floor")
    parser.add_argument("--py-spy", default="", help="a py-spy binary: sample the server")
    parser.add_argument("--storm", type=int, default=0, help="streams opened at once (0: none)")
    parser.add_argument("--storm-sessions", type=int, default=300, help="the spread run's sessions")
    parser.add_argument("--storm-turns", type=int, default=30, help="sessions given a turn")
    parser.add_argument("--storm-timeout", type=float, default=90.0)
    parser.add_argument("--pool", type=int, default=20, help="the storm server's DB pool size")
    parser.add_argument("--storm-only", action="store_true", help="skip the idle/latency runs")
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
    web = DjangoClient()
    web.force_login(user)
    cookie = web.cookies["sessionid"].value

    sizes = [] if args.storm_only else [int(x) for x in args.n.split(",") if x]
    runs = [("poll", args.poll_n)] if args.poll_n and not args.storm_only else []
    runs += [("push", n) for n in sizes]
    print(
        f"bench/streams.py: {os.cpu_count()} cores, idle {args.idle} s, {args.events} events, "
        f"{args.clients} client processes"
    )
    for mode, n in runs:
        # A session per run: every stream's replay is the one session.created event.
        session = session_create(owner=user, world=world)
        result = measure(mode=mode, n=n, args=args, session=session, cookie=cookie, temp=temp)
        print(json.dumps(result), flush=True)
    if not args.no_floor:
        for n in sizes:
            print(json.dumps(measure_floor(n=n, args=args)), flush=True)
    if args.storm:
        one = [session_create(owner=user, world=world)]
        spread = [session_create(owner=user, world=world) for _ in range(args.storm_sessions)]
        for sessions, turns_in, restart in ((one, 1, True), (spread, args.storm_turns, False)):
            result = storm(
                n=args.storm,
                sessions=sessions,
                turns_in=min(turns_in, len(sessions)),
                args=args,
                cookie=cookie,
                temp=temp,
                restart=restart,
            )
            print(json.dumps(result), flush=True)
        if not args.no_floor:
            print(json.dumps(storm_floor(n=args.storm, args=args)), flush=True)


if __name__ == "__main__":
    main()
