"""Fixtures of the loader tests: small packages written into tmp_path.

Manifests are written as JSON inside the `---` lines (JSON is YAML), so a test states the exact
frontmatter it means; raw YAML text is used where the YAML itself is under test.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from catalogue.manifest import LoadResult, load_package

# A valid single-runtime package using a little of everything; cases mutate a deep copy.
BASE: dict[str, Any] = {
    "version": "1.2.0",
    "description": "Keeps notes.",
    "displayName": "Notes",
    "covel": ">=0.1.0 <1.0.0",
    "tags": ["mode:notes"],
    "author": {
        "name": "Jane",
        "url": "https://example.com",
        "links": [{"label": "Site", "url": "https://example.com/a"}],
    },
    "homepage": "https://example.com/notes",
    "requires": ["narrative-engine@2"],
    "contracts": {"notes.view@1": {"schema": "./schemas/note.schema.json"}},
    "permissions": {"http": [{"origin": "https://api.example.com", "methods": ["GET", "POST"]}]},
    "contributes": {
        "tools": ["save-note"],
        "actions": ["inspect-note"],
        "commands": [
            {
                "name": "note",
                "description": "List notes.",
                "action": "inspect-note",
                "arguments": [{"name": "filter"}, {"name": "words", "variadic": True}],
            }
        ],
        "events": [
            {
                "topic": "note.saved",
                "schema": "./schemas/note.schema.json",
                "description": "A note was saved.",
            }
        ],
        "settings": [
            {
                "key": "style",
                "type": "select",
                "label": "Style",
                "default": "short",
                "options": [
                    {"value": "short", "label": "Short"},
                    {"value": "long", "label": "Long"},
                ],
            },
            {
                "key": "limit",
                "type": "integer",
                "label": "Limit",
                "default": 5,
                "min": 1,
                "max": 10,
            },
        ],
        "datasets": {
            "notes": {"schema": "./schemas/note.schema.json", "key": "id", "ops": ["set"]}
        },
        "data": {"facts": {"schema": "./schemas/note.schema.json"}},
        "ui": {"right": ["./ui/panel.json"]},
    },
    "runtime": {
        "schedule": {"stage": "post-turn"},
        "io": {
            "inputs": {
                "narrative": {
                    "from": {"contract": "narrative-engine@2"},
                    "select": "/narrativeOutput",
                }
            }
        },
        "agent": {
            "history": {"maxTurns": 2},
            "finishWith": "save-note",
            "tools": {"plugin": ["save-note"], "datasets": ["notes"]},
        },
    },
}

NOTE_SCHEMA = {
    "type": "object",
    "required": ["id"],
    "properties": {"id": {"type": "string"}, "text": {"type": "string"}},
}
BASE_FILES: dict[str, str] = {
    "server/index.js": "export default function register(covel) {}\n",
    "schemas/note.schema.json": json.dumps(NOTE_SCHEMA),
    "ui/panel.json": "{}",
}


def markdown(frontmatter: dict[str, Any] | str, body: str = "Do the thing.\n") -> str:
    text = frontmatter if isinstance(frontmatter, str) else json.dumps(frontmatter, indent=1)
    return f"---\n{text}\n---\n{body}"


def write_package(
    root: Path,
    frontmatter: dict[str, Any] | str,
    *,
    files: dict[str, str | bytes] | None = None,
    runtimes: dict[str, dict[str, Any] | str] | None = None,
    body: str = "Do the thing.\n",
) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    (root / "PLUGIN.md").write_text(markdown(frontmatter, body), encoding="utf-8")
    for name, runtime in (runtimes or {}).items():
        folder = root / "runtimes" / name
        folder.mkdir(parents=True, exist_ok=True)
        (folder / "RUNTIME.md").write_text(
            markdown(runtime, f"Prompt of {name}.\n"), encoding="utf-8"
        )
    for relative, content in (files or {}).items():
        target = root / relative
        target.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, bytes):
            target.write_bytes(content)
        else:
            target.write_text(content, encoding="utf-8")
    return root


PackageFactory = Callable[..., Path]


@pytest.fixture
def make_package(tmp_path: Path) -> PackageFactory:
    """make_package(frontmatter, name="notes", files=..., runtimes=..., base_files=True)."""

    def make(
        frontmatter: dict[str, Any] | str,
        *,
        name: str = "notes",
        files: dict[str, str | bytes] | None = None,
        runtimes: dict[str, dict[str, Any] | str] | None = None,
        base_files: bool = True,
        body: str = "Do the thing.\n",
    ) -> Path:
        all_files: dict[str, str | bytes] = dict(BASE_FILES) if base_files else {}
        all_files.update(files or {})
        return write_package(
            tmp_path / name, frontmatter, files=all_files, runtimes=runtimes, body=body
        )

    return make


@pytest.fixture
def base() -> dict[str, Any]:
    return copy.deepcopy(BASE)


def put(data: dict[str, Any], pointer: str, value: Any) -> dict[str, Any]:
    """Set the value at a JSON pointer, creating objects on the way; returns data."""
    parts = pointer.lstrip("/").split("/")
    node: Any = data
    for part in parts[:-1]:
        node = node[int(part)] if isinstance(node, list) else node.setdefault(part, {})
    last = parts[-1]
    if isinstance(node, list):
        if last == "-" or int(last) == len(node):
            node.append(value)
        else:
            node[int(last)] = value
    else:
        node[last] = value
    return data


def drop(data: dict[str, Any], pointer: str) -> dict[str, Any]:
    parts = pointer.lstrip("/").split("/")
    node: Any = data
    for part in parts[:-1]:
        node = node[int(part)] if isinstance(node, list) else node[part]
    if isinstance(node, list):
        del node[int(parts[-1])]
    else:
        del node[parts[-1]]
    return data


def codes(result: LoadResult) -> list[tuple[str, str, str]]:
    return [(i.file, i.path, i.code) for i in result.errors]


def load(path: Path) -> LoadResult:
    return load_package(path)
