"""API tokens, anonymous writes, turn throttling and sign-in limits.

Alice makes a token and uses it without a cookie or CSRF token; once revoked it stops
working. The anonymous visitor gets 401 (not a CSRF error) on a write. Alice's turns beyond
her rate get 429 with Retry-After. Failed sign-ins lock an (account, address) pair and an
address, never an account alone: a stranger cannot lock Alice out."""

from __future__ import annotations

import json

import pytest
from django.core.cache import cache
from django.test import Client

from accounts.models import ApiToken
from accounts.services import token_create

ERROR_SHAPE = {"code", "message", "details", "detail"}  # docs/api.md


@pytest.fixture(autouse=True)
def empty_cache():
    cache.clear()
    yield
    cache.clear()


def bearer(raw: str) -> dict[str, str]:
    return {"HTTP_AUTHORIZATION": f"Bearer {raw}"}


def test_a_token_is_shown_once_stored_hashed_and_revocable(db, alice):
    client = Client()
    client.force_login(alice)
    page = client.post("/accounts/tokens/", {"name": "my script"})
    assert page.status_code == 200 and page["Cache-Control"] == "no-store"
    row = ApiToken.objects.get(user=alice)
    raw = page.content.decode().split('<code class="token-value">')[1].split("</code>")[0]
    assert raw.startswith("covel_") and len(raw) > 40
    assert raw not in json.dumps(list(ApiToken.objects.values()), default=str)  # only a hash
    assert raw not in client.get("/accounts/tokens/").content.decode()  # shown once

    api = Client(enforce_csrf_checks=True)
    assert api.get("/api/sessions", **bearer(raw)).status_code == 200
    client.post(f"/accounts/tokens/{row.pk}/revoke/")
    refused = api.get("/api/sessions", **bearer(raw))
    assert refused.status_code == 401 and set(refused.json()) == ERROR_SHAPE


def test_an_empty_token_name_is_refused_naming_the_field(db, alice):
    client = Client()
    client.force_login(alice)
    page = client.post("/accounts/tokens/", {"name": "  "})
    assert page.status_code == 400 and "name:" in page.content.decode()
    assert not ApiToken.objects.exists()


def test_charlie_cannot_revoke_alices_token(db, alice, charlie):
    token, _raw = token_create(user=alice, name="hers")
    client = Client()
    client.force_login(charlie)
    assert client.post(f"/accounts/tokens/{token.pk}/revoke/").status_code == 404
    token.refresh_from_db()
    assert token.revoked_at is None


def test_a_token_write_needs_no_csrf_and_an_anonymous_write_gets_401(db, alice):
    _token, raw = token_create(user=alice, name="cli")
    api = Client(enforce_csrf_checks=True)
    anonymous = api.post("/api/sessions", "{}", content_type="application/json")
    assert anonymous.status_code == 401
    assert set(anonymous.json()) == ERROR_SHAPE and anonymous.json()["code"] == "not_authenticated"
    signed_in = Client(enforce_csrf_checks=True)
    signed_in.force_login(alice)
    # A cookie write without the CSRF token is still refused.
    assert signed_in.post("/api/sessions", "{}", content_type="application/json").status_code == 403
    with_token = api.post("/api/sessions", "{}", content_type="application/json", **bearer(raw))
    assert with_token.status_code not in (401, 403)  # past auth: the body's problems, if any
    wrong = api.get("/api/sessions", **bearer("covel_not-a-real-token"))
    assert wrong.status_code == 401 and wrong["WWW-Authenticate"].startswith("Bearer")


def test_turns_beyond_the_rate_get_429_with_retry_after(db, alice, settings):
    settings.COVEL_TURN_RATE = "2/m"
    _token, raw = token_create(user=alice, name="bot")
    api = Client()
    url = "/api/sessions/00000000-0000-0000-0000-000000000000/actions"
    answers = [
        api.post(url, '{"message": "hi"}', content_type="application/json", **bearer(raw))
        for _ in range(3)
    ]
    assert [a.status_code for a in answers[:2]] == [404, 404]  # counted, then refused on merit
    limited = answers[2]
    assert limited.status_code == 429
    assert set(limited.json()) == ERROR_SHAPE and limited.json()["code"] == "throttled"
    assert 1 <= int(limited["Retry-After"]) <= 60


