"""events_batched(): the events a job's commit appends are written in one statement, in order,
with consecutive seqs, and not at all when the block fails."""

from __future__ import annotations

import pytest
from django.db import connection, transaction
from django.test.utils import CaptureQueriesContext
from test_play_job_events import detached_session, events, last_seq
from test_play_support import by_runtime, play

from eventlog.models import SessionEvent
from eventlog.services import event_append, events_batched
from jobs.models import RuntimeJob
from jobs.worker import job_execute


def event_inserts(queries) -> list[str]:
    return [q["sql"] for q in queries.captured_queries if "INSERT INTO" in q["sql"]
            and '"play_sessionevent"' in q["sql"]]  # fmt: skip


def test_events_in_a_batch_are_written_together_at_its_end_in_order(db, alice, tmp_path):
    session = detached_session(alice, tmp_path)
    start = last_seq(session)
    with CaptureQueriesContext(connection) as queries, transaction.atomic():
        with events_batched():
            for i in range(3):
                event_append(session_id=session.pk, type="test.batch", payload={"i": i})
            assert last_seq(session) == start  # nothing written before the block ends
        assert last_seq(session) == start + 3
    assert len(event_inserts(queries)) == 1
    rows = SessionEvent.objects.filter(session=session, seq__gt=start).order_by("seq")
    assert [(r.seq, r.type, r.payload) for r in rows] == [
        (start + 1 + i, "test.batch", {"i": i}) for i in range(3)
    ]


def test_a_failing_batch_writes_nothing(db, alice, tmp_path):
    session = detached_session(alice, tmp_path)
    start = last_seq(session)
    with pytest.raises(RuntimeError), transaction.atomic(), events_batched():
        event_append(session_id=session.pk, type="test.lost", payload={})
        raise RuntimeError("the commit failed")
    assert last_seq(session) == start
    # The next append is not swallowed by a batch left behind.
    event_append(session_id=session.pk, type="test.after", payload={})
    assert events(session, after=start) == [("test.after", {})]


def test_a_nested_batch_joins_the_outer_one(db, alice, tmp_path, django_user_model):
    first = detached_session(alice, tmp_path)
    start = last_seq(first)
    with CaptureQueriesContext(connection) as queries, transaction.atomic(), events_batched():
        event_append(session_id=first.pk, type="test.outer", payload={})
        with events_batched():
            event_append(session_id=first.pk, type="test.inner", payload={})
        assert last_seq(first) == start  # the inner block's end wrote nothing yet
    assert len(event_inserts(queries)) == 1
    assert [t for t, _ in events(first, after=start)] == ["test.outer", "test.inner"]


def test_a_jobs_commit_writes_its_events_in_one_statement(db, alice, tmp_path):
    session = detached_session(alice, tmp_path)
    job = RuntimeJob.objects.get(job_id=by_runtime(play(session, "ring"))["scribe/later"]["jobId"])
    start = last_seq(session)
    with CaptureQueriesContext(connection) as queries:
        assert job_execute(job_pk=job.pk) == "succeeded"
    # One for job-status.updated "running" (the claim's transaction), one for the commit's
    # runtime.status, turn.committed and job-status.updated "succeeded".
    assert len(event_inserts(queries)) == 2
    written = events(session, after=start)
    assert [t for t, _ in written] == [
        "job-status.updated",
        "runtime.status",
        "turn.committed",
        "job-status.updated",
    ]
    assert [p["state"] for t, p in written if t == "job-status.updated"] == [
        "running",
        "succeeded",
    ]
    seqs = list(
        SessionEvent.objects.filter(session=session, seq__gt=start).values_list("seq", flat=True)
    )
    assert sorted(seqs) == list(range(start + 1, start + 5))
