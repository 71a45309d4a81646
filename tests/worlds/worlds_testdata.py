"""Shared test data for tests/worlds: package manifests and a world file with comments."""

from __future__ import annotations

import copy
import textwrap
from pathlib import Path
from typing import Any

from catalogue.models import Package

# The settings of the bundled packages, as the catalogue stores them (manifest JSON).
AFFINITY_SETTINGS: list[dict[str, Any]] = [
    {
        "key": "tone",
        "type": "select",
        "label": "Tone of the change notes",
        "default": "neutral",
        "options": [
            {"value": "gentle", "label": "Gentle"},
            {"value": "neutral", "label": "Neutral"},
            {"value": "harsh", "label": "Harsh"},
        ],
    },
    {
        "key": "intensity",
        "type": "slider",
        "label": "Intensity",
        "default": 5,
        "min": 0,
        "max": 10,
        "step": 1,
    },
    {"key": "nickname", "type": "text", "label": "Nickname", "default": ""},
    {"key": "notes", "type": "textarea", "label": "Notes for the tracker", "default": ""},
    {
        "key": "decay",
        "type": "number",
        "label": "Decay per turn",
        "default": 0.1,
        "min": 0,
        "max": 1,
        "step": 0.05,
    },
    {
        "key": "max-entries",
        "type": "integer",
        "label": "Characters shown",
        "default": 20,
        "min": 1,
        "max": 100,
    },
    {"key": "show-panel", "type": "toggle", "label": "Show the rapport panel", "default": True},
    {"key": "model", "type": "slot", "label": "Model slot", "default": "utility"},
]
DICE_SETTINGS: list[dict[str, Any]] = [
    {"key": "sides", "type": "integer", "label": "Sides", "default": 20, "min": 2, "max": 100},
    {"key": "advantage", "type": "toggle", "label": "Roll with advantage", "default": False},
]
NARRATOR_SETTINGS: list[dict[str, Any]] = [
    {
        "key": "style",
        "type": "select",
        "label": "Style",
        "default": "terse",
        "options": [{"value": "terse", "label": "Terse"}, {"value": "lyrical", "label": "Lyrical"}],
    }
]
WEATHER_SETTINGS: list[dict[str, Any]] = [
    {"key": "city", "type": "text", "label": "City", "default": "Harbor"}
]


def make_package(package_id: str, settings: list[dict[str, Any]], **extra: Any) -> Package:
    manifest = {
        "id": package_id,
        "kind": "plugin",
        "version": "1.0.0",
        "description": f"The {package_id} package.",
        "displayName": package_id.title(),
        "contributes": {"settings": copy.deepcopy(settings)},
    }
    return Package.objects.create(
        package_id=package_id,
        version="1.0.0",
        display_name=extra.pop("display_name", package_id.title()),
        description=manifest["description"],
        source_dir=f"/nowhere/{package_id}",
        trust=Package.Trust.BUNDLED,
        state=extra.pop("state", Package.State.LOADED),
        content_hash="0" * 64,
        manifest=manifest,
        **extra,
    )


HARBOR_YAML = textwrap.dedent(
    """\
    # Harbor: the test world. Comments like this one must survive a save.
    name: Harbor
    description: A rainy port.   # trailing comment on a scalar
    author:
      name: Alice Author
      url: https://example.com/alice
      about: Writes rainy worlds.
    x-editor-notes: keep me   # an unknown key: kept on write
    plugins:
      - rapport
      - dice
      - storyteller
    pluginSettings:
      # presets for rapport
      rapport:
        tone: harsh      # grudges
        intensity: 7
      dice:
        sides: 12
    # a comment at the end of the file
    """
)


def write_world(root: Path, world_id: str, text: str) -> Path:
    folder = root / world_id
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "world.yaml").write_text(text, encoding="utf-8")
    return folder
