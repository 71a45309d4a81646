"""Writes of the worlds app: indexing world folders, saving presets and player values."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from django.core.exceptions import PermissionDenied
from django.db import transaction
from ruamel.yaml.error import YAMLError

from catalogue.manifest.types import Issue
from catalogue.models import Package
from worlds import selectors
from worlds.characters_file import CharactersFile, read_characters
from worlds.data_files import (
    DataFile,
    character_field_warnings,
    read_character_schema,
    read_lorebook,
)
from worlds.fields import FieldError, check_values, fields_from_manifest
from worlds.models import SessionPluginSettings, World
from worlds.world_file import (
    MISSING_PRESET,
    WORLD_FILE,
    PresetConflict,
    WorldFile,
    merge_plugin_settings,
    read_world,
)

if TYPE_CHECKING:
    from django.contrib.auth.models import AbstractBaseUser, AnonymousUser

    from worlds.selectors import Session


class SettingsInvalid(Exception):
    """Some values did not pass their fields' validation; `errors` lists every one."""

    def __init__(self, errors: list[FieldError]) -> None:
        super().__init__("; ".join(f"{e.key}: {e.message}" for e in errors))
        self.errors = errors


class WorldFileError(Exception):
    """The world's world.yaml could not be rewritten; nothing was saved.

    The message names the file relative to the world folders (`harbor/world.yaml`), never the
    server's absolute path.
    """


class WorldFileConflict(WorldFileError):
    """A key the save names was edited by hand in world.yaml since the hub read it."""


def _shown(value: Any) -> str:
    return "(not set)" if value is MISSING_PRESET else repr(value)


def _file_problem(world_id: str, exc: BaseException) -> str:
    # An OSError's str() carries the absolute path of the file it failed on; strerror does not.
    reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
    return f"cannot write {world_id}/{WORLD_FILE}: {reason}"


# --- Indexing world folders -----------------------------------------------------------------


@dataclass
class WorldSyncResult:
    world_id: str
    path: str
    action: str  # created, updated, unchanged, error, duplicate, missing
    errors: list[Issue] = field(default_factory=list)
    warnings: list[Issue] = field(default_factory=list)


@dataclass
class WorldSyncReport:
    results: list[WorldSyncResult] = field(default_factory=list)

    def count(self, action: str) -> int:
        return sum(1 for r in self.results if r.action == action)

    @property
    def has_errors(self) -> bool:
        return any(r.errors for r in self.results)


def _world_folders(dirs: Iterable[Path]) -> Iterable[Path]:
    for root in dirs:
        root = Path(root)
        if not root.is_dir():
            continue
        for child in sorted(root.iterdir()):
            # Hidden folders and Python caches are never worlds.
            if child.is_dir() and not child.name.startswith((".", "_")):
                yield child


def _preset_warnings(parsed: WorldFile) -> list[Issue]:
    """Check the presets against the packages the catalogue holds now.

    Warnings, not errors: the catalogue changes independently of the world file, and a value
    that does not fit is simply skipped when settings are resolved.
    """
    plugins = parsed.data.get("plugins", [])
    presets = parsed.data.get("pluginSettings", {})
    packages = selectors.packages_by_id(package_ids={*plugins, *presets})
    issues: list[Issue] = []
    for i, plugin_id in enumerate(plugins):
        if plugin_id not in packages:
            issues.append(
                Issue(
                    WORLD_FILE,
                    f"/plugins/{i}",
                    "not-in-catalogue",
                    f"package {plugin_id!r} is not loaded in the catalogue",
                )
            )
    slots = selectors.model_slots()
    for plugin_id, values in presets.items():
        package = packages.get(plugin_id)
        if package is None:
            continue
        checked = check_values(
            selectors.package_settings_fields(package=package), values, slots=slots
        )
        for error in checked.errors:
            issues.append(
                Issue(
                    WORLD_FILE,
                    f"/pluginSettings/{plugin_id}/{error.key}",
                    f"preset-{error.code}",
                    f"{plugin_id}.{error.key} {error.message}",
                )
            )
    return issues


def world_sync(*, dirs: Iterable[Path]) -> WorldSyncReport:
    """Index every world folder under `dirs`: idempotent, one result per folder.

    The first folder with a given ID wins (the bundled world-packages/ is listed first); a
    world whose file is broken keeps its last good presets but is marked as an error; a world
    whose folder is gone is marked missing (sessions still point at it).
    """
    report = WorldSyncReport()
    seen: dict[str, str] = {}
    for folder in _world_folders(dirs):
        parsed = read_world(folder)
        if parsed.world_id in seen:
            issue = Issue(
                WORLD_FILE,
                "",
                "duplicate-id",
                f"world {parsed.world_id!r} is already indexed from {seen[parsed.world_id]}",
            )
            report.results.append(
                WorldSyncResult(parsed.world_id, str(folder), "duplicate", errors=[issue])
            )
            continue
        seen[parsed.world_id] = str(folder)
        report.results.append(_world_index(parsed, folder))
    for world in (
        World.objects.exclude(source_dir="")
        .exclude(world_id__in=list(seen))
        .exclude(state=World.State.MISSING)
    ):
        world.state = World.State.MISSING
        world.save(update_fields=["state", "updated_at"])
        report.results.append(WorldSyncResult(world.world_id, world.source_dir, "missing"))
    return report


