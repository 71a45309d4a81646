"""Covel's ctx.store reads through real turns in the real Node host: the world-greeter corpus
package welcomes the player to the world by name as Covel's pregame does, from getSession and
getWorld; world and character reads are offered to bundled (trusted) code only, as Covel's
FunctionStoreView (packages/plugin-handlers-utils/src/function-runtime.ts) offers community code
a narrow view; every read is bound to the calling session."""

from __future__ import annotations

from support import CORPUS, play, ui_session

from sessions.models import PluginData


def greeting(session):
    row = PluginData.objects.get(
        session=session, plugin_id="world-greeter", namespace="greeting", key="welcome"
    )
    return row.value


def test_a_bundled_package_greets_the_world_by_name(db, alice, settings):
    settings.COVEL_BUNDLED_PLUGINS_DIR = CORPUS  # the corpus folder is the trusted one here
    session = ui_session(alice, "world-greeter")
    result = play(session, "Hello?")
    assert {r["runtime"]: r["status"] for r in result["runtimes"]}["world-greeter"] == "succeeded"
    got = greeting(session)
    assert got["line"] == "Welcome to Harbor Nights. This is turn 1."
    assert got["session"]["id"] == str(session.pk)
    assert got["session"]["worldId"] == "harbor" and got["session"]["locale"] == "en"
    assert got["session"]["phase"] in ("setup", "playing")
    world = got["world"]["value"]
    assert (world["id"], world["name"], world["description"]) == (
        "harbor",
        "Harbor Nights",
        "A rainy port.",
    )
    # Another world's id reads nothing: the store is bound to this session.
    assert got["otherWorld"] == {"ok": True, "value": None}
    assert got["characters"] == ["hero", "mira", "tobin"]
    assert got["mira"] == "Mira"
    assert got["inputs"] == {"ok": True, "value": []}


def test_community_code_may_not_read_the_world_through_the_store(db, alice):
    session = ui_session(alice, "world-greeter")
    play(session, "Hello?")
    got = greeting(session)
    # As Covel's pregame does when the read is missing: the fallback name, never a crash.
    assert got["line"] == "Welcome to Unknown World. This is turn 1."
    refused = got["world"]
    assert refused["ok"] is False and refused["code"] == "store_trusted_only"
    assert "ctx.store.getWorld is offered to bundled packages only" in refused["message"]
    assert "world-greeter" in refused["message"] and "ctx.world" in refused["message"]
    assert got["characters"]["code"] == "store_trusted_only"
    assert got["mira"]["code"] == "store_trusted_only"
    # The session record and the player's inputs are every package's to read.
    assert got["session"]["worldId"] == "harbor"
    assert got["inputs"]["ok"] is True


def test_player_inputs_are_the_sessions_submitted_forms_oldest_first(db, alice):
    from django.utils import timezone

    from sessions.models import Interaction
    from sessions.store_reads import player_inputs

    session = ui_session(alice, "world-greeter")
    play(session, "Hello?")
    turn = session.turns.first()
    base = {"session": session, "plugin_id": "p", "runtime_id": "p"}
    Interaction.objects.create(
        **base,
        interaction_id="ask-1",
        form={"id": "name-form"},
        status="submitted",
        values={"name": "Ash"},
        submitted_at=timezone.now(),
        answer_turn=turn,
    )
    Interaction.objects.create(**base, interaction_id="ask-2", status="pending")
    from sessions.services import session_create

    other = session_create(owner=alice, world=session.world)
    Interaction.objects.create(
        session=other,
        plugin_id="p",
        runtime_id="p",
        interaction_id="x",
        status="submitted",
        values={},
        submitted_at=timezone.now(),
    )
    assert player_inputs(session) == [
        {"id": "ask-1", "formId": "name-form", "turnId": str(turn.pk), "values": {"name": "Ash"}}
    ]
