"""Catalogue fixtures: plugin folders in tmp, packages written as PLUGIN.md, and a tiny fake
loader result builder so index tests do not depend on the real loader's details."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from catalogue.manifest.types import Issue, LoadResult, Manifest, RuntimeManifest, freeze


def derived_tags(data: dict[str, Any]) -> list[str]:
    """The derived-tag rule (docs/catalogue.md), as the fake loader applies it."""
    tags = [t for t in data.get("tags", []) if not t.startswith(("ui:", "cost:"))]
    runtimes = [data["runtime"]] if "runtime" in data else []
    if any("function" not in r for r in runtimes):
        tags.append("cost:llm")
    if any("function" in r for r in runtimes):
        tags.append("cost:function")
    ui = data.get("contributes", {}).get("ui", {})
    for placement, tag in (
        ("view", "ui:view"),
        ("right", "ui:right-panel"),
        ("message", "ui:message-block"),
        ("segment", "ui:segment"),
    ):
        if ui.get(placement):
            tags.append(tag)
    if any(r.get("schedule", {}).get("trigger", {}).get("type") == "manual" for r in runtimes):
        tags.append("ui:manual-action")
    return tags


def build_result(
    path: Path | str,
    data: dict[str, Any],
    *,
    body: str = "",
    errors: tuple[Issue, ...] = (),
    warnings: tuple[Issue, ...] = (),
) -> LoadResult:
    """A LoadResult shaped like the loader's: defaults applied, provides as objects, tags derived."""
    path = Path(path)
    package_id = data.get("id") or path.name
    if errors:
        return LoadResult(str(path), package_id, None, errors, warnings, raw=freeze(data))
    normal = {"id": package_id, "kind": "plugin", "version": "0.0.0", **data}
    normal["tags"] = derived_tags(data)
    provides = [
        p if isinstance(p, dict) else {"contract": p, "default": False}
        for p in data.get("provides", [])
    ]
    runtimes: list[RuntimeManifest] = []
    if "runtime" in data:
        contract = data["runtime"].get("io", {}).get("output", {}).get("contract")
        if contract and all(p["contract"] != contract for p in provides):
            provides.append({"contract": contract, "default": False})
        runtimes.append(
            RuntimeManifest(package_id, package_id, "PLUGIN.md", body, freeze(data["runtime"]))
        )
    normal["provides"] = provides
    manifest = Manifest(package_id, str(path), freeze(normal), body, tuple(runtimes))
    return LoadResult(str(path), package_id, manifest, (), warnings, raw=freeze(data))


def write_package(folder: Path, name: str, data: dict[str, Any], body: str = "Be helpful.") -> Path:
    """A package folder with a PLUGIN.md whose frontmatter is data (JSON is valid YAML)."""
    package = folder / name
    package.mkdir(parents=True, exist_ok=True)
    (package / "PLUGIN.md").write_text(
        f"---\n{json.dumps(data, indent=1)}\n---\n{body}\n", encoding="utf-8"
    )
    return package


def fake_load(path: Path, host_version: str) -> LoadResult:
    """Reads the JSON frontmatter written by write_package; a missing description is an error."""
    text = (Path(path) / "PLUGIN.md").read_text(encoding="utf-8")
    _, front, body = text.split("---\n", 2)
    data = json.loads(front)
    if data.get("crash"):
        raise RuntimeError("the loader tripped")
    if "description" not in data:
        issue = Issue("PLUGIN.md", "/description", "required", "description is required")
        return build_result(path, data, errors=(issue,))
    return build_result(path, data, body=body.strip())


@dataclass
class PluginDirs:
    bundled: Path
    user: Path
    community: Path
    loads: list[str]

    def add(
        self, where: str, name: str, data: dict[str, Any] | None = None, body: str = "Be helpful."
    ) -> Path:
        data = {"description": f"The {name} package."} if data is None else data
        return write_package(getattr(self, where), name, data, body)


@pytest.fixture
def real_plugin_dirs(tmp_path: Path, settings: Any) -> PluginDirs:
    """Three empty plugin folders configured in settings; the real loader reads them."""
    dirs = PluginDirs(tmp_path / "bundled", tmp_path / "user", tmp_path / "community", [])
    for folder in (dirs.bundled, dirs.user, dirs.community):
        folder.mkdir()
    settings.COVEL_BUNDLED_PLUGINS_DIR = dirs.bundled
    settings.COVEL_USER_PLUGINS_DIR = dirs.user
    settings.COVEL_COMMUNITY_PLUGIN_DIRS = [dirs.community]
    return dirs


@pytest.fixture
def plugin_dirs(real_plugin_dirs: PluginDirs, monkeypatch: pytest.MonkeyPatch) -> PluginDirs:
    """The same folders, read by the fake loader, which counts its calls."""
    dirs = real_plugin_dirs

    def counting_load(path: Path, host_version: str, content_hash: str = "") -> LoadResult:
        dirs.loads.append(Path(path).name)
        return fake_load(path, host_version)

    monkeypatch.setattr("catalogue.services._load_package", counting_load)
    return dirs


