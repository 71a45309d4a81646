"""Version history of a package: what changed between two stored manifests, said plainly.

The indexer keeps the replaced version's manifest (PackageVersion) whenever the version on disk
changes; the detail page lists each with the changes that the next version brought."""

from __future__ import annotations

from typing import Any


def _dict(value: Any) -> dict:
    return value if isinstance(value, dict) else {}


def _list(value: Any) -> list:
    return value if isinstance(value, list) else []


def _settings(manifest: dict) -> dict[str, dict]:
    items = _list(_dict(manifest.get("contributes")).get("settings"))
    return {str(s.get("key")): s for s in items if isinstance(s, dict) and s.get("key")}


def _origins(manifest: dict) -> dict[str, set[str]]:
    """HTTP origins the package (and its inline runtime) may reach, with their methods."""
    found: dict[str, set[str]] = {}
    blocks = [
        _dict(manifest.get("permissions")),
        _dict(_dict(manifest.get("runtime")).get("permissions")),
    ]
    for block in blocks:
        for grant in _list(block.get("http")):
            if isinstance(grant, dict) and isinstance(grant.get("origin"), str):
                methods = {str(m).upper() for m in _list(grant.get("methods"))} or {"GET"}
                found.setdefault(grant["origin"], set()).update(methods)
    return found


def _effects(manifest: dict) -> set[str]:
    effects = _dict(_dict(manifest.get("runtime")).get("effects"))
    return {f"{kind} {p}" for kind in ("reads", "writes") for p in _list(effects.get(kind))}


def _runtime_kind(manifest: dict) -> str:
    runtime = _dict(manifest.get("runtime"))
    return "agent" if "agent" in runtime else "function" if "function" in runtime else ""


def version_changes(older: dict[str, Any], newer: dict[str, Any]) -> list[str]:
    """Sentences for the changes from `older` to `newer` a player or staff member would care
    about: permissions first (widening is what approval is about), then settings and the rest."""
    older, newer = _dict(older), _dict(newer)
    lines: list[str] = []
    old_origins, new_origins = _origins(older), _origins(newer)
    for origin, methods in sorted(new_origins.items()):
        if origin not in old_origins:
            lines.append(
                f"Permissions widened: may now send {', '.join(sorted(methods))} to {origin}."
            )
        elif methods - old_origins[origin]:
            extra = ", ".join(sorted(methods - old_origins[origin]))
            lines.append(f"Permissions widened: may now also send {extra} to {origin}.")
    for origin in sorted(set(old_origins) - set(new_origins)):
        lines.append(f"Permissions narrowed: no longer reaches {origin}.")
    if newer.get("entry") and not older.get("entry"):
        lines.append("Permissions widened: now runs its own code in the plugin host.")
    for effect in sorted(_effects(newer) - _effects(older)):
        lines.append(f"Permissions widened: its runtime now {effect}.")
    if _runtime_kind(newer) == "agent" and _runtime_kind(older) != "agent":
        lines.append("Now calls a language model.")
    old_settings, new_settings = _settings(older), _settings(newer)
    for key in new_settings.keys() - old_settings.keys():
        label = new_settings[key].get("label") or key
        lines.append(f"Setting added: {label} ({key}).")
    for key in old_settings.keys() - new_settings.keys():
        lines.append(f"Setting removed: {old_settings[key].get('label') or key} ({key}).")
    for key in sorted(old_settings.keys() & new_settings.keys()):
        if old_settings[key].get("default") != new_settings[key].get("default"):
            lines.append(
                f"Setting {key}: default {old_settings[key].get('default')!r} → "
                f"{new_settings[key].get('default')!r}."
            )
    if older.get("description") != newer.get("description") and newer.get("description"):
        lines.append("Description changed.")
    return lines


def package_version_history(package: Any) -> list[dict[str, Any]]:
    """The versions seen before the installed one, newest first, each with the changes the
    version after it brought (one query)."""
    rows = list(package.past_versions.all())
    history = []
    newer_manifest = package.manifest
    for row in rows:
        history.append(
            {
                "version": row.version,
                "content_hash": row.content_hash,
                "seen_at": row.first_seen_at,
                "replaced_at": row.replaced_at,
                "changes": version_changes(row.manifest, newer_manifest),
            }
        )
        newer_manifest = row.manifest
    # What each past version brought over the one before it (None for the oldest one seen).
    for index, entry in enumerate(history):
        entry["introduced"] = history[index + 1]["changes"] if index + 1 < len(history) else None
    return history
