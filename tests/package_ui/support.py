"""Helpers of the package UI tests: corpus packages played in a world with characters."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

TESTS = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(TESTS / "covel_corpus"))
sys.path.insert(0, str(TESTS / "sessions"))

from corpus_support import CORPUS, play  # noqa: E402
from test_play_support import index_bundled, index_folder, make_world  # noqa: E402

__all__ = ["CHARACTERS", "CORPUS", "index_bundled", "index_folder", "play", "ui_session"]

CHARACTERS = [
    {"id": "hero", "name": "Ash", "type": "player", "description": "A courier."},
    {"id": "mira", "name": "Mira", "type": "npc", "description": "The harbor master."},
    {"id": "tobin", "name": "Tobin", "type": "npc", "description": "A smuggler."},
]


def ui_session(owner: Any, *corpus: str, bundled: tuple[str, ...] = (), locale: str = "en") -> Any:
    """A session of Alice's harbor world (with characters) playing the given corpus packages,
    beside the bundled storyteller and whatever bundled packages are named."""
    from sessions.services import session_create

    index_bundled("storyteller", *bundled)
    for package_id in corpus:
        index_folder(CORPUS / package_id)
    world = make_world(owner=owner, plugins=list(corpus))
    world.characters = CHARACTERS
    world.save(update_fields=["characters"])
    session = session_create(owner=owner, world=world)
    if locale != session.locale:
        session.locale = locale
        session.save(update_fields=["locale"])
    return session
