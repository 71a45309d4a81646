"""Fixtures of the agent tests; the helpers live in agent_helpers.py."""

from __future__ import annotations

from pathlib import Path

import pytest
from agent_helpers import load, write_toolbox

from catalogue.manifest.types import Manifest


@pytest.fixture
def toolbox(tmp_path: Path) -> Manifest:
    return load(write_toolbox(tmp_path))
