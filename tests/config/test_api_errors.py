"""The one error shape of /api/: whoever refuses, the body is {code, message, details, detail}.

Personas (tests/conftest.py): the anonymous visitor; Alice, a player; Bob, staff.
"""

from __future__ import annotations

import inspect
import json
import sys

import ninja
import pytest
from django.contrib.auth.models import User
from django.test import Client

from catalogue import api as catalogue_api
from config.api import api
from core.errors import ApiError, Invalid, NotFound, Throttled, issue, pointer

pytestmark = pytest.mark.django_db


def shape(response) -> dict:
    body = response.json()
    assert set(body) == {"code", "message", "details", "detail"}, body
    assert isinstance(body["details"], dict) and body["message"] and body["code"]
    assert body["detail"] == body["message"]
    return body


def test_an_anonymous_caller_gets_401_not_authenticated():
    body = shape(Client().get("/api/approvals"))
    assert body["code"] == "not_authenticated"


def test_a_write_without_the_csrf_token_gets_403_csrf_failed(alice):
    client = Client(enforce_csrf_checks=True)
    client.force_login(alice)
    response = client.post("/api/sessions", json.dumps({"world": "x"}), "application/json")
    assert response.status_code == 403
    assert shape(response)["code"] == "csrf_failed"


def test_a_player_asking_for_staff_pages_gets_403_with_the_apps_code(alice):
    client = Client()
    client.force_login(alice)
    response = client.get("/api/approvals")
    assert response.status_code == 403 and shape(response)["code"] == "staff_only"


def test_validation_errors_point_into_the_request(bob):
    client = Client()
    client.force_login(bob)
    response = client.get("/api/approvals", {"limit": 0, "state": "maybe"})
    assert response.status_code == 422
    body = shape(response)
    assert body["code"] == "invalid"
    paths = sorted(i["path"] for i in body["details"]["issues"])
    assert paths == ["/query/limit", "/query/state"]
    assert all(i["code"] and i["message"] for i in body["details"]["issues"])
    assert body["message"].startswith("/query/") and "(and 1 more)" in body["message"]


def test_a_body_field_is_pointed_at_without_the_views_argument_name(alice):
    client = Client()
    client.force_login(alice)
    response = client.post("/api/sessions", json.dumps({"title": "no world"}), "application/json")
    assert response.status_code == 422
    assert [i["path"] for i in shape(response)["details"]["issues"]] == ["/body/world"]


def test_an_address_no_operation_answers_is_a_json_404():
    response = Client().get("/api/no/such/thing")
    assert response.status_code == 404
    assert shape(response)["code"] == "not_found"
    # Outside /api/ Django's own page stays.
    assert not Client().get("/no/such/page/").headers["Content-Type"].startswith("application/json")


def test_an_apps_own_problem_keeps_its_status_and_code(alice, monkeypatch):
    def refuse(**kwargs):
        raise Throttled("slow down", retry_after=7)

    monkeypatch.setattr(catalogue_api, "tag_counts", refuse)
    response = Client().get("/api/tags")
    assert response.status_code == 429
    assert response.headers["Retry-After"] == "7"
    body = shape(response)
    assert (body["code"], body["details"]) == ("throttled", {"retryAfter": 7})


def test_does_not_exist_and_http404_become_404(monkeypatch):
    def missing(**kwargs):
        User.objects.get(pk=-1)

    monkeypatch.setattr(catalogue_api, "tag_counts", missing)
    assert shape(Client().get("/api/tags"))["code"] == "not_found"


def test_the_helpers_build_the_documented_pieces():
    assert pointer(["body", "a/b", "~x", 0]) == "/body/a~1b/~0x/0"
    refusal = Invalid("bad", issues=[issue("/query/q", "maxLength", "too long")])
    assert (refusal.status, refusal.code) == (422, "invalid")
    assert refusal.body()["details"] == {
        "issues": [{"path": "/query/q", "code": "maxLength", "message": "too long"}]
    }
    assert (NotFound("x").status, ApiError("x", status=418, code="teapot").status) == (404, 418)


