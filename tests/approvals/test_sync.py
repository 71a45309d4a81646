"""approval_request_sync: none needed, pending, carry-over, widening, revoke, supersede.

bob is staff and decides; the packages are community packages written to tmp_path.
"""

from __future__ import annotations

import pytest

from approvals.models import ApprovalRequest, JournalEntry, PermissionScope
from approvals.selectors import approval_current, package_is_usable
from approvals.services import approval_decide, approval_request_sync

pytestmark = pytest.mark.django_db

ENTRY = "export default function register(covel) { /* forecast */ }\n"
GRANT = {"origin": "https://api.weather.example"}


def weather_v(synced, version: str, *, grants=None, files=None, runtimes=None):
    return synced(
        "weather",
        manifest={
            "version": version,
            "permissions": {"http": grants if grants is not None else [GRANT]},
        },
        files=files if files is not None else {"server/index.js": ENTRY},
        runtimes=runtimes,
    )


def approve(request: ApprovalRequest, user, note: str = "") -> ApprovalRequest:
    return approval_decide(request_id=request.pk, decision="allow", actor=user, note=note)


def test_it_creates_no_request_for_a_package_without_code_or_http(synced):
    synced("plain", manifest={"runtime": {"schedule": {"stage": "narrative"}}})
    assert not ApprovalRequest.objects.exists()
    assert PermissionScope.objects.get(package_key="plain").request is None
    assert package_is_usable(package_id="plain")


def test_it_ignores_bundled_packages(packages):
    package = packages.write("dice", files={"server/index.js": ENTRY}, trust="bundled")
    approval_request_sync(package=package)
    assert not ApprovalRequest.objects.exists()
    assert package_is_usable(package_id="dice")


def test_a_new_package_waits_for_approval_with_its_exact_set(synced):
    package = weather_v(synced, "1.0.0")
    request = approval_current(package_key="weather")
    assert request.state == "pending" and request.version == "1.0.0"
    assert request.baseline is None and request.baseline_permissions is None
    assert request.content_hash == package.content_hash
    assert [item["path"] for item in request.permissions["code"]] == ["server/index.js"]
    assert request.permissions["http"] == [
        {"runtime": None, "origin": "https://api.weather.example", "methods": ["GET"]}
    ]
    entry = JournalEntry.objects.get(request=request)
    assert (entry.action, entry.actor, entry.permissions) == (
        "requested",
        None,
        request.permissions,
    )


def test_sync_is_idempotent_for_an_unchanged_package(synced):
    package = weather_v(synced, "1.0.0")
    approval_request_sync(package=package)
    approval_request_sync(package=package)
    assert ApprovalRequest.objects.count() == 1
    assert JournalEntry.objects.count() == 1


def test_same_set_in_a_new_version_is_carried_over(synced, bob):
    weather_v(synced, "1.0.0")
    approve(approval_current(package_key="weather"), bob)
    weather_v(synced, "1.1.0")
    current = approval_current(package_key="weather")
    assert current.version == "1.1.0" and current.state == "approved"
    assert current.decided_by is None
    entry = current.journal.get()
    assert entry.action == "carried over" and "1.0.0" in entry.note
    assert package_is_usable(package_id="weather")


def test_narrower_set_is_carried_over(synced, bob):
    weather_v(
        synced,
        "1.0.0",
        grants=[{"origin": "https://api.weather.example", "methods": ["GET", "POST"]}],
    )
    approve(approval_current(package_key="weather"), bob)
    weather_v(synced, "1.1.0", grants=[])  # no HTTP at all now, same entry
    assert approval_current(package_key="weather").state == "approved"
    assert package_is_usable(package_id="weather")


@pytest.mark.parametrize(
    "change",
    [
        pytest.param({"grants": [GRANT, {"origin": "https://evil.example"}]}, id="new-origin"),
        pytest.param({"grants": [{**GRANT, "methods": ["GET", "POST"]}]}, id="new-method"),
        pytest.param(
            {"files": {"server/index.js": ENTRY, "tools/steal.js": "x"}}, id="new-code-file"
        ),
        pytest.param({"files": {"server/index.js": ENTRY + "// changed\n"}}, id="changed-code"),
        pytest.param(
            {
                "runtimes": {
                    "fetch": {
                        "function": {},
                        "permissions": {"http": [{"origin": "https://other.example"}]},
                    }
                },
                "files": {"server/index.js": ENTRY},
            },
            id="new-runtime-grant",
        ),
    ],
)
def test_a_wider_set_goes_back_to_pending_with_the_diff(synced, bob, change):
    weather_v(synced, "1.0.0")
    approved = approve(approval_current(package_key="weather"), bob)
    weather_v(synced, "2.0.0", **change)
    current = approval_current(package_key="weather")
    assert current.state == "pending" and current.version == "2.0.0"
    assert current.baseline == approved
    assert current.baseline_permissions == approved.permissions
    assert not package_is_usable(package_id="weather")
    # The old approval stays in the history as it was.
    approved.refresh_from_db()
    assert approved.state == "approved"


def test_a_revoked_package_never_carries_over(synced, bob):
    weather_v(synced, "1.0.0")
    request = approve(approval_current(package_key="weather"), bob)
    approval_decide(request_id=request.pk, decision="revoke", actor=bob, note="leaks data")
    assert not package_is_usable(package_id="weather")
    weather_v(synced, "1.0.1")  # same set
    current = approval_current(package_key="weather")
    assert current.state == "pending" and current.baseline is None
    assert not package_is_usable(package_id="weather")


def test_a_new_version_supersedes_a_pending_request(synced):
    weather_v(synced, "1.0.0")
    first = approval_current(package_key="weather")
    weather_v(synced, "1.0.1", grants=[{**GRANT, "methods": ["POST"]}])
    first.refresh_from_db()
    assert first.state == "superseded"
    assert first.journal.last().action == "superseded"
    assert approval_current(package_key="weather").state == "pending"


def test_a_package_that_drops_all_code_needs_no_approval(synced):
    weather_v(synced, "1.0.0")
    weather_v(synced, "2.0.0", grants=[], files={})
    assert approval_current(package_key="weather").state == "superseded"
    assert package_is_usable(package_id="weather")


def test_a_prompt_edit_keeps_the_request_and_its_verdict(synced, bob):
    weather_v(synced, "1.0.0")
    request = approve(approval_current(package_key="weather"), bob)
    package = weather_v(synced, "1.0.0", files={"server/index.js": ENTRY, "README.md": "new words"})
    request.refresh_from_db()
    assert approval_current(package_key="weather") == request
    assert request.content_hash == package.content_hash
    assert package_is_usable(package_id="weather")
