"""Player actions through the API: each is checked against its kind (contributes.actionKinds) and
reaches plugin code resolved, as ctx.playerActions (seat, kind, character, text, fields).

The `spells` package is written here and runs in the real Node host: it declares three kinds and
its function returns what it saw. Alice owns the session and sits in the primary seat, bound to
the world's two player characters; Bob is staff and acts from her seat.
"""

from __future__ import annotations

import json

import pytest
from django.test import Client
from test_play_support import by_runtime, index_folder, write_plugin

from sessions.services import session_create
from worlds.models import World

SEEN = """
export default async function handler(ctx) {
  return { outcome: "success", value: { actions: ctx.playerActions } };
}
"""

KINDS = [
    {
        "name": "cast",
        "text": "required",
        "schema": "schemas/cast.schema.json",
        "display": {"label": "Cast a spell"},
    },
    {"name": "bow", "text": "none", "display": {"label": "Bow"}},
    {"name": "narrate", "actor": False, "roles": ["host"], "display": {"label": "Narrate"}},
]
CAST_SCHEMA = {
    "type": "object",
    "required": ["spell"],
    "additionalProperties": False,
    "properties": {"spell": {"enum": ["light", "mend"]}, "power": {"type": "integer"}},
}


@pytest.fixture
def session(db, alice, tmp_path):
    folder = write_plugin(
        tmp_path,
        "spells",
        {
            "contributes": {"actionKinds": KINDS},
            "runtime": {"schedule": {"stage": "post-turn"}, "function": {}},
        },
        handler=SEEN,
        files={"schemas/cast.schema.json": json.dumps(CAST_SCHEMA)},
    )
    index_folder(folder)
    world = World.objects.create(
        world_id="tower",
        name="Tower",
        description="A wizard's tower.",
        plugins=["spells"],
        owner=alice,
        characters=[
            {"id": "ana", "name": "Ana", "type": "player"},
            {"id": "bo", "name": "Bo", "type": "player"},
        ],
    )
    return session_create(owner=alice, world=world, character_id="ana", also_character_ids=["bo"])


def act(user, session, actions, message="I act."):
    client = Client()
    client.force_login(user)
    return client.post(
        f"/api/sessions/{session.pk}/actions",
        json.dumps({"message": message, "actions": actions}),
        content_type="application/json",
    )


def seen(response) -> list[dict]:
    assert response.status_code == 200, response.json()
    return by_runtime(response.json())["spells"]["output"]["actions"]


def test_a_declared_kind_reaches_plugin_code_resolved(session, alice):
    actions = seen(
        act(
            alice,
            session,
            [{"kind": "spells/cast", "text": "Let there be light.", "fields": {"spell": "light"}}],
        )
    )
    assert actions == [
        {
            "seat": "seat-1",
            "kind": "spells/cast",
            "character": "ana",  # the seat's current character
            "actorId": "ana",
            "text": "Let there be light.",
            "fields": {"spell": "light"},
        }
    ]


def test_the_actor_may_be_another_character_bound_to_the_seat(session, alice):
    [action] = seen(act(alice, session, [{"kind": "spells/bow", "actorId": "bo"}]))
    assert (action["character"], action["text"], action["fields"]) == ("bo", None, None)


def test_a_base_kind_passes_with_its_text_and_the_seats_character(session, alice):
    [action] = seen(act(alice, session, [{"kind": "say", "text": "Hello."}]))
    assert action == {
        "seat": "seat-1",
        "kind": "say",
        "character": "ana",
        "actorId": "ana",
        "text": "Hello.",
        "fields": None,
    }


@pytest.mark.parametrize(
    ("action", "path", "rule"),
    [
        ({"kind": "spells/cast", "fields": {"spell": "light"}}, "/actions/0/text", "text"),
        (
            {"kind": "spells/cast", "text": "x", "fields": {"spell": "fire"}},
            "/actions/0/fields",
            "schema",
        ),
        ({"kind": "spells/cast", "text": "x"}, "/actions/0/fields", "schema"),
        ({"kind": "spells/bow", "text": "deeply"}, "/actions/0/text", "text"),
        ({"kind": "spells/bow", "fields": {"depth": 2}}, "/actions/0/fields", "fields"),
        ({"kind": "spells/narrate", "text": "Night falls."}, "/actions/0/kind", "roles"),
        ({"kind": "spells/fly"}, "/actions/0/kind", "kind"),
        ({"kind": "other/cast", "text": "x"}, "/actions/0/kind", "kind"),
        ({"kind": "spells/bow", "actorId": "villain"}, "/actions/0/actorId", "actor"),
        ({"kind": "say", "fields": {"a": 1}}, "/actions/0/fields", "fields"),
        ({"kind": "say", "seat": "seat-9"}, "/actions/0/seat", "unknown-field"),
        ({"text": "no kind"}, "/actions/0/kind", "required"),
        ({"kind": "say", "text": "x" * 20001}, "/actions/0/text", "maxLength"),
    ],
)
def test_an_action_that_breaks_its_kind_is_refused_before_the_turn(
    session, alice, action, path, rule
):
    response = act(alice, session, [action])
    assert response.status_code == 422
    body = response.json()
    [found] = body["details"]["issues"]
    assert (body["code"], found["path"], found["code"]) == ("action_invalid", "/body" + path, rule)
    assert body["message"].startswith(f"{path}: ") and body["message"].endswith(f"[{rule}]")
    assert session.turns.count() == 0  # nothing ran, nothing was written


def test_the_schema_failure_names_the_field_and_the_rule(session, alice):
    response = act(
        alice,
        session,
        [{"kind": "spells/cast", "text": "x", "fields": {"spell": "light", "power": "high"}}],
    )
    assert response.status_code == 422
    assert (
        "at /power: 'high' is not of type 'integer' (rule 'type' of schemas/cast.schema.json)"
        in response.json()["detail"]
    )


def test_staff_act_from_the_primary_seat(session, bob):
    [action] = seen(act(bob, session, [{"kind": "spells/bow"}]))
    assert (action["seat"], action["character"]) == ("seat-1", "ana")


def test_the_checks_hold_outside_the_api_too():
    """The API's schema already wants objects; the checker refuses anything else by itself."""
    from sessions.actions import ActionInvalid, actions_resolve

    with pytest.raises(ActionInvalid, match=r"^/actions/0: an action is an object \[type\]$"):
        actions_resolve(actions=["cast"], seat={"id": "seat-1"}, active={})
    with pytest.raises(ActionInvalid, match=r"\[maxItems\]$"):
        actions_resolve(actions=[{"kind": "say"}] * 21, seat={"id": "seat-1"}, active={})
