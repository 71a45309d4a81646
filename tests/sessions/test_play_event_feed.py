"""Pushed streams in one process share a feed per session: waiting streams cost no read, an
event costs one read for all of them and reaches each as one chunk; a stream further behind
than the rows the feed keeps reads the database itself and misses nothing; keep-alives come
from the feed's tick and a stream still ends at its deadline."""

from __future__ import annotations

import asyncio
import re
import time

import pytest
import test_play_support as support
from asgiref.sync import sync_to_async
from django.db import connections, transaction

from core import notify
from eventlog.services import event_append, events_batched
from sessions import events
from sessions.services import session_create

bundled_world = support.bundled_world  # a shared fixture
pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture(autouse=True)
def local_notify(settings, tmp_path):
    settings.COVEL_NOTIFY_BACKEND = "local"
    settings.COVEL_NOTIFY_DIR = str(tmp_path / "notify")
    notify.reset()
    yield
    notify.reset()


@pytest.fixture
def reads(monkeypatch) -> list[int]:
    """The `after` of every read of the event log the streams make (the real read runs)."""
    calls: list[int] = []
    real = events.events_after

    def counting(*, session, after, limit=500):
        calls.append(after)
        return real(session=session, after=after, limit=limit)

    monkeypatch.setattr(events, "events_after", counting)
    return calls


def ids(chunk: bytes) -> list[int]:
    return [int(seq) for seq in re.findall(rb"^id: (\d+)$", chunk, re.M)]


def write(session_id, count: int) -> None:
    """count events in one transaction: one statement, one notification after the commit."""
    try:
        with transaction.atomic(), events_batched():
            for k in range(count):
                event_append(session_id=session_id, type="test.tick", payload={"k": k})
    finally:
        connections.close_all()  # a worker thread's connection, not left for the teardown


def run(scenario):
    """asyncio.run, then the connection the streams' reads opened on asgiref's thread is
    closed (PostgreSQL would not drop the test database under it)."""

    async def and_close():
        try:
            return await scenario
        finally:
            await sync_to_async(connections.close_all)()

    return asyncio.run(and_close())


async def opened(session_id, count: int, wait: float = 30.0) -> list:
    """count streams from the start, each past its replay (session.created, seq 1)."""
    streams = []
    for _ in range(count):
        stream = events.stream_events_pushed(session_id=session_id, after=0, wait=wait)
        assert await anext(stream) == events.RETRY_FRAME
        assert ids(await anext(stream)) == [1]
        streams.append(stream)
    return streams


def test_waiting_streams_cost_no_read_and_an_event_one_read_for_all(bundled_world, alice, reads):
    session = session_create(owner=alice, world=bundled_world)

    async def scenario():
        streams = await opened(session.pk, 20)
        assert len(reads) == 20  # each stream's own replay
        pending = [asyncio.ensure_future(anext(stream)) for stream in streams]
        await asyncio.sleep(0.5)
        assert not any(task.done() for task in pending)
        assert len(reads) == 20  # waiting costs nothing
        await asyncio.to_thread(write, session.pk, 3)
        chunks = await asyncio.wait_for(asyncio.gather(*pending), 10)
        assert [ids(chunk) for chunk in chunks] == [[2, 3, 4]] * 20  # the burst, one chunk
        assert reads[20:] == [1]  # one read, after the last seq every stream had
        for stream in streams:
            await stream.aclose()
        assert events._Feed.feeds == {}  # the last stream to leave ends the feed

    run(scenario())


def test_a_stream_behind_the_kept_rows_reads_them_from_the_database(
    bundled_world, alice, reads, monkeypatch
):
    monkeypatch.setattr(events, "RECENT_ROWS", 2)
    session = session_create(owner=alice, world=bundled_world)

    async def scenario():
        (stream,) = await opened(session.pk, 1)
        following = asyncio.ensure_future(anext(stream))
        await asyncio.sleep(0.2)
        await asyncio.to_thread(write, session.pk, 5)  # seqs 2-6; the feed keeps 5 and 6
        seen = ids(await asyncio.wait_for(following, 10))
        while seen[-1] < 6:
            seen += ids(await asyncio.wait_for(anext(stream), 10))
        assert seen == [2, 3, 4, 5, 6]  # none missed, none twice
        assert reads[1:] == [1, 1]  # the feed's read, then the stream's own
        await stream.aclose()

    run(scenario())


def test_keep_alives_come_from_the_feed_and_a_stream_ends_at_its_deadline(
    bundled_world, alice, reads, monkeypatch
):
    monkeypatch.setattr(events, "PUSH_KEEPALIVE_SECONDS", 0.2)
    session = session_create(owner=alice, world=bundled_world)

    async def scenario():
        started = time.monotonic()
        (stream,) = await opened(session.pk, 1, wait=1.0)
        rest = [chunk async for chunk in stream]
        return time.monotonic() - started, rest

    elapsed, rest = run(scenario())
    assert rest and set(rest) == {events.KEEPALIVE_FRAME}
    assert 0.9 < elapsed < 3.0
    assert len(reads) == 1  # the replay only: an idle stream reads nothing
