"""Fixtures of the page tests: a fresh install (every bundled package, world and source plugin
synced the way scripts/run.sh does) and a session of a bundled world.

Personas (tests/conftest.py): Alice plays; Bob is staff; the anonymous visitor browses.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from django.core.management import call_command

REPO = Path(__file__).resolve().parents[2]


LANTERN_README = """# Lantern

Lights the way. ![the lantern](img/lantern.png) ![far away](https://tracker.example/x.png)
![outside](../../etc/secret.png) [the changelog](CHANGES.md) [code](server/index.js)
[home](https://lantern.example/) [evil](javascript:alert(1)) <script>alert(2)</script>

| setting | meaning |
|---|---|
| brightness | how bright |
"""
# A 1x1 PNG.
PNG = bytes.fromhex(
    "89504e470d0a1a0a0000000d4948445200000001000000010806000000"
    "1f15c4890000000d49444154789c6360000002000154a24f5d0000000049454e44ae426082"
)


@pytest.fixture
def community_dir(tmp_path, settings) -> Path:
    """A community folder holding "lantern": server code (so it needs approval), a README with
    good and bad links and images, and files it must not leak."""
    community = tmp_path / "community"
    folder = community / "lantern"
    (folder / "img").mkdir(parents=True)
    (folder / "server").mkdir()
    (folder / "PLUGIN.md").write_text(
        "---\nid: lantern\nversion: 1.0.0\ndisplayName: Lantern\n"
        "description: Lights the way for the party.\n---\n"
    )
    (folder / "server" / "index.js").write_text("export default function register() {}\n")
    (folder / "README.md").write_text(LANTERN_README)
    (folder / "CHANGES.md").write_text("1.0.0: first light\n")
    (folder / "img" / "lantern.png").write_bytes(PNG)
    (folder / ".secret.txt").write_text("hidden")
    (tmp_path / "outside.png").write_bytes(PNG)
    (folder / "img" / "escape.png").symlink_to(tmp_path / "outside.png")
    settings.COVEL_COMMUNITY_PLUGIN_DIRS = [community]
    return community


@pytest.fixture
def fresh_install(db, tmp_path, settings) -> None:
    """The three sync commands of scripts/run.sh, on the bundled folders (and an empty user
    folder, so nothing from this machine's home leaks in)."""
    settings.COVEL_USER_PLUGINS_DIR = tmp_path / "user-plugins"
    call_command("sync_packages", verbosity=0)
    call_command("sync_worlds", verbosity=0)
    call_command("sync_sources", verbosity=0)


@pytest.fixture
def lantern_denied(community_dir, fresh_install, bob) -> Any:
    """Lantern synced, and denied by Bob."""
    from approvals.selectors import approval_current
    from approvals.services import approval_decide

    request = approval_current(package_key="lantern")
    assert request is not None and request.state == "pending"
    return approval_decide(request_id=request.pk, decision="deny", actor=bob, note="too bright")


@pytest.fixture
def harbor_session(fresh_install, alice) -> Any:
    """Alice's session of the bundled Harbor Nights world, with its own plugins."""
    from sessions.services import session_create
    from worlds.models import World

    world = World.objects.get(world_id="harbor-nights")
    return session_create(owner=alice, world=world, title="Rain on the quay")


@pytest.fixture
def viewport_page(transactional_db, browser, live_server):
    """new_page(width, color_scheme): a browser page of the given width and colour scheme."""
    from django.db import connections

    contexts = []

    def make(width: int = 1280, color_scheme: str = "light", height: int = 900):
        context = browser.new_context(
            viewport={"width": width, "height": height}, color_scheme=color_scheme
        )
        contexts.append(context)
        page = context.new_page()
        page.set_default_timeout(20_000)
        return page

    yield make
    for context in contexts:
        context.close()
    connections.close_all()
