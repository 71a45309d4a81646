"""A world's characters and the session's seats reach ctx.world: the owner's seat is bound to a
player character, the new-session page lets the player pick one, and plugin code following the
spec finds it with actingCharacterOf.

Personas (tests/conftest.py): Alice owns the worlds and her sessions; the anonymous visitor is
sent to log in.
"""

from __future__ import annotations

import pytest
from django.test import Client
from test_play_support import by_runtime, index_folder, play, write_plugin

from sessions.models import Session
from sessions.services import SessionProblem, session_create
from sessions.turns import TurnRequest, turn_run
from worlds.models import World

PELL = {
    "id": "pell",
    "name": "Pell Ashgrove",
    "type": "player",
    "description": "A tinkerer.",
    "fields": {},
}
JUNO = {"id": "juno", "name": "Juno Brass", "type": "player", "description": "", "fields": {}}
QUILL = {"id": "quill", "name": "Professor Quill", "type": "npc", "description": "", "fields": {}}
WREN = {"id": "wren", "name": "Wren Calloway", "type": "player", "description": "", "fields": {}}

WHO_AM_I = """import { actingCharacterOf, seatCharacterIds } from "@covel/plugin-handlers-utils";
export default async function handler(ctx) {
  const player = actingCharacterOf(ctx.playerActions, ctx.world.characters, ctx.world.seats);
  return {
    outcome: "success",
    value: {
      name: player?.name ?? null,
      seat: seatCharacterIds("seat-1", ctx.world.characters, ctx.world.seats),
      count: ctx.world.characters.length,
    },
  };
}
"""


def world(world_id: str, characters: list[dict], owner, plugins: list[str] | None = None):
    return World.objects.create(
        world_id=world_id,
        name=world_id.title(),
        description="A test world.",
        plugins=plugins or [],
        characters=characters,
        owner=owner,
    )


def login(user) -> Client:
    client = Client()
    client.force_login(user)
    return client


def test_a_new_session_seats_its_owner_as_the_worlds_first_player_character(db, alice):
    academy = world("academy", [QUILL, PELL, JUNO], alice)
    session = session_create(owner=alice, world=academy)
    assert session.seats == [
        {
            "id": "seat-1",
            "user": "alice",
            "role": "player",
            "primary": True,
            "characterIds": ["pell"],
            "currentCharacterId": "pell",
        }
    ]


def test_a_named_player_character_is_bound_instead(db, alice):
    academy = world("academy", [PELL, JUNO], alice)
    session = session_create(owner=alice, world=academy, character_id="juno")
    [seat] = session.seats
    assert (seat["characterIds"], seat["currentCharacterId"]) == (["juno"], "juno")


def test_a_world_without_player_characters_seats_nobody(db, alice):
    session = session_create(owner=alice, world=world("empty", [QUILL], alice))
    [seat] = session.seats
    assert (seat["characterIds"], seat["currentCharacterId"]) == ([], None)


@pytest.mark.parametrize("character_id", ["wren", "quill", "nobody"])
def test_only_a_player_character_of_this_world_may_be_picked(db, alice, character_id):
    academy = world("academy", [PELL, JUNO, QUILL], alice)
    world("harbor", [WREN], alice)  # wren is a player character, but of another world
    with pytest.raises(SessionProblem) as refusal:
        session_create(owner=alice, world=academy, character_id=character_id)
    assert (refusal.value.code, refusal.value.status) == ("unknown_character", 422)
    assert not Session.objects.exists()


def test_the_new_session_page_offers_a_picker_only_when_there_is_a_choice(db, alice):
    world("academy", [PELL, JUNO, QUILL], alice)
    world("harbor", [WREN, {**QUILL, "id": "tom"}], alice)
    client = login(alice)
    academy = client.get("/sessions/new/?world=academy").content.decode()
    assert 'name="character" value="pell" checked' in academy
    assert 'name="character" value="juno"' in academy
    assert 'value="quill"' not in academy  # an npc is not playable
    harbor = client.get("/sessions/new/?world=harbor").content.decode()
    assert 'name="character"' not in harbor
    assert "You play <strong>Wren Calloway</strong>" in harbor


def test_the_page_binds_the_picked_character_and_refuses_another_worlds(db, alice):
    world("academy", [PELL, JUNO], alice)
    world("harbor", [WREN], alice)
    client = login(alice)
    refused = client.post("/sessions/new/", {"world": "academy", "character": "wren"})
    assert refused.status_code == 422
    assert "&#x27;wren&#x27; is not a player character of world academy" in refused.content.decode()
    assert not Session.objects.exists()

    answer = client.post("/sessions/new/", {"world": "academy", "character": "juno"})
    assert answer.status_code == 302
    [seat] = Session.objects.get(owner=alice).seats
    assert seat["currentCharacterId"] == "juno"


def test_a_real_turn_finds_the_acting_character_with_the_sdk(db, alice, tmp_path):
    index_folder(
        write_plugin(
            tmp_path,
            "who",
            {},
            runtimes={"who": ({"schedule": {"stage": "pre-turn"}, "function": {}}, WHO_AM_I)},
        )
    )
    academy = world("academy", [QUILL, PELL, JUNO], alice, plugins=["who"])
    session = session_create(owner=alice, world=academy, character_id="juno")

    result = by_runtime(play(session, "I oil the gears."))["who/who"]
    assert result["status"] == "succeeded", result
    assert result["output"] == {"name": "Juno Brass", "seat": ["juno"], "count": 3}

    # An action's actor wins over the seat's current character (the spec's rule).
    acted = turn_run(
        session=session,
        request=TurnRequest(message="Pell answers.", actions=[{"actorId": "pell", "text": "x"}]),
    )
    assert by_runtime(acted)["who/who"]["output"]["name"] == "Pell Ashgrove"


def test_the_api_binds_the_named_character_and_refuses_an_unknown_one(db, alice):
    import json

    world("academy", [QUILL, PELL, JUNO], alice)
    client = login(alice)

    def create(body: dict):
        return client.post("/api/sessions", json.dumps(body), content_type="application/json")

    made = create({"world": "academy", "character": "juno"})
    assert made.status_code == 201, made.content
    assert made.json()["seats"][0]["currentCharacterId"] == "juno"
    assert create({"world": "academy"}).json()["seats"][0]["currentCharacterId"] == "pell"
    before = Session.objects.count()
    for wrong in ("quill", "nobody"):  # an NPC, and no character of this world
        refused = create({"world": "academy", "character": wrong})
        assert refused.status_code == 422 and refused.json()["code"] == "unknown_character"
    assert Session.objects.count() == before  # nothing half-made
