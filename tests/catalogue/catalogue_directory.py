"""A community directory in the covel-plugins registry format, written to a folder and read by
the hub's real directory sync (installs.directory), for the catalogue's "available" entries."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

# registry/schema.json of covel-ai/covel-plugins, in its parts the tests rely on.
SCHEMA: dict[str, Any] = {
    "type": "object",
    "additionalProperties": False,
    "required": ["id", "name", "description", "maintainer", "author", "repository", "path"]
    + ["ref", "category", "locales", "license", "covelVersion", "status", "demo", "notes"],
    "properties": {
        "id": {"type": "string", "pattern": "^[a-z0-9][a-z0-9-]{0,63}$"},
        "name": {"type": "string", "minLength": 1},
        "description": {"type": "string", "minLength": 1},
        "maintainer": {"enum": ["official", "community"]},
        "author": {"type": "string", "minLength": 1},
        "repository": {
            "type": "string",
            "pattern": "^https://github\\.com/[A-Za-z0-9-]+/[A-Za-z0-9_.-]+$",
        },
        "path": {"type": "string", "pattern": "^([a-zA-Z0-9_-]+(/[a-zA-Z0-9_-]+)*)?$"},
        "ref": {"type": "string", "minLength": 1, "pattern": "^[A-Za-z0-9_./-]+$"},
        "category": {"enum": ["narrative", "gameplay", "world", "media", "tools", "authoring"]},
        "locales": {"type": "array", "minItems": 1, "items": {"type": "string"}},
        "license": {"type": ["string", "null"], "minLength": 1},
        "covelVersion": {"type": ["string", "null"], "minLength": 1},
        "status": {"enum": ["active", "pending", "archived"]},
        "demo": {"type": ["string", "null"], "pattern": "^https://"},
        "notes": {"type": "string"},
        "translations": {"type": "object", "additionalProperties": {"type": "object"}},
    },
}


def directory_entry(entry_id: str, **changes: Any) -> dict[str, Any]:
    base = {
        "id": entry_id,
        "name": entry_id.replace("-", " ").title(),
        "description": f"The {entry_id} package.",
        "maintainer": "community",
        "author": "Ada",
        "repository": "https://github.com/ada/pkgs",
        "path": f"plugins/{entry_id}",
        "ref": "main",
        "category": "tools",
        "locales": ["en-US"],
        "license": "MIT",
        "covelVersion": ">=0.0.45",
        "status": "active",
        "demo": None,
        "notes": "",
    }
    return {**base, **changes}


def directory_use(root: Path, entries: list[dict[str, Any]], schema: dict | None = None) -> Any:
    """Write the registry folder and point the hub at it (the real sync); the source row."""
    from installs.directory import directory_source_set

    plugins = root / "registry" / "plugins"
    plugins.mkdir(parents=True, exist_ok=True)
    (root / "registry" / "schema.json").write_text(json.dumps(schema or SCHEMA))
    for data in entries:
        (plugins / f"{data['id']}.json").write_text(json.dumps(data))
    return directory_source_set(kind="folder", location=str(root))