@pytest.fixture
def approval_calls(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    calls: list[str] = []
    seen: dict[str, str] = {}  # what approvals would have recorded: the hash it was shown

    def request(package: Any, loaded: Any = None) -> None:
        calls.append(package.package_id)
        seen[package.package_id] = package.content_hash

    monkeypatch.setattr("catalogue.services._request_approval", request)
    monkeypatch.setattr(
        "catalogue.services._request_approvals",
        lambda packages, loaded: [
            request(package, loaded[package.package_id]) for package in packages
        ],
    )
    monkeypatch.setattr("catalogue.services._approval_scope_hashes", lambda: dict(seen))
    return calls


RICH: dict[str, Any] = {
    "displayName": "Dice Roller",
    "version": "1.2.0",
    "description": "Rolls dice for skill checks.",
    "tags": ["mode:dialogue", "ui:view"],
    "author": {
        "name": "Jane Doe",
        "url": "https://jane.example.com",
        "about": "I make dice.",
        "links": [
            {"label": "Discord", "url": "https://discord.example.com/dice"},
            {"label": "Bad", "url": "javascript:alert(1)"},
        ],
    },
    "license": "MIT",
    "homepage": "https://example.com/dice",
    "provides": [{"contract": "dice@1", "default": True}],
    "requires": ["narrative-engine@2"],
    "conflicts": ["other-dice@1"],
    "permissions": {"http": [{"origin": "https://api.example.com", "methods": ["GET"]}]},
    "contributes": {
        "tools": ["roll"],
        "actions": ["roll-action"],
        "commands": [
            {
                "name": "roll",
                "description": "Roll some dice.",
                "action": "roll-action",
                "aliases": ["r"],
                "arguments": [
                    {"name": "expr", "type": "string", "required": True},
                    {"name": "note", "variadic": True},
                ],
            }
        ],
        "actionKinds": [{"name": "gamble", "display": {"label": "Gamble"}}],
        "services": [
            "dice.service@1",
            {"contract": "dice.writer@1", "access": "write", "modelFacing": True},
        ],
        "extensions": [
            "prompt.segment@1/dice-rules",
            {"point": "ui.slot@1", "id": "tray", "slot": "sidebar"},
        ],
        "hooks": ["TurnStart", {"event": "PreToolUse", "enforce": "pre"}],
        "events": [
            {
                "topic": "dice.rolled",
                "schema": "./schemas/rolled.json",
                "description": "A roll happened.",
            }
        ],
        "settings": [
            {
                "key": "sides",
                "type": "select",
                "label": "Sides",
                "default": "6",
                "options": [{"value": "6", "label": "Six"}, {"value": "20", "label": "Twenty"}],
            },
            {"key": "bonus", "type": "slider", "label": "Bonus", "min": 0, "max": 5, "step": 1},
        ],
        "datasets": {"rolls": {"schema": "./schemas/roll.json", "key": "id"}},
        "data": {"history": {"schema": "./schemas/history.json", "description": "Past rolls."}},
        "ui": {"view": ["./ui/tray.json"], "right": ["./ui/panel.json"]},
    },
    "runtime": {
        "schedule": {
            "stage": "post-turn",
            "detached": {"settle": True, "maxSettleWaitMs": 5000, "maxExecutionMs": 30000},
        },
        "io": {"output": {"contract": "dice-log@1"}},
        "agent": {"model": "utility"},
        "permissions": {"http": [{"origin": "https://rng.example.com", "methods": ["POST"]}]},
    },
}


@pytest.fixture
def make_result() -> Callable[..., LoadResult]:
    """The fake LoadResult builder (build_result above)."""
    return build_result


@pytest.fixture
def rich_data() -> dict[str, Any]:
    return json.loads(json.dumps(RICH))


@pytest.fixture
def add(tmp_path: Path, make_result: Callable[..., LoadResult]) -> Callable[..., Any]:
    """add(package_id, data=None, body="", errors=()): index a package from the fake loader
    result (a JSON-shaped manifest, the body as given) as a bundled one."""
    from catalogue.services import package_index

    def add(package_id: str, data: dict | None = None, body: str = "", errors: Any = ()) -> Any:
        data = {"description": f"About {package_id}.", **(data or {})}
        return package_index(
            result=make_result(tmp_path / package_id, data, errors=errors, body=body),
            source="bundled",
            content_hash="0" * 64,
            host_version="0.1.0",
        )

    return add


@pytest.fixture
def bundled(real_plugin_dirs: PluginDirs) -> Any:
    """The repository's bundled plugins, read by the real loader and indexed."""
    from django.conf import settings as django_settings

    from catalogue.services import packages_sync

    django_settings.COVEL_BUNDLED_PLUGINS_DIR = Path(django_settings.BASE_DIR) / "plugins"
    summary = packages_sync()
    assert not summary.invalid, summary.invalid
    return summary
