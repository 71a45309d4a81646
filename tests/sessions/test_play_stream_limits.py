"""Caps on event streams (sessions/stream_limits.py), on real uvicorn processes.

Alice owns the session and opens stream after stream on it; Bob (staff) watches the same
session for support. Neither may take the process from the other: past the per-user cap Alice's
oldest stream is closed (with a `stream.closed` frame), past the process cap a new stream is
refused at once with 503 and Retry-After, and a storm of starts queues at the gate instead of
for database connections.
"""

from __future__ import annotations

import asyncio
import http.client
import json
import statistics
import time

import pytest
import stream_fixtures
import stream_servers as servers
import test_play_support as support
from test_play_support import file_database, index_bundled, make_world  # noqa: F401

from sessions import stream_limits

# Shared fixtures (tests/sessions/stream_fixtures.py).
harbor_session, local_notify = stream_fixtures.harbor_session, stream_fixtures.local_notify
pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True)]


def serve(tmp_path, notify_dir: str, **limits: int) -> servers.Server:
    return servers.Server(
        servers.free_port(),
        {
            "DATABASE_URL": servers.database_url(),
            "COVEL_NOTIFY_BACKEND": "local",
            "COVEL_NOTIFY_DIR": notify_dir,
            "COVEL_VAR_DIR": str(tmp_path / "var"),
            "REDIS_URL": "",
            **{f"COVEL_{name.upper()}": str(value) for name, value in limits.items()},
        },
        tmp_path / "server.log",
    )


def read_until_closed(stream: servers.Stream) -> list[str]:
    """The stream's lines up to its end; the stream must end on its own."""
    stream.conn.sock.settimeout(20)
    lines = []
    while line := stream.response.readline():
        lines.append(line.decode().rstrip("\n"))
    return lines


def get_status(port: int, path: str, cookie: str) -> tuple[int, dict[str, str], bytes]:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=20)
    conn.request("GET", path, headers={"Cookie": f"sessionid={cookie}"})
    answer = conn.getresponse()
    body = answer.read() if answer.status != 200 else b""
    headers = {k.title(): v for k, v in answer.getheaders()}
    conn.close()
    return answer.status, headers, body


def test_past_the_per_user_cap_the_oldest_stream_is_closed_and_the_newest_kept(
    harbor_session, alice, local_notify, tmp_path
):
    server = serve(tmp_path, local_notify, streams_per_user=3)
    try:
        cookie = servers.session_cookie(alice)
        streams = [servers.Stream(server.port, harbor_session.pk, cookie) for _ in range(3)]
        for stream in streams:
            assert stream.next_event()["type"] == "session.created"
        newest = servers.Stream(server.port, harbor_session.pk, cookie)
        assert newest.next_event()["type"] == "session.created"

        lines = read_until_closed(streams[0])
        assert "event: stream.closed" in lines
        closed = json.loads(lines[lines.index("event: stream.closed") + 1][len("data: ") :])
        assert closed["reason"] == "too-many-streams"

        # The three kept streams still follow the session.
        support.play(harbor_session, "Onward.")
        for stream in [*streams[1:], newest]:
            while (event := stream.next_event())["type"] != "turn.committed":
                pass
            assert event["payload"]["turnId"]
    finally:
        server.stop()


def test_the_per_user_cap_leaves_another_users_streams_alone(
    harbor_session, alice, bob, local_notify, tmp_path
):
    server = serve(tmp_path, local_notify, streams_per_user=1)
    try:
        theirs = servers.Stream(server.port, harbor_session.pk, servers.session_cookie(bob))
        assert theirs.next_event()["type"] == "session.created"
        cookie = servers.session_cookie(alice)
        first = servers.Stream(server.port, harbor_session.pk, cookie)
        first.next_event()
        second = servers.Stream(server.port, harbor_session.pk, cookie)
        second.next_event()
        assert "event: stream.closed" in read_until_closed(first)
        support.play(harbor_session, "Onward.")
        for stream in (theirs, second):
            while stream.next_event()["type"] != "turn.committed":
                pass
    finally:
        server.stop()


