"""Redis and PostgreSQL restarting under load: every request answers 503 with Retry-After or
succeeds, never 500; afterwards everything works again, no session stays locked, and a stream
open across the outage still hears of the turns committed after it.

The servers restarted are the test's own (tests/ops/private_services.py), never the machine's
shared ones. The web server is a real uvicorn process set up as a deployment runs it (DB_POOL,
REDIS_URL: the session engine and the cache on Redis, notifications over Redis).
"""

from __future__ import annotations

import http.client
import json
import os
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "sessions"))

from private_services import PrivatePostgres, PrivateRedis, free_port  # noqa: E402
from stream_servers import Server  # noqa: E402

REPO = Path(__file__).resolve().parents[2]
PYTHON = str(REPO / ".venv" / "bin" / "python")
SESSIONS = 4

# Its servers are its own (or the embedded default): the same in both passes of scripts/test.sh.
pytestmark = [pytest.mark.slow, pytest.mark.first_pass_only]

SETUP = """
import json
import os
import django
django.setup()
from django.contrib.auth import get_user_model
from django.test import Client
from accounts.services import token_create
from catalogue.manifest.loader import load_package
from catalogue.services import package_content_hash, package_index
from sessions.services import session_create
from worlds.models import World
from pathlib import Path

SESSIONS = int(os.environ["OUTAGE_SESSIONS"])
for name in ("word-count", "dice"):
    folder = Path("plugins") / name
    package_index(result=load_package(folder, host_version="0.1.0"), source="bundled",
                  content_hash=package_content_hash(path=folder), host_version="0.1.0")
user = get_user_model().objects.create_user("alice", password="x" * 12)
world = World.objects.create(world_id="harbor", name="Harbor", owner=user,
                             plugins=["word-count", "dice"])
sessions = [str(session_create(owner=user, world=world).pk) for _ in range(SESSIONS)]
_, raw = token_create(user=user, name="outages")
client = Client()
client.force_login(user)
print(json.dumps({"sessions": sessions, "token": raw,
                  "cookie": client.cookies["sessionid"].value}))
"""


class Stack:
    def __init__(self, tmp: Path) -> None:
        self.pg = PrivatePostgres()
        self.redis = PrivateRedis()
        self.env = {
            "DATABASE_URL": self.pg.url,
            "REDIS_URL": self.redis.url,
            "DB_POOL": "true",
            "DB_POOL_TIMEOUT": "2",
            "COVEL_TURN_RATE": "100000/s",  # the load plays far more turns than a person
            "COVEL_VAR_DIR": str(tmp),
            "DJANGO_SETTINGS_MODULE": "config.settings",
        }
        env = {**os.environ, **self.env, "OUTAGE_SESSIONS": str(SESSIONS)}
        subprocess.run([PYTHON, "manage.py", "migrate", "-v", "0"], cwd=REPO, env=env, check=True)
        done = subprocess.run(
            [PYTHON, "-c", SETUP], cwd=REPO, env=env, check=True, capture_output=True, text=True
        )
        self.rows = json.loads(done.stdout.strip().splitlines()[-1])
        self.server = Server(free_port(), self.env, tmp / "server.log")

    def close(self) -> None:
        self.server.stop()
        self.pg.close()
        self.redis.close()

    def request(self, method: str, path: str, body: Any = None, *, cookie: bool = False):
        conn = http.client.HTTPConnection("127.0.0.1", self.server.port, timeout=30)
        headers = {"Content-Type": "application/json"}
        if cookie:
            headers["Cookie"] = f"sessionid={self.rows['cookie']}"
        else:
            headers["Authorization"] = f"Bearer {self.rows['token']}"
        try:
            conn.request(method, path, json.dumps(body) if body is not None else None, headers)
            answer = conn.getresponse()
            return answer.status, answer.getheader("Retry-After"), answer.read()
        finally:
            conn.close()


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    made = Stack(tmp_path_factory.mktemp("outages"))
    try:
        yield made
    finally:
        made.close()


