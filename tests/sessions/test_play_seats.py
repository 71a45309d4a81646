"""Seats bound to several characters: the player binds a second character (on the new-session
page or later), switches the seat's current character from the session page or the API, the
change is a `seat.changed` event, and the next turn's ctx.world.seats shows it. ctx.world also
carries the world's lorebook and character field definitions.

Personas (tests/conftest.py): Alice plays her sessions; Bob is staff and may switch for support;
Charlie is another player who may change nothing of Alice's; the anonymous visitor gets 401 from
the API and the login page from HTML.
"""

from __future__ import annotations

import pytest
from django.test import Client
from test_play_support import by_runtime, index_folder, play, write_plugin

from eventlog.models import SessionEvent
from sessions.models import Session
from sessions.services import SessionProblem, seat_update, session_create, session_set_status
from worlds.models import World

PELL = {"id": "pell", "name": "Pell Ashgrove", "type": "player", "description": "", "fields": {}}
JUNO = {"id": "juno", "name": "Juno Brass", "type": "player", "description": "", "fields": {}}
QUILL = {"id": "quill", "name": "Professor Quill", "type": "npc", "description": "", "fields": {}}
LORE = [{"id": "trials", "title": "Contraption trials", "keys": ["trial"], "text": "Dice decide."}]
SCHEMA = [
    {
        "id": "year",
        "name": "Year",
        "type": "number",
        "description": "",
        "min": 1,
        "max": 4,
        "options": [],
        "default": 1,
    }
]

WHO_AM_I = """import { actingCharacterOf, seatCharacterIds } from "@covel/plugin-handlers-utils";
export default async function handler(ctx) {
  const player = actingCharacterOf(ctx.playerActions, ctx.world.characters, ctx.world.seats);
  return {
    outcome: "success",
    value: {
      name: player?.name ?? null,
      seat: seatCharacterIds("seat-1", ctx.world.characters, ctx.world.seats),
      lore: ctx.world.lorebook.map((e) => e.title),
      fields: ctx.world.characterSchema.map((a) => [a.id, a.type, a.max]),
    },
  };
}
"""


@pytest.fixture
def academy(db, alice):
    return World.objects.create(
        world_id="academy",
        name="Academy",
        description="A test world.",
        characters=[QUILL, PELL, JUNO],
        character_schema=SCHEMA,
        lorebook=LORE,
        owner=alice,
    )


@pytest.fixture
def session(academy, alice):
    """Alice's session, her seat bound to Pell (current) and Juno."""
    return session_create(owner=alice, world=academy, also_character_ids=["juno"])


def login(user) -> Client:
    client = Client()
    client.force_login(user)
    return client


def seat_events(session: Session) -> list[dict]:
    return [
        e.payload
        for e in SessionEvent.objects.filter(session=session, type="seat.changed").order_by("seq")
    ]


def current(session: Session) -> str | None:
    return Session.objects.get(pk=session.pk).seats[0]["currentCharacterId"]


# ------------------------------------------------------------------ binding more characters


def test_also_play_binds_more_characters_and_keeps_the_chosen_one_current(academy, alice):
    session = session_create(
        owner=alice, world=academy, character_id="juno", also_character_ids=["pell", "juno"]
    )
    [seat] = session.seats
    assert (seat["characterIds"], seat["currentCharacterId"]) == (["juno", "pell"], "juno")


def test_also_play_refuses_a_character_that_is_not_a_player_of_the_world(academy, alice):
    with pytest.raises(SessionProblem) as refusal:
        session_create(owner=alice, world=academy, also_character_ids=["quill"])
    assert (refusal.value.code, refusal.value.status) == ("unknown_character", 422)
    assert not Session.objects.exists()


def test_the_new_session_page_binds_the_ticked_characters(academy, alice):
    client = login(alice)
    page = client.get("/sessions/new/?world=academy").content.decode()
    assert 'name="also" value="juno"' in page and 'name="also" value="quill"' not in page
    answer = client.post(
        "/sessions/new/", {"world": "academy", "character": "pell", "also": "juno"}
    )
    assert answer.status_code == 302
    [seat] = Session.objects.get(owner=alice).seats
    assert (seat["characterIds"], seat["currentCharacterId"]) == (["pell", "juno"], "pell")