def test_past_the_process_cap_a_new_stream_is_refused_at_once_with_retry_after(
    harbor_session, alice, local_notify, tmp_path
):
    server = serve(tmp_path, local_notify, streams_max=2, streams_per_user=0)
    try:
        cookie = servers.session_cookie(alice)
        held = [servers.Stream(server.port, harbor_session.pk, cookie) for _ in range(2)]
        for stream in held:
            stream.next_event()
        started = time.monotonic()
        status, headers, body = get_status(
            server.port, f"/api/sessions/{harbor_session.pk}/events", cookie
        )
        assert status == 503
        assert time.monotonic() - started < 2
        assert headers["Retry-After"] == "5"
        assert json.loads(body)["code"] == "too_many_streams"
        # Once one closes, a stream starts again.
        held[0].cut()
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            stream = None
            try:
                stream = servers.Stream(server.port, harbor_session.pk, cookie)
                break
            except AssertionError:
                time.sleep(0.2)
        assert stream is not None and stream.next_event()["type"] == "session.created"
    finally:
        server.stop()


def test_one_player_with_120_streams_does_not_slow_the_hub_on_the_embedded_default(
    harbor_session, alice, local_notify, tmp_path
):
    """A player opening streams without end (a script, a stuck tab): with the default cap the
    oldest are closed, and sign-in, /healthz and a turn stay fast for everyone."""
    server = serve(tmp_path, local_notify)
    try:
        cookie = servers.session_cookie(alice)
        streams = [servers.Stream(server.port, harbor_session.pk, cookie) for _ in range(120)]
        assert streams[-1].next_event()["type"] == "session.created"
        closed = sum("event: stream.closed" in read_until_closed(s) for s in streams[:100])
        assert closed == 100  # the default cap is 20 per user

        def timed(call) -> float:
            started = time.monotonic()
            call()
            return time.monotonic() - started

        healthz = [
            timed(lambda: get_status(server.port, "/healthz", cookie)[0] == 200) for _ in range(5)
        ]
        turns = []
        for i in range(3):

            def turn(i=i):
                status, _ = servers.post_json(
                    server.port,
                    f"/api/sessions/{harbor_session.pk}/actions",
                    {"message": f"Step {i}."},
                    cookie,
                )
                assert status == 200

            turns.append(timed(turn))
        assert statistics.median(healthz) < 0.2, healthz
        assert statistics.median(turns) < 0.2, turns
    finally:
        server.stop()


def test_a_storm_of_starts_waits_at_the_gate_and_past_its_wait_answers_503(rf, settings):
    """The gate alone: one place, a start that holds it, and a second that cannot get in."""
    settings.COVEL_STREAM_STARTS = 1
    settings.COVEL_STREAM_START_WAIT_SECONDS = 1
    stream_limits.gate.places = None
    holding = asyncio.Event()
    letting_go = asyncio.Event()

    async def view(request):
        if request.path.endswith("/events"):  # a start that takes its time (sign-in, replay)
            holding.set()
            await letting_go.wait()
        return stream_limits.retry_later(1, "done", "done")  # any non-stream answer

    middleware = stream_limits.StreamStartMiddleware(view)

    async def scenario():
        first = asyncio.create_task(middleware(rf.get("/api/sessions/x/events")))
        await holding.wait()
        started = time.monotonic()
        refused = await middleware(rf.get("/api/sessions/x/events"))
        waited = time.monotonic() - started
        other = await asyncio.wait_for(middleware(rf.get("/api/sessions/x/turns")), 1)
        letting_go.set()
        await first
        # The first start gave its place back: a third gets in at once.
        holding.clear()
        third = asyncio.create_task(middleware(rf.get("/api/sessions/x/events")))
        await asyncio.wait_for(holding.wait(), 1)
        await third
        return refused, waited, other

    refused, waited, other = asyncio.run(scenario())
    assert refused.status_code == 503 and refused["Retry-After"] == "5"
    assert json.loads(refused.content)["code"] == "server_busy"
    assert 0.9 <= waited < 3
    assert other.status_code == 503 and json.loads(other.content)["code"] == "done"
