"""Pushed event streams on real uvicorn processes.

Alice owns the session and watches it; the test writes turns into it (as the web process or a
worker would) while her streams are cut and reconnect, and checks that every seq arrives
exactly once; an idle stream holds no thread; on PostgreSQL and Redis, an action posted to
one server reaches a stream served by another.
"""

from __future__ import annotations

import threading
import time

import pytest
import stream_fixtures
import stream_servers as servers
import test_play_support as support
from test_play_support import file_database, index_bundled, make_world, play  # noqa: F401

from eventlog.models import SessionEvent

# Shared fixtures (tests/sessions/stream_fixtures.py).
harbor_session, local_notify = stream_fixtures.harbor_session, stream_fixtures.local_notify
pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True)]


def local_server(tmp_path, notify_dir: str) -> servers.Server:
    """A server on the test database (a SQLite file, or PostgreSQL), woken by local sockets."""
    return servers.Server(
        servers.free_port(),
        {
            "DATABASE_URL": servers.database_url(),
            "COVEL_NOTIFY_BACKEND": "local",
            "COVEL_NOTIFY_DIR": notify_dir,
            "COVEL_VAR_DIR": str(tmp_path / "var"),
            "REDIS_URL": "",
            # These tests open dozens of one player's streams: no per-user cap here
            # (test_play_stream_limits.py tests the cap).
            "COVEL_STREAMS_PER_USER": "0",
        },
        tmp_path / "server.log",
    )


def test_a_stream_cut_mid_turn_resumes_from_last_event_id_with_every_seq_once(
    harbor_session, alice, local_notify, tmp_path
):
    server = local_server(tmp_path, local_notify)
    try:
        cookie = servers.session_cookie(alice)
        turns = 5
        writer = threading.Thread(
            target=lambda: [play(harbor_session, f"Step {i}.") for i in range(turns)]
        )
        stream = servers.Stream(server.port, harbor_session.pk, cookie)
        seen = [stream.next_event()["id"]]  # session.created: the stream is live
        writer.start()
        committed = cuts = 0
        while committed < turns:
            event = stream.next_event()
            seen.append(event["id"])
            if event["type"] == "turn.committed":
                committed += 1
            if event["type"] in ("turn.started", "narrative"):
                # Mid-turn: drop the connection and come back as EventSource does.
                stream.cut()
                cuts += 1
                stream = servers.Stream(server.port, harbor_session.pk, cookie, last_id=seen[-1])
        writer.join(30)
        stream.cut()
        last = SessionEvent.objects.filter(session=harbor_session).order_by("-seq").first().seq
        assert cuts >= turns
        assert seen == list(range(1, last + 1))  # every seq, in order, exactly once
    finally:
        server.stop()


def test_idle_streams_hold_no_thread_and_wake_when_another_process_writes(
    harbor_session, alice, local_notify, tmp_path
):
    server = local_server(tmp_path, local_notify)
    try:
        cookie = servers.session_cookie(alice)
        first = servers.Stream(server.port, harbor_session.pk, cookie)
        assert first.next_event()["type"] == "session.created"
        before = server.threads()
        streams = [servers.Stream(server.port, harbor_session.pk, cookie) for _ in range(40)]
        for stream in streams:
            assert stream.next_event()["type"] == "session.created"
        time.sleep(0.5)
        # Reads ran on the loop's small shared executor; no stream kept a thread of its own.
        assert server.threads() <= before + 6, (before, server.threads())
        started = time.monotonic()
        play(harbor_session, "Everyone hears this.")  # written by this process, not the server
        for stream in [first, *streams]:
            assert stream.next_event()["type"] == "turn.started"
        assert time.monotonic() - started < 10
        for stream in [first, *streams]:
            stream.cut()
    finally:
        server.stop()