def sign_in(client: Client, username: str, password: str):
    return client.post("/accounts/login/", {"username": username, "password": password})


def test_failed_sign_ins_lock_the_pair_then_the_address(db, alice, charlie, settings):
    settings.COVEL_LOGIN_FAILURES_PER_ACCOUNT_ADDRESS = 3
    settings.COVEL_LOGIN_FAILURES_PER_ADDRESS = 5
    client = Client()
    for _ in range(3):
        assert sign_in(client, "alice", "wrong").status_code == 200
    locked = sign_in(client, "alice", "alice-password")
    assert locked.status_code == 429 and "Too many failed sign-ins" in locked.content.decode()
    # Another account from the same address: allowed until the address's own limit.
    for _ in range(2):
        sign_in(client, "charlie", "wrong")
    assert sign_in(client, "charlie", "charlie-password").status_code == 429
    elsewhere = Client(REMOTE_ADDR="10.1.2.3")
    assert sign_in(elsewhere, "charlie", "charlie-password").status_code == 302


def test_a_stranger_cannot_lock_the_owner_out(db, alice, settings):
    """The review's attack: wrong passwords for alice from the stranger's address. Alice's right
    password from her own address still signs in; the stranger's pair stays locked."""
    settings.COVEL_LOGIN_FAILURES_PER_ACCOUNT_ADDRESS = 5
    settings.COVEL_LOGIN_FAILURES_PER_ADDRESS = 20
    stranger = Client(REMOTE_ADDR="203.0.113.66")
    answers = [sign_in(stranger, "alice", f"guess-{i}").status_code for i in range(8)]
    assert answers == [200] * 5 + [429] * 3
    assert sign_in(stranger, "alice", "alice-password").status_code == 429
    owner = Client(REMOTE_ADDR="198.51.100.7")
    assert sign_in(owner, "alice", "alice-password").status_code == 302


def test_the_address_limit_holds_across_accounts_and_an_ipv6_block(db, alice, charlie, settings):
    settings.COVEL_LOGIN_FAILURES_PER_ACCOUNT_ADDRESS = 100
    settings.COVEL_LOGIN_FAILURES_PER_ADDRESS = 4
    # Four addresses of one /64 count as one client.
    for i in range(4):
        sign_in(Client(REMOTE_ADDR=f"2001:db8:1:2::{i + 1}"), f"user{i}", "wrong")
    rotated = Client(REMOTE_ADDR="2001:db8:1:2::99")
    assert sign_in(rotated, "charlie", "charlie-password").status_code == 429
    # Another /64 is another client.
    other = Client(REMOTE_ADDR="2001:db8:1:3::1")
    assert sign_in(other, "alice", "alice-password").status_code == 302


def test_a_success_clears_only_its_own_pair(db, alice, settings):
    settings.COVEL_LOGIN_FAILURES_PER_ACCOUNT_ADDRESS = 3
    settings.COVEL_LOGIN_FAILURES_PER_ADDRESS = 20
    client = Client(REMOTE_ADDR="192.0.2.10")
    for _ in range(2):
        sign_in(client, "alice", "wrong")
    assert sign_in(client, "alice", "alice-password").status_code == 302
    client.logout()
    for _ in range(2):
        assert sign_in(client, "alice", "wrong").status_code == 200  # counting starts again


def test_password_reset_is_refused_plainly_without_a_mail_server(db, settings, caplog):
    settings.EMAIL_HOST = ""
    page = Client().post("/accounts/password_reset/", {"email": "alice@example.com"})
    assert page.status_code == 404
    assert "not available" in page.content.decode()
    assert "Traceback" not in caplog.text
