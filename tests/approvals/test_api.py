"""The approvals API with every persona: bob (staff) decides, alice (player) and the anonymous
visitor are refused on every endpoint."""

from __future__ import annotations

import json

import pytest
from django.test import Client

from approvals.models import ApprovalRequest, JournalEntry
from approvals.selectors import approval_current, package_is_usable
from approvals.services import approval_request_sync
from catalogue.models import Package

pytestmark = pytest.mark.django_db

ENTRY = "export default function register(covel) {}\n"
# The weather fixture's entry module, byte for byte.
WEATHER_ENTRY = "export default function register(covel) { /* forecast */ }\n"


def client_for(user=None, *, csrf: bool = False) -> Client:
    client = Client(enforce_csrf_checks=csrf)
    if user is not None:
        client.force_login(user)
    return client


def decide(client: Client, request_id: int, decision: str, note: str = ""):
    return client.post(
        f"/api/approvals/{request_id}/decision",
        data=json.dumps({"decision": decision, "note": note}),
        content_type="application/json",
    )


def endpoints(request_id: int):
    return [
        ("get", "/api/approvals", None),
        ("get", f"/api/approvals/{request_id}", None),
        ("post", f"/api/approvals/{request_id}/decision", {"decision": "allow", "note": ""}),
    ]


def call(client: Client, method: str, url: str, body):
    if method == "get":
        return client.get(url)
    return client.post(url, data=json.dumps(body), content_type="application/json")


def test_anonymous_gets_401_on_every_endpoint(weather):
    request = approval_current(package_key="weather")
    for method, url, body in endpoints(request.pk):
        response = call(client_for(), method, url, body)
        assert response.status_code == 401, url
    assert approval_current(package_key="weather").state == "pending"


def test_a_player_gets_403_on_every_endpoint(weather, alice):
    request = approval_current(package_key="weather")
    for method, url, body in endpoints(request.pk):
        response = call(client_for(alice), method, url, body)
        assert response.status_code == 403, url
        assert response.json()["code"] == "staff_only"
    assert approval_current(package_key="weather").state == "pending"
    assert not JournalEntry.objects.filter(actor=alice).exists()


def test_staff_lists_pending_first_and_filters_by_state(synced, weather, bob):
    synced("maps", manifest={"permissions": {"http": [{"origin": "https://tiles.example"}]}})
    from approvals.services import approval_decide

    approval_decide(
        request_id=approval_current(package_key="weather").pk, decision="allow", actor=bob
    )
    client = client_for(bob)
    body = client.get("/api/approvals").json()
    assert body["count"] == 2
    assert [(i["package_id"], i["state"]) for i in body["items"]] == [
        ("maps", "pending"),
        ("weather", "approved"),
    ]
    pending = client.get("/api/approvals?state=pending").json()
    assert [i["package_id"] for i in pending["items"]] == ["maps"]
    assert pending["items"][0]["asks"] == [
        "The entry module and every runtime may send GET requests to https://tiles.example."
    ]
    assert client.get("/api/approvals?state=approved").json()["items"][0]["decided_by"] == "bob"
    assert client.get("/api/approvals?state=bogus").status_code == 422
    assert (
        client.get("/api/approvals?limit=1&offset=1").json()["items"][0]["package_id"] == "weather"
    )


def test_staff_reads_one_request_with_its_journal(weather, bob):
    request = approval_current(package_key="weather")
    body = client_for(bob).get(f"/api/approvals/{request.pk}").json()
    assert body["id"] == request.pk and body["state"] == "pending" and body["is_current"]
    assert body["permissions"] == request.permissions
    assert [e["action"] for e in body["journal"]] == ["requested"]
    assert client_for(bob).get("/api/approvals/999999").status_code == 404


