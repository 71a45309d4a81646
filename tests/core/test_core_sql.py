"""core/sql.py: the hand-written reads and inserts of the job hot path give and take exactly
what the ORM does, on SQLite and on PostgreSQL (the suite runs on both)."""

from __future__ import annotations

import uuid
from datetime import timedelta

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from core.sql import Table, insert, read, read_by_pk, read_by_pk_related, read_one_related, update
from jobs.models import RuntimeJob
from sessions.models import Session, Turn
from sessions.services import session_create
from worlds.models import World


def concrete_values(instance) -> dict:
    return {f.attname: getattr(instance, f.attname) for f in type(instance)._meta.concrete_fields}


@pytest.fixture
def session(db, alice):
    world = World.objects.create(
        world_id="quay",
        name="The Quay",
        description="Fog and lanterns.",
        plugins=["lantern"],
        plugin_settings={"lantern": {"brightness": 3}},
        characters=[{"id": "mara", "name": "Mara"}],
        owner=alice,
    )
    made = session_create(owner=alice, world=world)
    Session.objects.filter(pk=made.pk).update(
        trigger_ledger={"runtimes": {"a/b": {"last": 2}}}, turn_count=4
    )
    return made


def test_a_row_read_by_primary_key_equals_the_orms_row_field_for_field(session):
    expected = Session.objects.get(pk=session.pk)
    found = read_by_pk(Session, session.pk)
    assert type(found) is Session and not found._state.adding
    # UUIDs, JSON, datetimes (aware), foreign keys: each converted as the ORM converts it.
    assert concrete_values(found) == concrete_values(expected)
    assert isinstance(found.id, uuid.UUID) and found.trigger_ledger["runtimes"]["a/b"] == {
        "last": 2
    }
    assert timezone.is_aware(found.created_at)
    world = read_by_pk(World, found.world_id)
    assert concrete_values(world) == concrete_values(World.objects.get(pk=found.world_id))


def test_a_row_read_with_its_parent_equals_select_related_in_one_statement(session):
    expected = Session.objects.select_related("world").get(pk=session.pk)
    with CaptureQueriesContext(connection) as queries:
        found = read_by_pk_related(Session, session.pk, related="world")
        world = found.world  # already there: no second read
    assert len(queries) == 1
    assert concrete_values(found) == concrete_values(expected)
    assert concrete_values(world) == concrete_values(expected.world)
    assert world.characters == [{"id": "mara", "name": "Mara"}]
    assert read_by_pk_related(Session, uuid.uuid4(), related="world") is None


def test_a_row_read_with_two_parents_equals_select_related_in_one_statement(session):
    expected = Session.objects.select_related("world", "owner").get(pk=session.pk)
    with CaptureQueriesContext(connection) as queries:
        found = read_by_pk_related(Session, session.pk, related=("world", "owner"))
        world, owner = found.world, found.owner
    assert len(queries) == 1
    assert concrete_values(found) == concrete_values(expected)
    assert concrete_values(world) == concrete_values(expected.world)
    assert concrete_values(owner) == concrete_values(expected.owner)


def test_a_missing_row_reads_as_none_and_a_where_reads_every_match(session, alice):
    assert read_by_pk(Session, uuid.uuid4()) is None
    second = session_create(owner=alice, world=session.world)
    sessions = Table(Session)
    found = read(
        Session, f"{sessions.col('owner')} = %s ORDER BY {sessions.col('created_at')}", [alice.pk]
    )
    assert [s.pk for s in found] == [session.pk, second.pk]


def test_fields_limit_the_columns_and_the_rest_load_on_access(session):
    with CaptureQueriesContext(connection) as queries:
        found = read_by_pk(Session, session.pk, fields=("phase", "turn_count"))
    assert len(queries) == 1
    assert '"seats"' not in queries[0]["sql"] and '"turn_count"' in queries[0]["sql"]
    assert found.turn_count == 4 and found.pk == session.pk
    assert "seats" in found.get_deferred_fields()
    with CaptureQueriesContext(connection) as queries:
        assert found.seats == Session.objects.get(pk=session.pk).seats
    assert len(queries) == 2  # the deferred load, and the comparison's own read


