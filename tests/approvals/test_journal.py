"""The journal is append-only: no path updates or deletes an entry."""

from __future__ import annotations

import pytest

from approvals.models import ApprovalRequest, JournalEntry, JournalImmutable
from approvals.selectors import approval_current
from approvals.services import approval_decide

pytestmark = pytest.mark.django_db


def test_entries_cannot_be_changed_or_removed(weather):
    entry = JournalEntry.objects.get()
    entry.note = "rewritten history"
    with pytest.raises(JournalImmutable):
        entry.save()
    with pytest.raises(JournalImmutable):
        entry.delete()
    with pytest.raises(JournalImmutable):
        JournalEntry.objects.filter(pk=entry.pk).update(note="x")
    with pytest.raises(JournalImmutable):
        JournalEntry.objects.all().delete()
    assert JournalEntry.objects.get().note == ""


def test_a_request_with_a_journal_cannot_be_deleted(weather):
    from django.db.models import ProtectedError

    with pytest.raises(ProtectedError):
        ApprovalRequest.objects.get().delete()


def test_each_decision_records_who_when_what_and_the_exact_set(weather, bob):
    request = approval_current(package_key="weather")
    approval_decide(request_id=request.pk, decision="allow", actor=bob, note="  looks fine ")
    approval_decide(request_id=request.pk, decision="revoke", actor=bob, note="")
    entries = list(JournalEntry.objects.filter(request=request))
    assert [e.action for e in entries] == ["requested", "approved", "revoked"]
    assert [e.actor_name for e in entries] == ["Covel Hub (sync)", "bob", "bob"]
    assert entries[1].note == "looks fine"
    assert all(e.permissions == request.permissions for e in entries)
    assert entries[0].created_at <= entries[1].created_at <= entries[2].created_at


def test_the_database_refuses_to_update_a_journal_row_behind_the_orm(weather):
    from django.db import DatabaseError, connection, transaction

    entry = JournalEntry.objects.get()
    with pytest.raises(DatabaseError, match="append-only"), transaction.atomic():
        with connection.cursor() as cursor:
            cursor.execute(
                "UPDATE approvals_journalentry SET note = %s WHERE id = %s", ["forged", entry.pk]
            )
    assert JournalEntry.objects.get().note == ""