def test_staff_approves_denies_and_revokes(synced, weather, bob):
    client = client_for(bob)
    request = approval_current(package_key="weather")
    response = decide(client, request.pk, "allow", "reviewed the entry")
    assert response.status_code == 200, response.content
    assert (
        response.json()["state"] == "approved" and response.json()["note"] == "reviewed the entry"
    )
    assert package_is_usable(package_id="weather")
    # Deny applies to pending requests only: an approved one is revoked instead.
    refused = decide(client, request.pk, "deny")
    assert refused.status_code == 409 and refused.json()["code"] == "approval_state_conflict"
    assert decide(client, request.pk, "revoke", "abuse report").json()["state"] == "revoked"
    assert not package_is_usable(package_id="weather")
    assert [e["action"] for e in client.get(f"/api/approvals/{request.pk}").json()["journal"]] == [
        "requested",
        "approved",
        "revoked",
    ]
    synced("maps", manifest={"permissions": {"http": [{"origin": "https://tiles.example"}]}})
    maps = approval_current(package_key="maps")
    assert decide(client, maps.pk, "deny", "why tiles?").json()["state"] == "denied"
    assert not package_is_usable(package_id="maps")


def test_an_unknown_decision_is_rejected(weather, bob):
    request = approval_current(package_key="weather")
    response = decide(client_for(bob), request.pk, "maybe")
    assert response.status_code == 422
    assert approval_current(package_key="weather").state == "pending"


def test_deciding_on_a_stale_request_answers_409(synced, weather, bob):
    old = approval_current(package_key="weather")
    synced(
        "weather",
        manifest={
            "version": "1.1.0",
            "permissions": {
                "http": [{"origin": "https://api.weather.example", "methods": ["POST"]}]
            },
        },
        files={"server/index.js": ENTRY},
    )
    response = decide(client_for(bob), old.pk, "allow")
    assert response.status_code == 409
    assert response.json()["code"] == "approval_scope_changed"
    assert "changed" in response.json()["detail"]
    assert ApprovalRequest.objects.get(pk=old.pk).state == "superseded"
    assert not package_is_usable(package_id="weather")


def test_a_package_changed_before_its_sync_reached_approvals_is_stale_too(weather, bob):
    request = approval_current(package_key="weather")
    # The catalogue saved the new files but approval_request_sync has not run yet.
    Package.objects.filter(package_id="weather").update(content_hash="e" * 64)
    response = decide(client_for(bob), request.pk, "allow")
    assert response.status_code == 409 and response.json()["code"] == "approval_scope_changed"
    approval_request_sync(package=Package.objects.get(package_id="weather"))
    assert decide(client_for(bob), request.pk, "allow").status_code == 200


def test_session_auth_needs_the_csrf_token(weather, bob):
    request = approval_current(package_key="weather")
    client = client_for(bob, csrf=True)
    response = decide(client, request.pk, "allow")
    assert response.status_code == 403
    assert approval_current(package_key="weather").state == "pending"
    client.get("/approvals/")  # the page sets the csrftoken cookie
    token = client.cookies["csrftoken"].value
    ok = client.post(
        f"/api/approvals/{request.pk}/decision",
        data=json.dumps({"decision": "allow", "note": ""}),
        content_type="application/json",
        headers={"X-CSRFToken": token},
    )
    assert ok.status_code == 200


def test_only_the_newest_request_can_be_decided(synced, weather, bob):
    first = approval_current(package_key="weather")
    client = client_for(bob)
    assert decide(client, first.pk, "allow").status_code == 200
    synced(
        "weather",
        manifest={
            "version": "1.0.1",
            "permissions": {"http": [{"origin": "https://api.weather.example"}]},
        },
        files={"server/index.js": WEATHER_ENTRY},  # unchanged code
    )
    carried = approval_current(package_key="weather")
    assert carried.pk != first.pk and carried.state == "approved"
    stale = decide(client, first.pk, "revoke")
    assert stale.status_code == 409 and stale.json()["code"] == "approval_scope_changed"
    assert client.get(f"/api/approvals/{first.pk}").json()["is_current"] is False
    assert decide(client, carried.pk, "revoke").json()["state"] == "revoked"
    assert not package_is_usable(package_id="weather")
