"""approval_requests_sync (a first sync's batch) records exactly what approval_request_sync
records one package at a time, in a fixed number of queries for the packages approvals has
never seen; packages it knows go through the single call (carry-over, supersede).

bob is staff; the packages are community packages written to tmp_path.
"""

from __future__ import annotations

import pytest
from django.core import mail
from django.db import connection
from django.test.utils import CaptureQueriesContext

from approvals.models import ApprovalRequest, JournalEntry, PermissionScope
from approvals.selectors import approval_current
from approvals.services import approval_decide, approval_request_sync, approval_requests_sync

pytestmark = pytest.mark.django_db

ENTRY = "export default function register(covel) { /* forecast */ }\n"
GRANT = {"origin": "https://api.weather.example"}


def write_all(packages, prefix: str, count: int = 6) -> list:
    """Packages of three kinds: code and HTTP, code only, and nothing to approve."""
    written = []
    for n in range(count):
        kind = n % 3
        written.append(
            packages.write(
                f"{prefix}{n}",
                manifest={"permissions": {"http": [GRANT]}} if kind == 0 else {},
                files={"server/index.js": ENTRY} if kind < 2 else {},
            )
        )
    return written


def recorded(prefix: str) -> list:
    """What approvals holds for the packages named prefix*, with the prefix taken out and no ids."""

    def key(value: str) -> str:
        return value.removeprefix(prefix)

    requests = [
        (key(r.package_key), r.version, r.state, r.baseline_id, r.baseline_permissions)
        + (r.decided_at, r.note, r.permissions_hash)
        for r in ApprovalRequest.objects.filter(package_key__startswith=prefix).order_by("id")
    ]
    journal = [
        (key(e.package_key), e.version, e.action, e.actor_id, e.actor_name, e.note)
        + (e.permissions_hash,)
        for e in JournalEntry.objects.filter(package_key__startswith=prefix).order_by("id")
    ]
    scopes = [
        (key(s.package_key), s.version, s.permissions_hash, s.request is not None)
        + (s.request.state if s.request else None,)
        for s in PermissionScope.objects.filter(package_key__startswith=prefix).order_by(
            "package_key"
        )
    ]
    return [requests, journal, scopes]


def test_a_batch_records_what_one_at_a_time_records(packages):
    for package in write_all(packages, "one-"):
        approval_request_sync(package=package)
    approval_requests_sync(packages=write_all(packages, "all-"))
    alone = recorded("one-")
    assert len(alone[0]) == 4 and len(alone[2]) == 6  # two of six ask for nothing
    assert recorded("all-") == alone
    # The permission sets themselves are the same too (the paths and hashes of the files).
    for request in ApprovalRequest.objects.filter(package_key__startswith="all-"):
        twin = ApprovalRequest.objects.get(package_key=request.package_key.replace("all-", "one-"))
        assert request.permissions["code"] == twin.permissions["code"]
        assert request.content_hash and request.package_id is not None


def test_a_batch_costs_the_same_queries_for_few_or_many(packages):
    few, many = write_all(packages, "few-", 3), write_all(packages, "many-", 30)
    with CaptureQueriesContext(connection) as small:
        approval_requests_sync(packages=few)
    with CaptureQueriesContext(connection) as large:
        approval_requests_sync(packages=many)
    assert len(large) == len(small) <= 8
    assert PermissionScope.objects.filter(package_key__startswith="many-").count() == 30


def test_packages_approvals_knows_take_the_single_call(packages, bob):
    weather = packages.write(
        "weather", manifest={"permissions": {"http": [GRANT]}}, files={"server/index.js": ENTRY}
    )
    approval_request_sync(package=weather)
    approval_decide(
        request_id=approval_current(package_key="weather").pk, decision="allow", actor=bob
    )
    newer = packages.write(
        "weather",
        manifest={"version": "1.1.0", "permissions": {"http": [GRANT]}},
        files={"server/index.js": ENTRY},
    )
    fresh = packages.write("notes", files={"server/index.js": ENTRY})
    approval_requests_sync(packages=[newer, fresh])
    # The same set in a new version is carried over, as approval_request_sync decides.
    assert approval_current(package_key="weather").state == "approved"
    assert approval_current(package_key="weather").version == "1.1.0"
    assert approval_current(package_key="notes").state == "pending"


def test_staff_hear_of_each_new_request_after_the_batch_commits(
    packages, bob, settings, django_capture_on_commit_callbacks
):
    settings.EMAIL_BACKEND = "django.core.mail.backends.locmem.EmailBackend"
    bob.email = "bob@example.com"
    bob.save()
    with django_capture_on_commit_callbacks(execute=True):
        approval_requests_sync(packages=write_all(packages, "mail-", 3))
    # Two of three wait for staff (one asks for nothing): one mail each.
    assert sorted(m.subject for m in mail.outbox) == [
        "[Covel Hub] mail-0 1.0.0 waits for approval",
        "[Covel Hub] mail-1 1.0.0 waits for approval",
    ]
