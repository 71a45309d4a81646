"""The session's event stream: SSE framing, Last-Event-ID replay, dense ids."""

from __future__ import annotations

import json

import test_play_support as support
from django.test import Client
from test_play_support import play

from sessions.services import session_create

bundled_world = support.bundled_world  # a shared fixture


def parse(text: str) -> list[dict]:
    events = []
    for block in text.split("\n\n"):
        fields = dict(
            line.split(": ", 1)
            for line in block.splitlines()
            if ": " in line and not line.startswith(":")
        )
        if "id" in fields:
            events.append(
                {
                    "id": int(fields["id"]),
                    "event": fields["event"],
                    "data": json.loads(fields["data"]),
                }
            )
    return events


def read(client: Client, url: str, **headers) -> list[dict]:
    answer = client.get(url, **headers)
    assert answer.status_code == 200
    assert answer["Content-Type"].startswith("text/event-stream")
    return parse(support.stream_text(answer))


def test_a_reconnecting_client_gets_exactly_the_events_after_last_event_id(bundled_world, alice):
    session = session_create(owner=alice, world=bundled_world)
    play(session, "I light a lamp.")
    client = Client()
    client.force_login(alice)
    url = f"/api/sessions/{session.pk}/events?wait=0"
    everything = read(client, url)
    ids = [e["id"] for e in everything]
    assert ids == list(range(1, len(ids) + 1))  # dense, from 1
    kinds = [e["event"] for e in everything]
    assert kinds[0] == "session.created"
    assert kinds.index("turn.started") < kinds.index("narrative") < kinds.index("turn.committed")
    assert any(
        e["event"] == "runtime.status" and e["data"]["payload"]["runtime"] == "word-count"
        for e in everything
    )

    middle = ids[len(ids) // 2]
    replay = read(client, url, HTTP_LAST_EVENT_ID=str(middle))
    assert [e["id"] for e in replay] == ids[middle:]
    assert replay == everything[middle:]

    play(session, "I blow it out.")
    newer = read(client, url, HTTP_LAST_EVENT_ID=str(ids[-1]))
    assert newer[0]["id"] == ids[-1] + 1
    assert newer[0]["event"] == "turn.started"
    assert newer[0]["data"]["payload"]["playerMessage"] == "I blow it out."
    # ?after= is the first connection's Last-Event-ID; the header wins when both are sent.
    assert read(client, f"{url}&after={ids[-1]}") == newer
    assert read(client, f"{url}&after=0", HTTP_LAST_EVENT_ID=str(ids[-1])) == newer
