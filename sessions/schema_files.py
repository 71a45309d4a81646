"""The JSON Schema files a package ships (runtime output schemas, action kinds' field schemas),
compiled once per version of the file.

Below the turn (sessions.turns) and the action checks (sessions.actions), which both use them.
"""

from __future__ import annotations

import json
import threading
from pathlib import Path
from typing import Any

from jsonschema import validators

_SCHEMAS: dict[str, Any] = {}
_SCHEMAS_LOCK = threading.Lock()


def schema_validator(path: Path) -> Any:
    """The compiled JSON Schema of a package file, read again only when the file changes."""
    key = f"{path}:{path.stat().st_mtime_ns}"
    with _SCHEMAS_LOCK:
        if key not in _SCHEMAS:
            schema = json.loads(path.read_text(encoding="utf-8"))
            _SCHEMAS[key] = validators.validator_for(schema)(schema)
        return _SCHEMAS[key]
