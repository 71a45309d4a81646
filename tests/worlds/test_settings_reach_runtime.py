"""A world preset, and then a player's value, reach ctx.userSettings of a real function runtime.

The bundled weather package's handler reports on ctx.userSettings.city; it runs in Node.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from django.conf import settings
from worlds_testdata import write_world

from catalogue.manifest import Manifest, load_package
from catalogue.manifest.types import thaw
from catalogue.models import Package
from pluginhost.callbacks import InMemoryCallbacks
from pluginhost.host import NodeHost
from pluginhost.services import plugin_function_call
from worlds.services import session_plugin_settings_update, user_settings_for, world_sync

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def host() -> Iterator[NodeHost]:
    instance = NodeHost(grace=1.0)
    instance.start()
    yield instance
    instance.stop()


@pytest.fixture
def weather(db) -> tuple[Manifest, Package]:
    result = load_package(Path(settings.COVEL_BUNDLED_PLUGINS_DIR) / "weather")
    assert result.ok, [str(i) for i in result.errors]
    manifest = result.manifest
    row = Package.objects.create(
        package_id="weather",
        version=manifest.version,
        display_name=manifest.display_name,
        source_dir=manifest.path,
        trust=Package.Trust.BUNDLED,
        state=Package.State.LOADED,
        content_hash=result.content_hash,
        manifest=thaw(manifest.data),
    )
    return manifest, row


def test_preset_then_player_value_reach_the_function_runtime(
    weather, host, worlds_root, alice
) -> None:
    from sessions.models import Session
    from worlds.models import World

    manifest, package = weather
    write_world(
        worlds_root,
        "isles",
        "name: Isles\ndescription: Wet.\nplugins: [weather]\npluginSettings:\n  weather:\n    city: Saltmere\n",
    )
    world_sync(dirs=[worlds_root])
    world = World.objects.get(world_id="isles")
    session = Session.objects.create(world=world, owner=alice, title="Rain")

    def run() -> dict:
        user_settings = user_settings_for(package_id="weather", world=None, session=session)
        result = plugin_function_call(
            manifest=manifest,
            runtime="weather",
            callbacks=InMemoryCallbacks(),
            host=host,
            context={"userSettings": user_settings},
        )
        return result.result["value"]

    report = run()
    assert (report["city"], report["sky"], report["known"]) == ("Saltmere", "drizzle", True)

    session_plugin_settings_update(
        session=session, package=package, values={"city": "Emberfall"}, actor=alice
    )
    assert run()["city"] == "Emberfall"

    session_plugin_settings_update(
        session=session, package=package, values={"city": None}, actor=alice
    )
    assert run()["city"] == "Saltmere"
