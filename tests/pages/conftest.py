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


@pytest.fixture
def fresh_install(db) -> None:
    """The three sync commands of scripts/run.sh, on the bundled folders."""
    call_command("sync_packages", verbosity=0)
    call_command("sync_worlds", verbosity=0)
    call_command("sync_sources", verbosity=0)


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