class Load:
    """One thread per session: a signed-in read (the session cookie), then a turn (a token)."""

    def __init__(self, stack: Stack) -> None:
        self.stack = stack
        self.results: list[tuple[float, str, int, str | None, bytes]] = []
        self.stopping = threading.Event()
        self.threads = [
            threading.Thread(target=self._play, args=(sid,), daemon=True)
            for sid in stack.rows["sessions"]
        ]

    def _play(self, session_id: str) -> None:
        n = 0
        while not self.stopping.is_set():
            n += 1
            for method, path, body, cookie in (
                ("GET", f"/api/sessions/{session_id}", None, True),
                ("POST", f"/api/sessions/{session_id}/actions", {"message": f"step {n}"}, False),
            ):
                try:
                    status, retry, text = self.stack.request(method, path, body, cookie=cookie)
                except OSError as exc:  # the web server itself never goes away here
                    status, retry, text = 0, None, repr(exc).encode()
                self.results.append((time.monotonic(), method, status, retry, text))

    def __enter__(self) -> Load:
        for thread in self.threads:
            thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stopping.set()
        for thread in self.threads:
            thread.join(60)


def check(load: Load, outage_start: float, outage_end: float, stack: Stack) -> None:
    statuses = [(m, s) for _, m, s, _, _ in load.results]
    bad = [(m, s, t[:300]) for _, m, s, _, t in load.results if s not in (200, 409, 503)]
    assert not bad, (bad[:5], stack.server.log.read_text()[-3000:])
    # Only a turn may meet another one of its session (the lock outlived a dead request).
    assert ("GET", 409) not in statuses
    unavailable = [r for r in load.results if r[2] == 503]
    assert unavailable, "no request met the outage: the test proved nothing"
    assert all(retry and int(retry) > 0 for _, _, _, retry, _ in unavailable)
    assert all(json.loads(t)["code"].endswith("_unavailable") for *_, t in unavailable)
    after = [r for r in load.results if r[0] > outage_end + 10]
    assert after and all(s == 200 for _, _, s, _, _ in after), [
        (m, s, t[:200]) for _, m, s, _, t in after if s != 200
    ][:5]


def run_outage(stack: Stack, restart: Any) -> None:
    with Load(stack) as load:
        time.sleep(2)
        start = time.monotonic()
        restart()
        end = time.monotonic()
        time.sleep(14)  # a lease left by a request cut short ends within 10 s
    check(load, start, end, stack)


def test_redis_restarting_under_load_answers_503_never_500(stack):
    sid = stack.rows["sessions"][0]
    status, _, _ = stack.request("GET", f"/api/sessions/{sid}/events?wait=0", cookie=True)
    assert status == 200
    run_outage(stack, lambda: stack.redis.restart(down_for=1.5))


def test_postgres_restarting_under_load_answers_503_never_500(stack):
    run_outage(stack, lambda: stack.pg.restart(down_for=1.0))


def test_a_stream_open_across_a_redis_restart_hears_the_next_turn(stack):
    sid = stack.rows["sessions"][1]
    heard: dict[str, Any] = {}

    def listen() -> None:
        status, _, text = stack.request("GET", f"/api/sessions/{sid}/events?wait=25", cookie=True)
        heard["status"], heard["text"] = status, text.decode()

    status, _, text = stack.request("GET", f"/api/sessions/{sid}/events?wait=0", cookie=True)
    seen = text.decode().count("turn.committed")
    listener = threading.Thread(target=listen, daemon=True)
    listener.start()
    time.sleep(1)
    stack.redis.restart(down_for=1.5)
    for _ in range(20):  # the first tries may still meet Redis coming back
        status, _, body = stack.request("POST", f"/api/sessions/{sid}/actions", {"message": "x"})
        if status == 200:
            break
        assert status == 503, body[:300]
        time.sleep(0.5)
    assert status == 200
    turn_id = json.loads(body)["turnId"]
    listener.join(30)
    assert heard.get("status") == 200
    assert turn_id in heard["text"] and heard["text"].count("turn.committed") >= seen
