"""Fixtures for worlds and settings panels.

Personas (from tests/conftest.py): Alice owns the world "harbor" and a session of it; Bob is
staff and may edit any world or session; Charlie is another player who may edit nothing of
Alice's; the anonymous visitor may read world pages but change nothing.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from worlds_testdata import (
    AFFINITY_SETTINGS,
    DICE_SETTINGS,
    HARBOR_YAML,
    NARRATOR_SETTINGS,
    WEATHER_SETTINGS,
    make_package,
    write_world,
)

from catalogue.models import Package


@pytest.fixture
def packages(db) -> dict[str, Package]:
    return {
        "rapport": make_package("rapport", AFFINITY_SETTINGS),
        "dice": make_package("dice", DICE_SETTINGS),
        "storyteller": make_package("storyteller", NARRATOR_SETTINGS),
        "weather": make_package("weather", WEATHER_SETTINGS),
    }


@pytest.fixture
def worlds_root(tmp_path: Path) -> Path:
    root = tmp_path / "worlds"
    root.mkdir()
    return root


@pytest.fixture
def harbor(packages, worlds_root: Path, alice):
    """Alice's world, indexed from a folder of its own (so saves rewrite a real world.yaml)."""
    from worlds.models import World
    from worlds.services import world_sync

    write_world(worlds_root, "harbor", HARBOR_YAML)
    report = world_sync(dirs=[worlds_root])
    assert [r.action for r in report.results] == ["created"], report.results
    world = World.objects.get(world_id="harbor")
    world.owner = alice
    world.save()
    return world


@pytest.fixture
def alice_session(harbor, alice):
    from sessions.models import Session

    return Session.objects.create(world=harbor, owner=alice, title="Alice at the docks")


@pytest.fixture(autouse=True)
def fast_password_hashing(settings) -> None:
    # The personas are created per test; the default PBKDF2 rounds would dominate run time.
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
