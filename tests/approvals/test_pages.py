"""The staff page /approvals/ and the package panel, with every persona."""

from __future__ import annotations

import pytest
from django.template import Context, Template
from django.test import Client, RequestFactory

from approvals.selectors import approval_current, package_is_usable
from approvals.services import approval_decide

pytestmark = pytest.mark.django_db

ENTRY = "export default function register(covel) {}\n"
EVIL = "<img src=x onerror=alert(1)>"


def logged_in(user, *, csrf: bool = False) -> Client:
    client = Client(enforce_csrf_checks=csrf)
    client.force_login(user)
    return client


def page_urls(request_id: int) -> list[str]:
    return ["/approvals/", "/approvals/?state=pending", f"/approvals/{request_id}/"]


def test_anonymous_visitors_are_sent_to_log_in(weather):
    request = approval_current(package_key="weather")
    for url in page_urls(request.pk):
        response = Client().get(url)
        assert response.status_code == 302 and response["Location"].startswith(
            "/accounts/login/?next="
        ), url
    response = Client().post(f"/approvals/{request.pk}/decision", {"decision": "allow"})
    assert response.status_code == 302 and response["Location"].startswith("/accounts/login/")
    assert approval_current(package_key="weather").state == "pending"


def test_players_get_403(weather, alice):
    request = approval_current(package_key="weather")
    client = logged_in(alice)
    for url in page_urls(request.pk):
        assert client.get(url).status_code == 403, url
    assert (
        client.post(f"/approvals/{request.pk}/decision", {"decision": "allow"}).status_code == 403
    )
    assert approval_current(package_key="weather").state == "pending"


def test_staff_see_pending_first_with_the_diff_and_buttons(synced, bob):
    synced("aaa-old", manifest={"permissions": {"http": [{"origin": "https://old.example"}]}})
    approval_decide(
        request_id=approval_current(package_key="aaa-old").pk, decision="allow", actor=bob
    )
    synced(
        "weather",
        manifest={"permissions": {"http": [{"origin": "https://api.weather.example"}]}},
        files={"server/index.js": ENTRY},
    )
    approval_decide(
        request_id=approval_current(package_key="weather").pk, decision="allow", actor=bob
    )
    synced(
        "weather",
        manifest={
            "version": "2.0.0",
            "permissions": {
                "http": [{"origin": "https://api.weather.example", "methods": ["GET", "POST"]}]
            },
        },
        files={"server/index.js": ENTRY},
    )
    html = logged_in(bob).get("/approvals/").content.decode()
    pending_at, history_at = html.index('id="pending-title"'), html.index('id="history-title"')
    new = approval_current(package_key="weather")
    assert pending_at < html.index(f'id="request-{new.pk}"') < history_at
    assert html.index(f'id="request-{approval_current(package_key="aaa-old").pk}"') > history_at
    card = html[html.index(f'id="request-{new.pk}"') : history_at]
    assert "GET, POST" in card and "(needs approval)" in card  # the side-by-side diff
    assert 'value="allow"' in card and 'value="deny"' in card and "csrfmiddlewaretoken" in card
    assert 'value="revoke"' in html[history_at:]


def test_staff_approve_then_revoke_through_the_page(weather, bob):
    request = approval_current(package_key="weather")
    client = logged_in(bob)
    response = client.post(
        f"/approvals/{request.pk}/decision", {"decision": "allow", "note": "ok"}, follow=True
    )
    assert response.redirect_chain[-1][0] == "/approvals/"
    assert "approved" in response.content.decode()
    assert package_is_usable(package_id="weather")
    client.post(f"/approvals/{request.pk}/decision", {"decision": "revoke", "note": "no"})
    assert not package_is_usable(package_id="weather")


def test_the_decision_form_needs_the_csrf_token(weather, bob):
    request = approval_current(package_key="weather")
    client = logged_in(bob, csrf=True)
    assert (
        client.post(f"/approvals/{request.pk}/decision", {"decision": "allow"}).status_code == 403
    )
    page = client.get("/approvals/")
    token = page.context["csrf_token"]
    response = client.post(
        f"/approvals/{request.pk}/decision", {"decision": "deny", "csrfmiddlewaretoken": token}
    )
    assert response.status_code == 302
    assert approval_current(package_key="weather").state == "denied"


