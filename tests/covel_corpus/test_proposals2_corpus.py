"""Covel's feed and world-model proposals through a real package and real Node: scene-chronicler
returns narrative.append, ui.render, character.upsert and interaction.request each turn.

What is asserted is Covel's behaviour (packages/runtime/src/commit/: commit-narrative,
commit-ui, commit-character and @covel/shared's world model): the appended line follows the
storyteller's message, the UI block is kept with its turn and shown as data, a character is the
session's and is seen from the next turn, a versioned upsert patches the live record, a second
player character is refused, and the form waits for the player's answer.
"""

from __future__ import annotations

import pytest
from corpus_support import by_runtime, corpus_session, play
from django.test import Client
from playwright.sync_api import expect

from sessions import selectors
from sessions.interactions import interaction_submit
from sessions.models import Interaction, PluginData

CHRONICLER = "scene-chronicler"


def latest_turn(session):
    return session.turns.order_by("-created_at").first()


def characters(session) -> dict[str, dict]:
    return {c["id"]: c for c in selectors.session_characters(session=session)}


def test_the_chronicle_follows_the_story_and_asks_to_name_the_scene(db, alice):
    session = corpus_session(alice, CHRONICLER)
    first = by_runtime(play(session, "we step into the tavern"))
    assert first[CHRONICLER]["status"] == "succeeded", first[CHRONICLER]
    story, line = latest_turn(session).narrative_text.split("\n\n")
    assert story == first["storyteller"]["output"]["narrativeOutput"]
    assert line == "Chronicle, turn 1: 5 word(s) spoken."
    (form,) = selectors.interaction_pending_list(session=session)
    assert (form.interaction_id, form.plugin_id) == ("scene-title", CHRONICLER)
    assert form.form["title"] == "Name this scene"
    assert [(f["name"], f["label"]) for f in form.form["fields"]] == [("title", "Scene title")]

    answer = interaction_submit(
        session=session, interaction_id="scene-title", values={"title": "The Rusty Anchor"}
    )
    assert by_runtime(answer)[CHRONICLER]["status"] == "succeeded"
    assert answer["narrativeText"].endswith(
        '\n\nChronicle, turn 2: the scene is called "The Rusty Anchor".'
    )
    assert Interaction.objects.get(interaction_id="scene-title").status == "submitted"
    assert selectors.interaction_pending_list(session=session) == []  # asked on turn 1 only


def test_a_character_enters_and_is_seen_and_patched_from_the_next_turn(db, alice):
    session = corpus_session(alice, CHRONICLER)
    first = by_runtime(play(session, "Enter Mara, a one-eyed smuggler"))[CHRONICLER]
    assert first["output"] == {"cast": []}  # committed with the turn, seen from the next
    mara = characters(session)["mara"]
    assert (mara["name"], mara["type"], mara["version"], mara["description"]) == (
        "Mara",
        "npc",
        1,
        "a one-eyed smuggler",
    )
    second = by_runtime(play(session, "Mara becomes a companion"))[CHRONICLER]
    assert second["status"] == "succeeded", second
    assert second["output"] == {"cast": ["mara:Mara:npc:1"]}
    patched = characters(session)["mara"]
    # expectedVersion patches the live record: fields merged, description kept, version up.
    assert (patched["version"], patched["fields"], patched["description"]) == (
        2,
        {"role": "companion"},
        "a one-eyed smuggler",
    )
    assert patched["createdAt"] == mara["createdAt"]
    third = by_runtime(play(session, "we drink"))[CHRONICLER]
    assert third["output"] == {"cast": ["mara:Mara:npc:2"]}
    (card,) = latest_turn(session).blocks
    assert card["data"]["parts"][0]["content"] == {"turn": 3, "cast": ["mara:Mara:npc:2"]}


def test_the_scene_card_is_kept_with_its_turn_and_shown_as_data(db, alice):
    session = corpus_session(alice, CHRONICLER)
    summary = play(session, "<script>alert(1)</script> hides in the rafters")
    (card,) = latest_turn(session).blocks
    assert card["type"] == "ui.render" and card["data"]["layout"] == "stream"
    assert [p["type"] for p in card["data"]["parts"]] == ["scene", "text"]
    assert card["meta"] == {
        "pluginId": CHRONICLER,
        "runtimeId": CHRONICLER,
        "turnId": summary["turnId"],
    }
    client = Client()
    client.force_login(alice)
    page = client.get(f"/sessions/{session.pk}/").content.decode()
    assert f'data-block="{card["id"]}"' in page
    assert "&lt;script&gt;alert(1)&lt;/script&gt; hides in the rafters" in page
    assert "<script>alert(1)" not in page


def test_a_second_player_character_refuses_the_whole_run(db, alice):
    session = corpus_session(alice, CHRONICLER)
    result = by_runtime(play(session, "Enter Rook as the hero"))[CHRONICLER]
    assert (result["status"], result["code"]) == ("dropped", "character-player-taken")
    assert "at most one player character (lead, rook would be)" in result["reason"]
    turn = latest_turn(session)
    # None of the run's proposals is kept: no line, no card, no form, no character.
    assert "Chronicle" not in turn.narrative_text and turn.blocks == []
    assert selectors.interaction_pending_list(session=session) == []
    assert not PluginData.objects.filter(session=session, plugin_id="_session").exists()


@pytest.mark.browser
@pytest.mark.django_db(transaction=True)
def test_the_page_shows_the_chronicle_card_and_form_live(page, live_server, alice):
    session = corpus_session(alice, CHRONICLER)
    page.goto(f"{live_server.url}/accounts/login/?next=/sessions/{session.pk}/")
    page.fill("input[name=username]", "alice")
    page.fill("input[name=password]", "alice-password")
    with page.expect_navigation():
        page.click("form.card button[type=submit]")
    expect(page.locator("#play[data-connected=true]")).to_have_count(1)
    page.fill("#message", "<b>Enter</b> the hall")
    page.click("#send")
    turn = page.locator("#story li.turn").nth(0)
    expect(turn.locator(".narrative")).to_contain_text("Chronicle, turn 1: 3 word(s) spoken.")
    # The card came over the event stream: its parts as text and JSON, never markup.
    card = turn.locator("section.ui-block")
    expect(card).to_have_count(1)
    expect(card.locator('li[data-part-type="text"] .part-content')).to_have_text(
        "<b>Enter</b> the hall"
    )
    assert turn.locator("section.ui-block b").count() == 0
    expect(card.locator('li[data-part-type="scene"] pre')).to_contain_text('"turn": 1')
    expect(page.locator('#forms form.ask[data-interaction="scene-title"]')).to_have_count(1)
    # A reload draws the same card from the server.
    page.reload()
    expect(page.locator("#story li.turn section.ui-block")).to_have_count(1)
    expect(page.locator('#story li[data-part-type="text"] .part-content')).to_have_text(
        "<b>Enter</b> the hall"
    )