def test_an_action_posted_to_one_server_reaches_a_stream_on_another(
    harbor_session, alice, redis_url, tmp_path, settings
):
    from django.db import connection

    if connection.vendor != "postgresql":
        pytest.skip("two servers behind one Redis run on PostgreSQL")
    env = {
        "DATABASE_URL": servers.database_url(),
        "REDIS_URL": redis_url,
        "COVEL_NOTIFY_BACKEND": "redis",
        "DB_POOL": "true",
        "COVEL_VAR_DIR": str(tmp_path / "var"),
    }
    one = servers.Server(servers.free_port(), env, tmp_path / "one.log")
    other = servers.Server(servers.free_port(), env, tmp_path / "other.log")
    try:
        cookie = servers.session_cookie(alice)
        stream = servers.Stream(other.port, harbor_session.pk, cookie)
        assert stream.next_event()["type"] == "session.created"
        status, body = servers.post_json(
            one.port, f"/api/sessions/{harbor_session.pk}/actions", {"message": "Hi."}, cookie
        )
        assert status == 200, body
        kinds = []
        while "turn.committed" not in kinds:
            kinds.append(stream.next_event(timeout=10)["type"])
        assert kinds[0] == "turn.started" and "narrative" in kinds
        stream.cut()
    finally:
        one.stop()
        other.stop()


@pytest.mark.services
def test_postgres_listen_notify_carries_events_between_two_servers_without_redis(
    harbor_session, alice, tmp_path
):
    """Two servers on PostgreSQL and no Redis: the notify backend is LISTEN/NOTIFY. A turn
    posted to one reaches a stream on the other; a stream cut and reopened with Last-Event-ID
    on the other server gets the turn it missed and the next one, every seq exactly once."""
    from django.db import connection

    if connection.vendor != "postgresql":
        pytest.skip("LISTEN/NOTIFY is PostgreSQL's (the PostgreSQL pass runs this)")
    env = {
        "DATABASE_URL": servers.database_url(),
        "REDIS_URL": "",
        "COVEL_NOTIFY_BACKEND": "",  # the default without Redis on PostgreSQL: "postgres"
        "DB_POOL": "true",
        "COVEL_VAR_DIR": str(tmp_path / "var"),
    }
    one = servers.Server(servers.free_port(), env, tmp_path / "one.log")
    other = servers.Server(servers.free_port(), env, tmp_path / "other.log")
    cookie = servers.session_cookie(alice)

    def post(message: str) -> None:
        status, body = servers.post_json(
            one.port, f"/api/sessions/{harbor_session.pk}/actions", {"message": message}, cookie
        )
        assert status == 200, body

    def until_committed(stream: servers.Stream, seen: list[int]) -> list[str]:
        kinds = []
        while "turn.committed" not in kinds:
            event = stream.next_event(timeout=10)
            seen.append(event["id"])
            kinds.append(event["type"])
        return kinds

    try:
        seen: list[int] = []
        stream = servers.Stream(other.port, harbor_session.pk, cookie)
        seen.append(stream.next_event()["id"])  # session.created: the stream is live
        assert listeners(connection) == 1  # the other server's, opened by its first stream
        post("Across.")
        assert until_committed(stream, seen)[0] == "turn.started"
        stream.cut()
        post("While nobody watches.")  # the stream is gone: only the replay can bring it
        stream = servers.Stream(other.port, harbor_session.pk, cookie, last_id=seen[-1])
        until_committed(stream, seen)  # the missed turn, replayed
        # A stream on the writing server too: its own NOTIFY comes back to its listener.
        mine = servers.Stream(one.port, harbor_session.pk, cookie, last_id=seen[-1])
        deadline = time.monotonic() + 10
        while listeners(connection) < 2 and time.monotonic() < deadline:
            time.sleep(0.05)  # the headers come before the stream has subscribed
        assert listeners(connection) == 2
        post("Live again.")
        before = len(seen)
        until_committed(stream, seen)  # woken by NOTIFY from the first server
        on_one: list[int] = []
        until_committed(mine, on_one)
        assert on_one == seen[before:]
        stream.cut()
        mine.cut()
        last = SessionEvent.objects.filter(session=harbor_session).order_by("-seq").first().seq
        assert seen == list(range(1, last + 1))  # every seq, in order, exactly once
        for server in (one, other):
            log = server.log.read_text()
            for trouble in ("could not publish", "lost PostgreSQL", "did not confirm"):
                assert trouble not in log, log[-3000:]
    finally:
        one.stop()
        other.stop()


def listeners(connection) -> int:
    """The LISTEN connections (core/notify.py names them covel-notify) on the test database."""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT count(*) FROM pg_stat_activity WHERE application_name = 'covel-notify' "
            "AND datname = current_database() AND query LIKE 'LISTEN %%'"
        )
        return cursor.fetchone()[0]


