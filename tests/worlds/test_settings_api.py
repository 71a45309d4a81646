"""The settings API: effective values with origin, PUTs at world and session level, refusals."""

from __future__ import annotations

import json
import uuid
from pathlib import Path

import pytest
from django.test import Client

PUT_WORLD = "/api/worlds/harbor/plugin-settings/rapport"


def put(client: Client, url: str, body: object):
    return client.put(url, data=json.dumps(body), content_type="application/json")


def as_user(user) -> Client:
    client = Client()
    client.force_login(user)
    return client


def by_key(payload: dict) -> dict[str, dict]:
    return {f["key"]: f for f in payload["fields"]}


def test_get_returns_every_field_with_value_and_origin(client: Client, harbor) -> None:
    response = client.get("/api/packages/rapport/settings", {"world": "harbor"})
    assert response.status_code == 200
    body = response.json()
    assert (body["package"], body["world"], body["level"], body["can_edit"]) == (
        "rapport",
        "harbor",
        "world",
        False,
    )
    fields = by_key(body)
    assert list(fields) == [
        "tone",
        "intensity",
        "nickname",
        "notes",
        "decay",
        "max-entries",
        "show-panel",
        "model",
    ]
    assert (fields["tone"]["value"], fields["tone"]["origin"]) == ("harsh", "world")
    assert (fields["tone"]["reset_value"], fields["tone"]["reset_origin"]) == ("neutral", "default")
    assert fields["tone"]["options"][2] == {"value": "harsh", "label": "Harsh"}
    assert (fields["decay"]["value"], fields["decay"]["origin"]) == (0.1, "default")
    assert (
        fields["intensity"]["min"],
        fields["intensity"]["max"],
        fields["intensity"]["step"],
    ) == (0, 10, 1)
    assert fields["nickname"]["max_chars"] == 500


def test_get_without_world_gives_the_defaults(client: Client, packages) -> None:
    body = client.get("/api/packages/dice/settings").json()
    assert body["level"] == "default"
    assert {k: (f["value"], f["origin"]) for k, f in by_key(body).items()} == {
        "sides": (20, "default"),
        "advantage": (False, "default"),
    }


def test_get_with_a_session_shows_the_players_values(harbor, alice_session, alice) -> None:
    client = as_user(alice)
    put(client, f"/api/sessions/{alice_session.pk}/plugin-settings/rapport", {"intensity": 2})
    body = client.get("/api/packages/rapport/settings", {"session": str(alice_session.pk)}).json()
    fields = by_key(body)
    assert body["world"] == "harbor" and body["level"] == "session" and body["can_edit"]
    assert (fields["intensity"]["value"], fields["intensity"]["origin"]) == (2, "session")
    assert (fields["intensity"]["reset_value"], fields["intensity"]["reset_origin"]) == (7, "world")
    assert (fields["tone"]["value"], fields["tone"]["origin"]) == ("harsh", "world")


def test_get_refuses_unknown_things_and_mismatched_world(
    client: Client, harbor, alice_session, alice
) -> None:
    from worlds.models import World

    World.objects.create(world_id="other", name="Other")
    assert client.get("/api/packages/nope/settings").status_code == 404
    assert client.get("/api/packages/dice/settings", {"world": "nope"}).status_code == 404
    alice_client = as_user(alice)
    assert (
        alice_client.get("/api/packages/dice/settings", {"session": str(uuid.uuid4())}).status_code
        == 404
    )
    assert (
        alice_client.get("/api/packages/dice/settings", {"session": "not-a-uuid"}).status_code
        == 422
    )
    mismatch = alice_client.get(
        "/api/packages/dice/settings", {"session": str(alice_session.pk), "world": "other"}
    )
    assert mismatch.status_code == 422
    assert mismatch.json()["code"] == "invalid"
    assert [i["path"] for i in mismatch.json()["details"]["issues"]] == ["/query/world"]


def test_put_world_presets_saves_and_returns_the_panel(harbor, alice) -> None:
    response = put(as_user(alice), PUT_WORLD, {"intensity": 3, "tone": "gentle"})
    assert response.status_code == 200, response.content
    fields = by_key(response.json())
    assert (fields["intensity"]["value"], fields["intensity"]["origin"]) == (3, "world")
    harbor.refresh_from_db()
    assert harbor.plugin_settings["rapport"] == {"tone": "gentle", "intensity": 3}
    assert "intensity: 3" in (Path(harbor.source_dir) / "world.yaml").read_text()


def test_put_null_resets_a_key_and_leaves_the_others(harbor, alice) -> None:
    response = put(as_user(alice), PUT_WORLD, {"tone": None})
    fields = by_key(response.json())
    assert (fields["tone"]["value"], fields["tone"]["origin"]) == ("neutral", "default")
    assert (fields["intensity"]["value"], fields["intensity"]["origin"]) == (7, "world")