def test_schema_names_are_unique_so_the_document_cannot_mix_two_shapes():
    # ninja names a component after its class: two OutSchemas with one name would share one
    # entry of the OpenAPI document, and one of them would be described wrongly.
    assert api.get_openapi_schema()  # every router is loaded
    seen: dict[str, str] = {}
    clashes = []
    for module_name, module in list(sys.modules.items()):
        if module_name.split(".")[0] not in {
            "core",
            "catalogue",
            "approvals",
            "jobs",
            "sessions",
            "sources",
            "worlds",
            "pluginhost",
        }:
            continue
        for name, obj in vars(module).items():
            if (
                inspect.isclass(obj)
                and issubclass(obj, ninja.Schema)
                and obj.__module__ == module_name
            ):
                if name in seen and seen[name] != module_name:
                    clashes.append((name, seen[name], module_name))
                seen.setdefault(name, module_name)
    assert clashes == []


@pytest.mark.parametrize(
    "method,url,body,where",
    [
        ("get", "/api/packages/a%00b", None, "/path"),
        ("get", "/api/packages?q=a%00", None, "/query/q"),
        ("post", "/api/sessions", {"world": "har\u0000bor"}, "/body/world"),
        ("post", "/api/sessions", {"world": "x", "plugins": ["ok", "n\u0000"]}, "/body/plugins/1"),
    ],
)
def test_a_nul_character_is_refused_before_any_database_sees_it(alice, method, url, body, where):
    client = Client()
    client.force_login(alice)
    if body is None:
        response = client.get(url)
    else:
        response = client.post(url, json.dumps(body), "application/json")
    assert response.status_code == 422
    found = shape(response)
    assert found["code"] == "invalid"
    assert found["details"]["issues"] == [
        {"path": where, "code": "nul", "message": "a NUL character cannot be stored"}
    ]


@pytest.mark.parametrize(
    "persona, method, url",
    [
        (None, "post", "/api/sessions"),
        ("alice", "post", "/api/sessions"),
        ("alice", "put", "/api/worlds/harbor/plugin-settings/dice"),
        ("bob", "post", "/api/approvals/1/decision"),
        ("alice", "post", "/api/sessions/00000000-0000-0000-0000-000000000000/actions"),
    ],
)
def test_an_oversized_body_is_a_json_400_in_the_error_shape(
    request, settings, persona, method, url
):
    """It used to be Django's HTML "Bad Request" page (the second review, through schemathesis's
    personas). The form-encoded body takes the same way."""
    settings.DATA_UPLOAD_MAX_MEMORY_SIZE = 1000
    client = Client()
    if persona:
        client.force_login(request.getfixturevalue(persona))
    for content_type, body in (
        ("application/json", json.dumps({"message": "x" * 2000})),
        ("application/x-www-form-urlencoded", "message=" + "x" * 2000),
    ):
        response = getattr(client, method)(url, body, content_type=content_type)
        assert response.status_code == 400, response.content[:200]
        assert response["Content-Type"] == "application/json"
        body_out = shape(response)
        assert body_out["code"] == "body_too_large"
        assert body_out["details"] == {"limit": 1000}
        assert "1000 bytes" in body_out["message"]


def test_a_body_under_the_limit_goes_through(settings, alice):
    settings.DATA_UPLOAD_MAX_MEMORY_SIZE = 1000
    client = Client()
    client.force_login(alice)
    response = client.post("/api/sessions", json.dumps({"world": "nowhere"}), "application/json")
    assert response.status_code != 400 and shape(response)["code"] != "body_too_large"


def test_an_oversized_form_on_a_page_stays_the_html_400(settings, alice):
    settings.DATA_UPLOAD_MAX_MEMORY_SIZE = 1000
    client = Client()
    client.force_login(alice)
    response = client.post("/accounts/login/", {"username": "x" * 2000, "password": "y"})
    assert response.status_code == 400
    assert response["Content-Type"].startswith("text/html")
