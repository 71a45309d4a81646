"""Which packages cannot work here because a model slot they use is not configured.

The new-session form greys such a package out with the reason, and does not tick it even when
the world lists it, so a fresh install (no model configured) plays its bundled worlds without a
runtime that fails every turn. A package's slots are those of its agent runtimes
(agents.runtime.agent_slot: agent.model, else story/plugin by visibility, or the value of its
`type: slot` setting), with the world's preset for that package, else the setting's default.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from agents.runtime import agent_slot
from agents.selectors import slot_names
from catalogue.manifest.types import Manifest, thaw


def _slot_settings(manifest: Manifest, preset: Mapping[str, Any]) -> dict[str, Any]:
    values: dict[str, Any] = {}
    for setting in thaw((manifest.data.get("contributes") or {}).get("settings") or []):
        if setting.get("type") == "slot" and "default" in setting:
            values[str(setting.get("key"))] = setting["default"]
    return {**values, **{k: v for k, v in preset.items() if isinstance(v, str)}}


def package_model_slots(manifest: Manifest, preset: Mapping[str, Any] | None = None) -> list[str]:
    """The model slots the package's agent runtimes call, sorted."""
    chosen = _slot_settings(manifest, preset or {})
    return sorted(
        {agent_slot(runtime, chosen) for runtime in manifest.runtimes if runtime.data.get("agent")}
    )


def packages_missing_slots(
    *, manifests: Mapping[str, Manifest], presets: Mapping[str, Any] | None = None
) -> dict[str, list[str]]:
    """package id -> the slots it needs that staff have not configured (only packages missing
    at least one). One query, whatever the number of packages."""
    configured = set(slot_names())
    missing: dict[str, list[str]] = {}
    for package_id, manifest in manifests.items():
        preset = (presets or {}).get(package_id) or {}
        slots = [s for s in package_model_slots(manifest, preset) if s not in configured]
        if slots:
            missing[package_id] = slots
    return missing