def test_a_character_is_added_to_the_seat_later_from_the_session_page(academy, alice):
    session = session_create(owner=alice, world=academy)
    client = login(alice)
    page = client.get(f"/sessions/{session.pk}/").content.decode()
    assert '<option value="juno">Juno Brass</option>' in page
    answer = client.post(f"/sessions/{session.pk}/seats/seat-1/", {"add": "juno"})
    assert answer.status_code == 302
    seat = Session.objects.get(pk=session.pk).seats[0]
    assert (seat["characterIds"], seat["currentCharacterId"]) == (["pell", "juno"], "pell")
    refused = client.post(f"/sessions/{session.pk}/seats/seat-1/", {"add": "quill"})
    assert refused.status_code == 422
    assert "is not a player character of world academy" in refused.content.decode()


# ------------------------------------------------------------------ switching: the service


def test_switching_records_a_seat_changed_event(session):
    seat = seat_update(session=session, seat_id="seat-1", current_character_id="juno")
    assert seat["currentCharacterId"] == "juno"
    assert current(session) == "juno"
    assert seat_events(session) == [
        {
            "seatId": "seat-1",
            "characterIds": ["pell", "juno"],
            "currentCharacterId": "juno",
            "previousCharacterId": "pell",
        }
    ]
    # The same switch again changes nothing and tells nobody.
    seat_update(session=session, seat_id="seat-1", current_character_id="juno")
    assert len(seat_events(session)) == 1


@pytest.mark.parametrize(
    ("change", "code", "status"),
    [
        ({"current_character_id": "quill"}, "not_bound", 422),  # an npc
        ({"current_character_id": "nobody"}, "not_bound", 422),
        ({"character_ids": ["pell", "quill"]}, "unknown_character", 422),
        ({"character_ids": ["pell", "pell"]}, "duplicate", 422),
        ({"character_ids": []}, "required", 422),
        ({"character_ids": ["pell"], "current_character_id": "juno"}, "not_bound", 422),
    ],
)
def test_refusals_change_nothing(session, change, code, status):
    with pytest.raises(SessionProblem) as refusal:
        seat_update(session=session, seat_id="seat-1", **change)
    assert (refusal.value.code, refusal.value.status) == (code, status)
    assert Session.objects.get(pk=session.pk).seats[0]["characterIds"] == ["pell", "juno"]
    assert seat_events(session) == []


def test_a_character_still_bound_to_another_seat_may_not_be_rebound(session):
    Session.objects.filter(pk=session.pk).update(
        seats=[*session.seats, {"id": "seat-2", "role": "player", "primary": False,
                                "characterIds": ["juno"], "currentCharacterId": "juno"}]
    )  # fmt: skip
    session.refresh_from_db()
    with pytest.raises(SessionProblem) as refusal:
        seat_update(session=session, seat_id="seat-1", character_ids=["pell", "juno"])
    assert refusal.value.code == "bound_elsewhere"


def test_dropping_the_current_character_makes_the_first_bound_one_current(session):
    seat_update(session=session, seat_id="seat-1", current_character_id="juno")
    seat = seat_update(session=session, seat_id="seat-1", character_ids=["pell"])
    assert (seat["characterIds"], seat["currentCharacterId"]) == (["pell"], "pell")


def test_an_ended_session_keeps_its_seats(session):
    session_set_status(session=session, status="ended")
    with pytest.raises(SessionProblem) as refusal:
        seat_update(session=session, seat_id="seat-1", current_character_id="juno")
    assert (refusal.value.code, refusal.value.status) == ("session_ended", 409)
    assert current(session) == "pell"


# ------------------------------------------------------------------ the page form


def test_the_owner_and_staff_switch_from_the_session_page(session, alice, bob):
    client = login(alice)
    page = client.get(f"/sessions/{session.pk}/").content.decode()
    assert 'name="current" value="pell" checked' in page
    assert 'name="current" value="juno"' in page
    answer = client.post(f"/sessions/{session.pk}/seats/seat-1/", {"current": "juno"})
    assert (answer.status_code, answer["Location"]) == (302, f"/sessions/{session.pk}/")
    assert current(session) == "juno"
    assert 'name="current" value="juno" checked' in client.get(answer["Location"]).content.decode()
    # Staff may switch it back, for support.
    assert (
        login(bob).post(f"/sessions/{session.pk}/seats/seat-1/", {"current": "pell"}).status_code
        == 302
    )
    assert current(session) == "pell"


