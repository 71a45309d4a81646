"""Helpers of the corpus tests: packages under tests/covel_corpus/<id>/ played through real turns.

The corpus packages are ours, written in the style of Covel's real ones (ackness/covel,
plugins/<id>/). Each test indexes the folders it needs through the real loader and catalogue,
makes Alice's world with them, and plays turns in the real Node host.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

CORPUS = Path(__file__).resolve().parent
sys.path.insert(0, str(CORPUS.parent / "sessions"))

from test_play_support import (  # noqa: E402
    by_runtime,
    index_bundled,
    index_folder,
    make_world,
    play,
)

# The bundled function storyteller gives every corpus session its narrative-engine@2.
NARRATOR = "storyteller"

__all__ = ["CORPUS", "by_runtime", "corpus_index", "corpus_session", "play"]


def corpus_index(*package_ids: str, source: str = "bundled") -> dict[str, Any]:
    """Index corpus packages (and the bundled storyteller) into the catalogue."""
    index_bundled(NARRATOR)
    return {pid: index_folder(CORPUS / pid, source=source) for pid in package_ids}


def corpus_session(owner: Any, *package_ids: str, settings: dict[str, Any] | None = None) -> Any:
    """A fresh session of a world that ticks the given corpus packages."""
    from sessions.services import session_create

    corpus_index(*package_ids)
    world = make_world(owner=owner, plugins=list(package_ids), settings=settings)
    return session_create(owner=owner, world=world)