def test_insert_writes_what_save_would_and_takes_the_database_made_key(session):
    now = timezone.now()
    job = RuntimeJob(
        session_id=session.pk,
        plugin_id="lantern",
        runtime_id="lantern/glow",
        inputs={"inputs": {"mood": "calm"}, "playerMessage": "hello"},
        created_at=now,
        updated_at=now,
        sent_at=now,
        max_execution_ms=5000,
    )
    with CaptureQueriesContext(connection) as queries:
        insert(job)
    assert len(queries) == 1 and queries[0]["sql"].startswith("INSERT INTO")
    assert isinstance(job.pk, int) and not job._state.adding
    assert concrete_values(RuntimeJob.objects.get(pk=job.pk)) == concrete_values(job)
    # A later save() updates the row it inserted, never a second one.
    job.error = "changed"
    job.save()
    assert RuntimeJob.objects.filter(session=session).count() == 1
    assert RuntimeJob.objects.get(pk=job.pk).error == "changed"


def test_insert_fills_defaults_and_auto_now_add_like_save(session):
    source = Turn.objects.create(session=session, number=1, player_message="first")
    turn = Turn(session=session, number=1, kind=Turn.Kind.BACKGROUND, source_turn=source)
    before = timezone.now()
    insert(turn)
    stored = Turn.objects.get(pk=turn.pk)
    assert stored.created_at >= before - timedelta(seconds=1)
    assert stored.created_at == turn.created_at
    assert (stored.status, stored.results, stored.commit) == (Turn.Status.RUNNING, [], {})
    assert stored.source_turn_id == source.pk


def test_insert_refuses_a_duplicate_key_like_the_orm(session):
    from django.db import IntegrityError, transaction

    turn = Turn.objects.create(session=session, number=1)
    with pytest.raises(IntegrityError), transaction.atomic():
        insert(Turn(id=turn.id, session=session, number=2))
    assert Turn.objects.filter(session=session).count() == 1


def test_insert_ignoring_conflicts_says_whether_it_wrote(session):
    from sessions.models import PluginData

    first = PluginData(session=session, plugin_id="p", namespace="n", key="k", value={"a": 1})
    assert insert(first, ignore_conflicts=True) is True
    assert first.pk is not None  # the database's key, read back as save() does
    second = PluginData(session=session, plugin_id="p", namespace="n", key="k", value={"b": 2})
    assert insert(second, ignore_conflicts=True) is False  # the unique key holds a row
    assert second.pk is None
    assert PluginData.objects.get(session=session).value == {"a": 1}


def test_update_returning_gives_the_row_as_updated_or_none(session):
    from core.sql import update_returning

    table = Table(Session)
    col = table.col
    where = f"{col('id')} = %s AND {col('lock_token')} = ''"
    row = update_returning(
        Session, f"{col('lock_token')} = %s", where, ["abc", table.value("id", session.pk)]
    )
    assert row is not None and row.lock_token == "abc"
    assert concrete_values(row) == concrete_values(Session.objects.get(pk=session.pk))
    again = update_returning(
        Session, f"{col('lock_token')} = %s", where, ["def", table.value("id", session.pk)]
    )
    assert again is None  # the condition no longer holds: nothing updated, nothing returned
    assert Session.objects.get(pk=session.pk).lock_token == "abc"


def test_update_writes_every_column_as_save_would_and_tells_a_missing_row(session):
    turn = Turn(session=session, number=5, player_message="I knock.")
    insert(turn)
    turn.status, turn.narrative_text = Turn.Status.COMMITTED, "The door opens."
    turn.results, turn.finished_at = [{"runtime": "a/b", "status": "ok"}], timezone.now()
    with CaptureQueriesContext(connection) as queries:
        assert update(turn) is True
    assert len(queries) == 1 and queries[0]["sql"].startswith("UPDATE")
    assert concrete_values(Turn.objects.get(pk=turn.pk)) == concrete_values(turn)
    assert Turn.objects.filter(session=session).count() == 1

    gone = Turn(session=session, number=6)
    gone._state.adding = False  # as if read, then deleted by someone else
    assert update(gone) is False
    assert not Turn.objects.filter(pk=gone.pk).exists()


def test_a_row_read_by_a_where_comes_with_its_parent(session, alice):
    from accounts.models import ApiToken

    ApiToken.objects.create(user=alice, name="script", prefix="covel_ab", digest="d" * 64)
    tokens = Table(ApiToken, alias="t")
    found = read_one_related(ApiToken, f"{tokens.col('digest')} = %s", ["d" * 64], related="user")
    assert found.name == "script" and found.user.username == alice.username
    assert (
        read_one_related(ApiToken, f"{tokens.col('digest')} = %s", ["e" * 64], related="user")
        is None
    )