def test_a_stale_decision_on_the_page_answers_409(synced, weather, bob):
    old = approval_current(package_key="weather")
    synced(
        "weather",
        manifest={"version": "3.0.0", "permissions": {"http": [{"origin": "https://x.example"}]}},
    )
    response = logged_in(bob).post(f"/approvals/{old.pk}/decision", {"decision": "allow"})
    assert response.status_code == 409
    assert 'data-code="approval_scope_changed"' in response.content.decode()
    assert not package_is_usable(package_id="weather")


def test_plugin_text_is_escaped(synced, bob):
    synced(
        "sneaky",
        manifest={"permissions": {"http": [{"origin": f"https://{EVIL}"}]}},
        files={f"tools/{EVIL}.js": "x"},
    )
    html = logged_in(bob).get("/approvals/").content.decode()
    assert EVIL not in html
    assert "&lt;img src=x onerror=alert(1)&gt;" in html


def render_panel(package, user) -> str:
    request = RequestFactory().get("/plugins/x/")
    request.user = user
    return Template("{% load approvals_tags %}{% approval_panel package %}").render(
        Context({"package": package, "request": request})
    )


def test_the_package_panel_shows_state_asks_diff_and_journal(synced, weather, bob, alice):
    approval_decide(
        request_id=approval_current(package_key="weather").pk,
        decision="allow",
        actor=bob,
        note=EVIL,
    )
    package = synced(
        "weather",
        manifest={
            "version": "1.1.0",
            "permissions": {
                "http": [
                    {"origin": "https://api.weather.example"},
                    {"origin": "https://new.example"},
                ]
            },
        },
        files={"server/index.js": "export default function register(covel) { /* forecast */ }\n"},
    )
    html = render_panel(package, alice)
    assert "Not usable" in html and "waits for a staff member" in html
    assert "may send GET requests to https://new.example" in html
    assert "https://new.example" in html and "(needs approval)" in html
    assert "requested" in html and "approved" in html and "bob" in html
    assert EVIL not in html and "&lt;img" in html
    assert 'value="allow"' not in html  # players see no buttons
    assert 'value="allow"' in render_panel(package, bob)


def test_the_panel_of_a_bundled_or_plain_package(packages, synced, alice):
    bundled = packages.write("dice", files={"server/index.js": "x"}, trust="bundled")
    assert "Bundled with Covel Hub" in render_panel(bundled, alice)
    plain = synced("plain")
    assert "needs no approval" in render_panel(plain, alice)


def test_the_queue_costs_the_same_queries_for_few_or_many_requests(
    synced, bob, django_assert_num_queries
):
    client = logged_in(bob)

    def make(n: int, start: int) -> None:
        for i in range(start, start + n):
            synced(
                f"pkg-{i}",
                manifest={"permissions": {"http": [{"origin": f"https://h{i}.example"}]}},
            )

    make(2, 0)
    client.get("/approvals/")  # warm the session
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    with CaptureQueriesContext(connection) as few:
        assert client.get("/approvals/").status_code == 200
        assert client.get("/api/approvals").status_code == 200
    make(8, 2)
    with django_assert_num_queries(len(few.captured_queries)):
        assert client.get("/approvals/").status_code == 200
        assert client.get("/api/approvals").status_code == 200


def test_a_decision_returns_to_the_page_it_came_from_but_never_off_site(weather, bob):
    request = approval_current(package_key="weather")
    client = logged_in(bob)
    evil = client.post(
        f"/approvals/{request.pk}/decision", {"decision": "deny", "next": "https://evil.example/"}
    )
    assert evil["Location"] == "/approvals/"
    back = client.post(
        f"/approvals/{request.pk}/decision", {"decision": "allow", "next": "/packages/weather/"}
    )
    assert back["Location"] == "/packages/weather/"


def test_an_unknown_request_is_404_for_staff(bob):
    client = logged_in(bob)
    assert client.get("/approvals/999999/").status_code == 404
    assert client.post("/approvals/999999/decision", {"decision": "allow"}).status_code == 404
