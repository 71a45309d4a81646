"""Fixtures of the source plugin tests: plugin folders written from plain dicts.

Personas come from tests/conftest.py: alice is a player, bob is staff.
"""

from __future__ import annotations

import copy
import json
import shutil
import stat
import tomllib
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

REPO = Path(__file__).resolve().parents[2]
EXAMPLE = REPO / "source-plugins" / "localfeed"


def _toml_value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return repr(value)
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)  # a TOML basic string is JSON-compatible
    if isinstance(value, list):
        return "[" + ", ".join(_toml_value(v) for v in value) + "]"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{_toml_key(k)} = {_toml_value(v)}" for k, v in value.items()) + "}"
    raise TypeError(type(value))


def _toml_key(key: str) -> str:
    return (
        key
        if key and all(c.isalnum() or c in "-_" for c in key) and key.isascii()
        else json.dumps(key)
    )


def _is_table_array(value: Any) -> bool:
    return isinstance(value, list) and bool(value) and all(isinstance(v, dict) for v in value)


def to_toml(data: dict[str, Any], prefix: str = "") -> str:
    """A small TOML writer for test manifests (tables, arrays of tables, scalars, lists)."""
    lines: list[str] = []
    nested: list[tuple[str, Any]] = []
    for key, value in data.items():
        if isinstance(value, dict) or _is_table_array(value):
            nested.append((key, value))
        else:
            lines.append(f"{_toml_key(key)} = {_toml_value(value)}")
    out = "\n".join(lines) + ("\n" if lines else "")
    for key, value in nested:
        name = f"{prefix}.{_toml_key(key)}" if prefix else _toml_key(key)
        if isinstance(value, dict):
            out += f"\n[{name}]\n" + to_toml(value, name)
        else:
            for row in value:
                out += f"\n[[{name}]]\n" + to_toml(row, name)
    return out


def example_manifest() -> dict[str, Any]:
    return tomllib.loads((EXAMPLE / "plugin.toml").read_text())


def minimal_manifest(plugin_id: str = "pulls") -> dict[str, Any]:
    """The spec page's own example."""
    return {
        "id": plugin_id,
        "kinds": ["source"],
        "protocol": 1,
        "source": {
            "name": "Pulls",
            "slot": "pull",
            "codec": {
                "keys": ["{owner}/{repo}#{number}"],
                "urls": ["https://pulls.example/{owner}/{repo}/pull/{number}"],
                "fields": {"number": "[1-9][0-9]*"},
            },
            "facts": [{"name": "pull.state", "type": "string", "doc": "The pull request's state."}],
            "jobs": [{"name": "ingest", "every": "5m"}],
        },
    }


PluginWriter = Callable[..., Path]


@pytest.fixture
def write_plugin(tmp_path: Path) -> PluginWriter:
    """write_plugin(data | text, folder=None, base=tmp_path, binary=True) -> the plugin folder.

    The folder is named after data["id"] unless given; the example's binary and web folder are
    copied in so the plugin is complete.
    """

    def write(
        data: dict[str, Any] | str,
        *,
        folder: str | None = None,
        base: Path | None = None,
        binary: bool = True,
    ) -> Path:
        root = base or tmp_path / "plugins"
        name = folder or (data.get("id") if isinstance(data, dict) else None) or "plugin"
        target = root / str(name)
        target.mkdir(parents=True, exist_ok=True)
        text = data if isinstance(data, str) else to_toml(copy.deepcopy(data))
        (target / "plugin.toml").write_text(text, encoding="utf-8")
        if binary:
            exe = target / str(name)
            shutil.copyfile(EXAMPLE / "localfeed", exe)
            exe.chmod(exe.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
        (target / "web").mkdir(exist_ok=True)
        return target

    return write


EXAMPLE_FEED = "example-feed.json"  # the feed the example ships, read until one is configured


@pytest.fixture
def example_copy(tmp_path: Path) -> Path:
    """A copy of the example plugin in a folder of its own (tmp/plugins/localfeed), as shipped:
    with its example feed, so its jobs succeed until a feed.json is put in its data folder."""
    target = tmp_path / "plugins" / "localfeed"
    shutil.copytree(EXAMPLE, target)
    return target


@pytest.fixture
def feedless_copy(example_copy: Path) -> Path:
    """The example copy without its shipped feed: Ingest fails (feed-unavailable) until a
    feed.json appears in its data folder. Tests of failures build this case explicitly rather
    than rely on the bundled plugin failing."""
    (example_copy / EXAMPLE_FEED).unlink()
    return example_copy