support_fixtures = support  # the module's fixtures stay imported for pytest


def test_a_turn_without_a_free_database_connection_answers_503_not_500(
    harbor_session, alice, tmp_path
):
    """The server's database role may open two connections; the test holds both, so the
    server's pool finds none: the action is refused with 503 and Retry-After, and once the
    connections are back the same action runs."""
    import psycopg
    from django.db import connection

    if connection.vendor != "postgresql":
        pytest.skip("a connection limit is a PostgreSQL matter")
    role = "serve_limited_role"
    name = connection.settings_dict["NAME"]
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT 1 FROM pg_roles WHERE rolname = '{role}'")
        if cursor.fetchone() is None:
            cursor.execute(f"CREATE ROLE {role} LOGIN CONNECTION LIMIT 2")
        cursor.execute(f"GRANT ALL ON ALL TABLES IN SCHEMA public TO {role}")
        cursor.execute(f"GRANT ALL ON ALL SEQUENCES IN SCHEMA public TO {role}")
        cursor.execute(f'GRANT CONNECT ON DATABASE "{name}" TO {role}')
    s = connection.settings_dict
    host, port = s["HOST"] or "127.0.0.1", s["PORT"] or 5432
    server = servers.Server(
        servers.free_port(),
        {
            "DATABASE_URL": f"postgres://{role}@{host}:{port}/{name}",
            "DB_POOL": "true",
            "DB_POOL_MIN_SIZE": "0",
            "DB_POOL_TIMEOUT": "1",
            "COVEL_VAR_DIR": str(tmp_path / "var"),
        },
        tmp_path / "server.log",
    )
    held = []
    try:
        cookie = servers.session_cookie(alice)
        held = [psycopg.connect(host=host, port=port, dbname=name, user=role) for _ in range(2)]
        status, body = servers.post_json(
            server.port, f"/api/sessions/{harbor_session.pk}/actions", {"message": "Hi."}, cookie
        )
        assert status == 503, body
        assert body["code"] == "database_unavailable" and set(body) == {
            "code",
            "message",
            "details",
        }
        for held_connection in held:
            held_connection.close()
        held = []
        # A client that honours Retry-After gets through once the pool reconnects.
        deadline = time.monotonic() + 20
        while True:
            status, body = servers.post_json(
                server.port,
                f"/api/sessions/{harbor_session.pk}/actions",
                {"message": "Hi."},
                cookie,
            )
            if status != 503 or time.monotonic() > deadline:
                break
            time.sleep(body["details"]["retryAfter"])
        assert status == 200, body
    finally:
        for held_connection in held:
            held_connection.close()
        server.stop()
        with connection.cursor() as cursor:
            cursor.execute(f"REVOKE ALL ON ALL TABLES IN SCHEMA public FROM {role}")
            cursor.execute(f"REVOKE ALL ON ALL SEQUENCES IN SCHEMA public FROM {role}")
            cursor.execute(f'REVOKE CONNECT ON DATABASE "{name}" FROM {role}')


def test_a_malformed_form_is_a_400_with_one_log_line_and_no_traceback(tmp_path, db):
    from django.db import connection

    if connection.vendor != "sqlite":
        pytest.skip("the log, not the database, is under test (runs in the SQLite pass)")
    server = servers.Server(
        servers.free_port(),
        {"COVEL_VAR_DIR": str(tmp_path / "var"), "DATABASE_URL": "", "REDIS_URL": ""},
        tmp_path / "server.log",
    )
    try:
        import http.client

        conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=30)
        # More fields than Django reads (DATA_UPLOAD_MAX_NUMBER_FIELDS): a 400 it logs.
        conn.request(
            "POST",
            "/accounts/login/",
            body="&".join(f"f{i}=1" for i in range(1500)),
            headers={
                "Content-Type": "application/x-www-form-urlencoded",
                "Cookie": f"csrftoken={'a' * 32}",
                "X-CSRFToken": "a" * 32,
            },
        )
        answer = conn.getresponse()
        answer.read()
        assert answer.status == 400
    finally:
        server.stop()
    log = (tmp_path / "server.log").read_text()
    assert "Traceback" not in log
    assert "WARNING" in log or "ERROR" in log  # the refusal is still logged, as one line
