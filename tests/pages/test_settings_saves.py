"""Settings saves: a refused save shows a banner at the top that links (and scrolls) to the
field, and the refused value is not labelled as the world's preset; a save from a page loaded
before world.yaml changed on disk is refused with 409, naming both values; plugins the player
added when the session started get their settings panel.

Personas: Alice owns the copied Harbor Nights world and her session of it."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest
from django.core.management import call_command

from worlds.forms import input_name

REPO = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.django_db


@pytest.fixture
def own_harbor(fresh_install, tmp_path, alice):
    """A copy of Harbor Nights in tmp_path (saves rewrite its world.yaml), owned by Alice."""
    from worlds.models import World

    folder = tmp_path / "worlds" / "harbor"
    shutil.copytree(REPO / "world-packages" / "harbor-nights", folder)
    call_command("sync_worlds", str(folder.parent), verbosity=0)
    world = World.objects.get(world_id="harbor")
    world.owner = alice
    world.save(update_fields=["owner"])
    return world


def form_hash(html: str, package: str) -> str:
    panel = html[html.index(f'id="panel-{package}"') :]
    return re.search(r'name="file_hash" value="([0-9a-f]{64})"', panel).group(1)


def test_a_refused_save_shows_a_banner_linking_to_the_field(client, own_harbor, alice):
    client.force_login(alice)
    page = client.get("/worlds/harbor/").content.decode()
    answer = client.post(
        "/worlds/harbor/",
        {
            "package": "rapport",
            "file_hash": form_hash(page, "rapport"),
            input_name("intensity"): "99",
        },
    )
    assert answer.status_code == 422
    html = answer.content.decode()
    banner = re.search(r'<div class="banner error settings-banner"(.*?)</div>', html, re.S)
    assert banner, "no banner"
    assert 'data-scroll-to="panel-rapport-intensity"' in banner.group(1)
    assert '<a href="#panel-rapport-intensity">Intensity</a>' in banner.group(1)
    # The banner comes before the world's heading: at the top of the page.
    assert html.index("settings-banner") < html.index("<h1>")
    field = html[html.index('data-key="intensity"') :]
    field = field[: field.index('data-key="', 20)]
    assert "not saved" in field and "world preset" not in field


def test_a_save_from_a_stale_page_is_a_conflict(client, own_harbor, alice):
    client.force_login(alice)
    page = client.get("/worlds/harbor/").content.decode()
    loaded = form_hash(page, "rapport")
    world_yaml = Path(own_harbor.source_dir) / "world.yaml"
    world_yaml.write_text(world_yaml.read_text().replace("intensity: 7", "intensity: 3"))
    before = world_yaml.read_bytes()

    answer = client.post(
        "/worlds/harbor/",
        {"package": "rapport", "file_hash": loaded, input_name("intensity"): "9"},
    )
    assert answer.status_code == 409
    html = answer.content.decode()
    assert "world.yaml changed on disk since this page was loaded" in html
    assert "intensity: you entered 9, the file now says 3" in html
    assert world_yaml.read_bytes() == before  # the hand edit survives

    # Reloaded, the page carries the new hash and the save goes through.
    fresh = form_hash(client.get("/worlds/harbor/").content.decode(), "rapport")
    assert fresh != loaded
    saved = client.post(
        "/worlds/harbor/",
        {"package": "rapport", "file_hash": fresh, input_name("intensity"): "9"},
    )
    assert saved.status_code == 302
    assert "intensity: 9" in world_yaml.read_text()


def test_plugins_added_at_session_start_get_a_settings_panel(client, own_harbor, alice):
    from sessions.services import session_create

    own_harbor.plugins = [p for p in own_harbor.plugins if p != "dice"]
    own_harbor.save(update_fields=["plugins"])
    session = session_create(owner=alice, world=own_harbor, requested=[*own_harbor.plugins, "dice"])
    assert "dice" not in own_harbor.plugins
    client.force_login(alice)
    html = client.get(f"/sessions/{session.pk}/").content.decode()
    assert 'id="panel-dice"' in html
    answer = client.post(f"/sessions/{session.pk}/", {"package": "dice", input_name("sides"): "12"})
    assert answer.status_code == 302
    from worlds.models import SessionPluginSettings

    assert SessionPluginSettings.objects.get(session=session, package_id="dice").values == {
        "sides": 12
    }
