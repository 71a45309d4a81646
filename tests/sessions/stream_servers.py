"""Real web servers for the stream tests: uvicorn processes on the test database, and a small
SSE reader over a raw HTTP connection (so a test can cut it like a closed browser tab).

bench/streams.py starts its servers with the same `Server`."""

from __future__ import annotations

import http.client
import json
import os
import secrets
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]


def database_url() -> str:
    from django.db import connections

    s = connections["default"].settings_dict
    if connections["default"].vendor == "sqlite":
        return f"sqlite:///{s['NAME']}"
    auth = s["USER"] + (f":{s['PASSWORD']}" if s.get("PASSWORD") else "")
    return f"postgres://{auth}@{s['HOST'] or '127.0.0.1'}:{s['PORT'] or 5432}/{s['NAME']}"


def free_port() -> int:
    """A port free now: the tests' servers take one each, so two test runs at once (the two
    passes of scripts/test.sh) never meet on a port."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class Server:
    """One uvicorn process serving the hub on 127.0.0.1:port (`args`: more uvicorn options)."""

    def __init__(
        self, port: int, env: dict[str, str], log: Path, args: tuple[str, ...] = ()
    ) -> None:
        self.port = port
        self.log = log
        self.proc = subprocess.Popen(
            [
                str(REPO / ".venv" / "bin" / "python"),
                "-m",
                "uvicorn",
                "config.asgi:application",
                "--host",
                "127.0.0.1",
                "--port",
                str(port),
                "--lifespan",
                "off",
                "--timeout-graceful-shutdown",
                "1",
                *args,
            ],
            cwd=REPO,
            env={**os.environ, **env},
            stdout=log.open("wb"),
            stderr=subprocess.STDOUT,
        )
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise AssertionError(f"the server ended: {log.read_text()[-3000:]}")
            try:
                socket.create_connection(("127.0.0.1", port), 0.2).close()
                return
            except OSError:
                time.sleep(0.1)
        raise AssertionError(f"the server did not listen: {log.read_text()[-3000:]}")

    def threads(self) -> int:
        status = Path(f"/proc/{self.proc.pid}/status").read_text()
        return int(next(line for line in status.splitlines() if line.startswith("Threads:"))[8:])

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


def session_cookie(user: Any) -> str:
    from django.test import Client

    client = Client()
    client.force_login(user)
    return client.cookies["sessionid"].value


class Stream:
    """GET /api/sessions/<id>/events as a browser's EventSource would, read line by line."""

    def __init__(self, port: int, session_id: Any, cookie: str, *, last_id: int | None = None):
        self.conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
        headers = {"Cookie": f"sessionid={cookie}", "Accept": "text/event-stream"}
        if last_id is not None:
            headers["Last-Event-ID"] = str(last_id)
        self.conn.request("GET", f"/api/sessions/{session_id}/events?wait=120", headers=headers)
        self.response = self.conn.getresponse()
        assert self.response.status == 200, self.response.read()[:500]

    def next_event(self, timeout: float = 20.0) -> dict[str, Any]:
        """The next event (keep-alives skipped)."""
        self.conn.sock.settimeout(timeout)
        fields: dict[str, str] = {}
        while True:
            line = self.response.readline().decode()
            if not line:
                raise EOFError("the stream ended")
            line = line.rstrip("\n")
            if not line:
                if "id" in fields:
                    return {"id": int(fields["id"]), **json.loads(fields["data"])}
                fields = {}
                continue
            if line.startswith(":"):
                continue
            name, _, value = line.partition(": ")
            fields[name] = value

    def cut(self) -> None:
        """Drop the connection without a goodbye, like a tab closed mid-stream."""
        with_sock = self.conn.sock
        if with_sock is not None:
            with_sock.shutdown(socket.SHUT_RDWR)
        self.conn.close()


def post_json(port: int, path: str, body: dict[str, Any], cookie: str) -> tuple[int, Any]:
    """A signed-in POST with Django's double-submit CSRF cookie and header."""
    csrf = secrets.token_hex(16)
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    conn.request(
        "POST",
        path,
        body=json.dumps(body),
        headers={
            "Cookie": f"sessionid={cookie}; csrftoken={csrf}",
            "X-CSRFToken": csrf,
            "Content-Type": "application/json",
        },
    )
    answer = conn.getresponse()
    data = answer.read()
    conn.close()
    try:
        return answer.status, json.loads(data)
    except ValueError:
        return answer.status, data.decode(errors="replace")


python = sys.executable
