"""A world preset reaches ctx.userSettings of a function runtime during a real turn; the
player's own value wins over it."""

from __future__ import annotations

from test_play_support import by_runtime, index_bundled, make_world, play

from sessions.services import session_create
from worlds.models import SessionPluginSettings


def test_the_world_preset_and_then_the_players_value_reach_the_narrator(db, alice):
    index_bundled("storyteller")
    world = make_world(owner=alice, plugins=[], settings={"storyteller": {"style": "lyrical"}})
    session = session_create(owner=alice, world=world)

    first = by_runtime(play(session, "I look around."))["storyteller"]
    assert first["output"]["style"] == "lyrical"  # the manifest default is terse

    SessionPluginSettings.objects.create(
        session=session, package_id="storyteller", values={"style": "terse"}
    )
    second = by_runtime(play(session, "I look around."))["storyteller"]
    assert second["output"]["style"] == "terse"
    assert second["output"]["narrativeOutput"].startswith("You look around")