def _world_index(parsed: WorldFile, folder: Path) -> WorldSyncResult:
    cast = read_characters(folder)
    lore = read_lorebook(folder)
    schema = read_character_schema(folder)
    warnings = [*parsed.warnings, *cast.warnings, *schema.warnings, *lore.warnings]
    warnings += character_field_warnings(cast.characters, schema.records)
    if parsed.ok:
        warnings += _preset_warnings(parsed)
    return _world_store(parsed, cast, schema, lore, warnings)


def world_check_folder(*, folder: Path) -> list[Issue]:
    """Every error the sync would find in this world folder (world.yaml, characters, lorebook,
    field definitions), without storing anything: the installs room judges a world with it."""
    parsed = read_world(folder)
    cast = read_characters(folder)
    lore = read_lorebook(folder)
    schema = read_character_schema(folder)
    return [*parsed.errors, *cast.errors, *schema.errors, *lore.errors]


def world_index_one(*, folder: Path) -> WorldSyncResult:
    """Index one world folder (an installed world), as the full sync would; the rest stay."""
    return _world_index(read_world(folder), folder)


def world_forget(*, world_id: str) -> None:
    """Remove a world row nothing uses yet (an install rolled back)."""
    World.objects.filter(world_id=world_id).delete()


def _world_store(
    parsed: WorldFile,
    cast: CharactersFile,
    schema: DataFile,
    lore: DataFile,
    warnings: list[Issue],
) -> WorldSyncResult:
    """Store one world; an error in any of its files keeps every last good value."""
    all_errors = [*parsed.errors, *cast.errors, *schema.errors, *lore.errors]
    ok = not all_errors
    errors = [i.as_dict() for i in all_errors]
    warning_dicts = [i.as_dict() for i in warnings]
    with transaction.atomic():
        world = World.objects.select_for_update().filter(world_id=parsed.world_id).first()
        created = world is None
        if world is None:
            world = World(world_id=parsed.world_id)
        wanted: dict[str, Any] = {
            "source_dir": parsed.path,
            "content_hash": parsed.content_hash,
            "errors": errors,
            "warnings": warning_dicts,
            "state": World.State.LOADED if ok else World.State.ERROR,
        }
        if ok:
            data = parsed.data
            wanted |= {
                "name": data.get("name", ""),
                "description": data.get("description", ""),
                "author": data.get("author"),
                "plugins": data.get("plugins", []),
                "plugin_settings": data.get("pluginSettings", {}),
                "characters": cast.characters,
                "character_schema": schema.records,
                "lorebook": lore.records,
            }
        elif created:
            wanted["name"] = parsed.world_id
        changed = [name for name, value in wanted.items() if getattr(world, name) != value]
        for name in changed:
            setattr(world, name, wanted[name])
        if created:
            world.save()
        elif changed:
            world.save(update_fields=[*changed, "updated_at"])
    if all_errors:
        action = "error"
    else:
        action = "created" if created else ("updated" if changed else "unchanged")
    return WorldSyncResult(parsed.world_id, parsed.path, action, all_errors, warnings)


def world_set_owner(*, world: World, owner: AbstractBaseUser | None) -> World:
    world.owner = owner
    world.save(update_fields=["owner", "updated_at"])
    return world


# --- Saving values ----------------------------------------------------------------------------


def _checked_changes(
    *, package: Package, values: Mapping[str, Any], stored: Mapping[str, Any]
) -> dict[str, Any]:
    """Validate a {key: value} update (None resets the key); raise with every bad field.

    A null for a stored key the manifest no longer declares is accepted, so stale presets can
    be cleaned up; any other undeclared key is refused.
    """
    if not isinstance(values, Mapping):
        raise SettingsInvalid([FieldError("", "type", "must be an object {key: value}")])
    specs = selectors.package_settings_fields(package=package)
    declared = {spec.key for spec in specs}
    stale = {k: None for k, v in values.items() if v is None and k in stored and k not in declared}
    checked = check_values(
        specs,
        {k: v for k, v in values.items() if k not in stale},
        slots=selectors.model_slots(),
        allow_null=True,
    )
    if not checked.ok:
        raise SettingsInvalid(checked.errors)
    return {**checked.values, **stale}


def _merge(current: Mapping[str, Any], changes: Mapping[str, Any]) -> dict[str, Any]:
    merged = dict(current)
    for key, value in changes.items():
        if value is None:
            merged.pop(key, None)
        else:
            merged[key] = value
    return merged


