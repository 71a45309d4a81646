"""Fixtures of the agent tests; the helpers live in agent_helpers.py."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from agent_helpers import load, write_toolbox

from catalogue.manifest.types import Manifest


@pytest.fixture
def toolbox(tmp_path: Path, settings: Any) -> Manifest:
    # The toolbox plays a bundled package: these tests are about the agent runtime, not about
    # approval (a folder outside the bundled one is community code, loaded only once approved).
    settings.COVEL_BUNDLED_PLUGINS_DIR = tmp_path
    return load(write_toolbox(tmp_path))