def test_the_page_refuses_others_and_characters_not_bound(session, charlie):
    url = f"/sessions/{session.pk}/seats/seat-1/"
    assert login(charlie).post(url, {"current": "juno"}).status_code == 403
    anonymous = Client().post(url, {"current": "juno"})
    assert anonymous.status_code == 302 and "/accounts/login/" in anonymous["Location"]
    refused = login(session.owner).post(url, {"current": "quill"})
    assert refused.status_code == 422
    assert refused.content.decode() == "'quill' is not bound to seat seat-1"
    assert (
        login(session.owner)
        .post(f"/sessions/{session.pk}/seats/seat-9/", {"current": "juno"})
        .status_code
        == 404
    )
    assert current(session) == "pell" and seat_events(session) == []


# ------------------------------------------------------------------ the API


def test_the_api_switches_the_current_character(session, alice):
    answer = login(alice).patch(
        f"/api/sessions/{session.pk}/seats/seat-1",
        {"currentCharacterId": "juno"},
        content_type="application/json",
    )
    assert answer.status_code == 200, answer.content
    assert answer.json() == {
        "id": "seat-1",
        "user": "alice",
        "role": "player",
        "primary": True,
        "characterIds": ["pell", "juno"],
        "currentCharacterId": "juno",
    }
    assert (
        login(alice).get(f"/api/sessions/{session.pk}").json()["seats"][0]["currentCharacterId"]
        == "juno"
    )


def test_the_api_rebinds_the_seats_characters(academy, alice):
    session = session_create(owner=alice, world=academy)
    answer = login(alice).patch(
        f"/api/sessions/{session.pk}/seats/seat-1",
        {"characterIds": ["juno", "pell"], "currentCharacterId": "juno"},
        content_type="application/json",
    )
    assert answer.status_code == 200, answer.content
    assert (answer.json()["characterIds"], answer.json()["currentCharacterId"]) == (
        ["juno", "pell"],
        "juno",
    )


@pytest.mark.parametrize(
    ("who", "seat", "body", "status", "code"),
    [
        ("charlie", "seat-1", {"currentCharacterId": "juno"}, 403, "forbidden"),
        ("alice", "seat-9", {"currentCharacterId": "juno"}, 404, "not_found"),
        ("alice", "seat-1", {"currentCharacterId": "nobody"}, 422, "not_bound"),
        ("alice", "seat-1", {"characterIds": ["pell", "ghost"]}, 422, "unknown_character"),
    ],
)
def test_the_api_refuses(session, request, who, seat, body, status, code):
    client = login(request.getfixturevalue(who))
    answer = client.patch(
        f"/api/sessions/{session.pk}/seats/{seat}", body, content_type="application/json"
    )
    assert (answer.status_code, answer.json()["code"]) == (status, code)
    assert current(session) == "pell" and seat_events(session) == []


def test_the_api_refuses_the_anonymous_and_unknown_sessions(session, alice):
    body = {"currentCharacterId": "juno"}
    anonymous = Client().patch(
        f"/api/sessions/{session.pk}/seats/seat-1", body, content_type="application/json"
    )
    assert anonymous.status_code == 401
    missing = login(alice).patch(
        "/api/sessions/00000000-0000-0000-0000-000000000000/seats/seat-1",
        body,
        content_type="application/json",
    )
    assert missing.status_code == 404
    assert current(session) == "pell"


# ------------------------------------------------------------------ a real turn


def test_the_next_turn_reads_the_switched_character_and_the_world_data(academy, alice, tmp_path):
    index_folder(
        write_plugin(
            tmp_path,
            "who",
            {},
            runtimes={"who": ({"schedule": {"stage": "pre-turn"}, "function": {}}, WHO_AM_I)},
        )
    )
    World.objects.filter(pk=academy.pk).update(plugins=["who"])
    academy.refresh_from_db()
    session = session_create(owner=alice, world=academy, also_character_ids=["juno"])

    first = by_runtime(play(session, "I oil the gears."))["who/who"]
    assert first["status"] == "succeeded", first
    assert first["output"] == {
        "name": "Pell Ashgrove",
        "seat": ["pell", "juno"],
        "lore": ["Contraption trials"],
        "fields": [["year", "number", 4]],
    }

    answer = login(alice).patch(
        f"/api/sessions/{session.pk}/seats/seat-1",
        {"currentCharacterId": "juno"},
        content_type="application/json",
    )
    assert answer.status_code == 200
    second = by_runtime(play(session, "Juno takes over."))["who/who"]
    assert second["output"]["name"] == "Juno Brass"
    # The SDK lists the current character first.
    assert second["output"]["seat"] == ["juno", "pell"]
