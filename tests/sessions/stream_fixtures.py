"""Fixtures the stream tests share (kept apart from stream_servers.py, which bench/ imports
before Django is set up)."""

from __future__ import annotations

import pytest
from test_play_support import file_database, index_bundled, make_world  # noqa: F401

from core import notify
from sessions.services import session_create


@pytest.fixture
def local_notify(settings, tmp_path):
    # The test process and its servers wake each other through sockets in one folder.
    settings.COVEL_NOTIFY_BACKEND = "local"
    settings.COVEL_NOTIFY_DIR = str(tmp_path / "notify")
    notify.reset()
    yield settings.COVEL_NOTIFY_DIR
    notify.reset()


@pytest.fixture
def harbor_session(file_database, alice):  # noqa: F811
    """Alice's session of a world with the word-count package, on a file database."""
    index_bundled("storyteller", "word-count")
    world = make_world(owner=alice, plugins=["word-count"])
    return session_create(owner=alice, world=world)