def test_put_lists_every_bad_field_and_saves_nothing(harbor, alice) -> None:
    response = put(
        as_user(alice),
        PUT_WORLD,
        {
            "intensity": 10.5,
            "decay": 0.07,
            "tone": "furious",
            "show-panel": 1,
            "max-entries": 0,
            "model": "gpt",
            "colour": "red",
            "nickname": "ok",
        },
    )
    assert response.status_code == 422
    issues = response.json()["details"]["issues"]
    assert sorted(i["path"].removeprefix("/body/") for i in issues) == [
        "colour",
        "decay",
        "intensity",
        "max-entries",
        "model",
        "show-panel",
        "tone",
    ]
    assert all(i["path"].startswith("/body/") and i["message"] and i["code"] for i in issues)
    decay = next(i for i in issues if i["path"] == "/body/decay")
    assert "step grid of 0.05" in decay["message"]
    harbor.refresh_from_db()
    assert harbor.plugin_settings["rapport"] == {"tone": "harsh", "intensity": 7}


def test_put_rejects_a_body_that_is_not_an_object(harbor, alice) -> None:
    assert put(as_user(alice), PUT_WORLD, [1, 2]).status_code == 422


def test_put_session_values(harbor, alice_session, alice) -> None:
    url = f"/api/sessions/{alice_session.pk}/plugin-settings/dice"
    response = put(as_user(alice), url, {"sides": 6, "advantage": True})
    assert response.status_code == 200
    fields = by_key(response.json())
    assert (fields["sides"]["value"], fields["sides"]["origin"]) == (6, "session")
    bad = put(as_user(alice), url, {"sides": 1, "advantage": "yes"})
    assert bad.status_code == 422
    assert sorted(i["path"] for i in bad.json()["details"]["issues"]) == [
        "/body/advantage",
        "/body/sides",
    ]


@pytest.mark.parametrize(
    ("who", "status"),
    [("alice", 200), ("bob", 200), ("charlie", 403), (None, 401)],
)
def test_who_may_put_world_presets(
    harbor, alice, bob, charlie, who: str | None, status: int
) -> None:
    users = {"alice": alice, "bob": bob, "charlie": charlie}
    client = as_user(users[who]) if who else Client()
    response = put(client, PUT_WORLD, {"intensity": 1})
    assert response.status_code == status
    harbor.refresh_from_db()
    assert (harbor.plugin_settings["rapport"]["intensity"] == 1) == (status == 200)


@pytest.mark.parametrize(
    ("who", "status"),
    [("alice", 200), ("bob", 200), ("charlie", 403), (None, 401)],
)
def test_who_may_put_and_get_session_values(
    harbor, alice_session, alice, bob, charlie, who, status
) -> None:
    users = {"alice": alice, "bob": bob, "charlie": charlie}
    client = as_user(users[who]) if who else Client()
    response = put(client, f"/api/sessions/{alice_session.pk}/plugin-settings/dice", {"sides": 8})
    assert response.status_code == status
    assert alice_session.plugin_settings.exists() == (status == 200)
    read = client.get("/api/packages/dice/settings", {"session": str(alice_session.pk)})
    assert read.status_code == status


def test_a_world_without_an_owner_is_editable_by_staff_only(harbor, alice, bob) -> None:
    harbor.owner = None
    harbor.save()
    assert put(as_user(alice), PUT_WORLD, {"intensity": 1}).status_code == 403
    assert put(as_user(bob), PUT_WORLD, {"intensity": 1}).status_code == 200


def test_unknown_world_or_package_is_404(harbor, alice) -> None:
    assert put(as_user(alice), "/api/worlds/nope/plugin-settings/rapport", {}).status_code == 404
    assert put(as_user(alice), "/api/worlds/harbor/plugin-settings/nope", {}).status_code == 404


def test_put_needs_the_csrf_token_with_a_session_cookie(harbor, alice) -> None:
    client = Client(enforce_csrf_checks=True)
    client.force_login(alice)
    assert put(client, PUT_WORLD, {"intensity": 1}).status_code == 403
    client.get("/worlds/harbor/")  # sets the csrftoken cookie
    token = client.cookies["csrftoken"].value
    response = client.put(
        PUT_WORLD,
        data=json.dumps({"intensity": 1}),
        content_type="application/json",
        HTTP_X_CSRFTOKEN=token,
    )
    assert response.status_code == 200


def test_worlds_list_api_has_author_cards(client: Client, harbor) -> None:
    [world] = client.get("/api/worlds").json()["items"]
    assert world["id"] == "harbor" and world["author"]["name"] == "Alice Author"
    assert world["owner"] == "alice"


def test_put_answers_409_when_world_yaml_cannot_be_written(harbor, alice) -> None:
    (Path(harbor.source_dir) / "world.yaml").unlink()
    response = put(as_user(alice), PUT_WORLD, {"intensity": 1})
    assert response.status_code == 409 and "world.yaml" in response.json()["detail"]
    harbor.refresh_from_db()
    assert harbor.plugin_settings["rapport"]["intensity"] == 7