def world_plugin_settings_update(
    *,
    world: World,
    package: Package,
    values: Mapping[str, Any],
    actor: AbstractBaseUser | AnonymousUser,
) -> World:
    """Set (or, with None, reset) some of a world's presets for one package.

    Keys not named keep their preset. The database row and world.yaml change together: if the
    file cannot be written, nothing is saved.
    """
    if not selectors.world_can_edit(world=world, user=actor):
        raise PermissionDenied(f"you may not edit the presets of world {world.world_id}")
    stored = selectors.world_values(world=world, package_id=package.package_id)
    changes = _checked_changes(package=package, values=values, stored=stored)
    conflict: PresetConflict | None = None
    with transaction.atomic():
        locked = World.objects.select_for_update().get(pk=world.pk)
        presets = dict(locked.plugin_settings or {})
        base = presets.get(package.package_id) or {}
        merged = _merge(base, changes)
        fields = ["plugin_settings", "updated_at"]
        if locked.source_dir:
            # The file, not the row, is the truth for keys this save does not name: a hand edit
            # made since the last sync is kept, and one to a key the save names is a conflict.
            try:
                merged, hash_before, hash_after = merge_plugin_settings(
                    Path(locked.source_dir),
                    package_id=package.package_id,
                    base=base,
                    changes=changes,
                )
            except PresetConflict as exc:
                # Nothing is written, but the hub takes the file's values for this package, so
                # the reloaded page (or the next GET) shows them and a new save can succeed.
                conflict, merged = exc, exc.on_disk
            except (OSError, ValueError, YAMLError) as exc:
                raise WorldFileError(_file_problem(locked.world_id, exc)) from exc
            else:
                # Other hand edits (a name, another package) wait for the next sync: the stored
                # hash moves only when the file was what the hub last read.
                if hash_before == locked.content_hash:
                    locked.content_hash = hash_after
                    fields.append("content_hash")
        if merged:
            presets[package.package_id] = merged
        else:
            presets.pop(package.package_id, None)
        locked.plugin_settings = presets
        locked.save(update_fields=fields)
    world.plugin_settings = locked.plugin_settings
    world.content_hash = locked.content_hash
    if conflict is not None:
        edits = "; ".join(
            f"{key}: the hub had {_shown(had)}, the file now says {_shown(has)}"
            for key, (had, has) in sorted(conflict.keys.items())
        )
        raise WorldFileConflict(
            f"{locked.world_id}/{WORLD_FILE} was edited by hand since the hub read it, so "
            f"nothing was saved ({edits}). Reload to edit the current values."
        )
    return locked


def world_presets_reread(*, world: World, package_id: str) -> None:
    """Take one package's presets from world.yaml as it is now (after a refused stale save), so
    the reloaded page shows the hand edit; the rest of the file waits for the next sync."""
    if not world.source_dir:
        return
    parsed = read_world(Path(world.source_dir))
    if parsed.errors:
        return  # a broken file is the sync's to report; the stored presets stay
    on_disk = parsed.data.get("pluginSettings", {}).get(package_id) or {}
    with transaction.atomic():
        locked = World.objects.select_for_update().get(pk=world.pk)
        presets = dict(locked.plugin_settings or {})
        if on_disk:
            presets[package_id] = dict(on_disk)
        else:
            presets.pop(package_id, None)
        locked.plugin_settings = presets
        locked.save(update_fields=["plugin_settings", "updated_at"])
    world.plugin_settings = locked.plugin_settings


def session_plugin_settings_update(
    *,
    session: Session,
    package: Package,
    values: Mapping[str, Any],
    actor: AbstractBaseUser | AnonymousUser,
) -> SessionPluginSettings | None:
    """Set (or, with None, reset) some of the player's own values for one package."""
    if not selectors.session_can_edit(session=session, user=actor):
        raise PermissionDenied("you may not edit the settings of this session")
    stored = selectors.session_values(session=session, package_id=package.package_id)
    changes = _checked_changes(package=package, values=values, stored=stored)
    with transaction.atomic():
        row, _ = SessionPluginSettings.objects.select_for_update().get_or_create(
            session=session, package_id=package.package_id
        )
        merged = _merge(row.values or {}, changes)
        if not merged:
            row.delete()
            return None
        row.values = merged
        row.save(update_fields=["values", "updated_at"])
    return row


def user_settings_for(
    *,
    package_id: str,
    world: World | None = None,
    session: Session | None = None,
    manifest: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """The resolved settings a runtime of `package_id` receives as ctx.userSettings.

    Each key: the player's session value, else the world's preset, else the manifest default;
    a key with none of them is left out. A session implies its world. An unknown or unloaded
    package has no settings: {}. manifest: the package's manifest as a turn loaded it (its
    settings fields are read from it, not from the catalogue's row).
    """
    if session is not None:
        if world is None:
            world = session.world
        elif world.pk != session.world_id:
            raise ValueError(f"session {session.pk} belongs to another world than {world.world_id}")
    if manifest is None:
        package = selectors.package_get_loaded(package_id=package_id)
        if package is None:
            return {}
        manifest = package.manifest
    resolved = selectors.settings_resolve_fields(
        package_id=package_id, fields=fields_from_manifest(manifest), world=world, session=session
    )
    return {f.field.key: f.value for f in resolved if f.origin != selectors.ORIGIN_UNSET}
