"""A collection's worlds: judged and installed as Covel installs them, into the hub's worlds.

Covel (apps/server/src/routes/api/install/github-collection.ts) previews a collection's worlds
beside its plugins, each with its own signed token (action "world-install"), and installs them
after the plugins, as one unit: a world whose id is taken refuses the whole batch before
anything is written, and a failure removes what the call installed. A world is judged by
github-world.ts `inspectWorldBundle`: world.yaml at the member's top with a world id, no
installation receipt of its own, and the real loader run on the files in a throwaway folder.

The hub holds a world to its own world rules (worlds/: world.yaml, characters, lorebook, field
definitions; docs/worlds.md) by the same checks its sync makes, and to the archive and
hostile-file rules every package meets (installs/archive.py). A world carries no code, so it
needs no approval: once placed (one rename out of a dot-named staging folder) it is indexed
at once into the worlds list. Its provenance is written next to it in `.covel-install.json`.
"""

from __future__ import annotations

import os
import shutil
import tempfile
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from django.conf import settings
from django.utils import timezone
from ruamel.yaml import YAML

from installs.archive import RECEIPT_FILE, ArchiveRefused, Entry, check_tree, digest
from installs.bundle import BundleRefused, receipt_bytes, write_entries
from installs.services import STAGING_PREFIX, InstallProblem, _problem, package_mutation
from worlds.file_checks import ID_HINT, ID_RE
from worlds.world_file import WORLD_FILE

WORLD_ID_MAX = 100  # the worlds' id column


@dataclass
class WorldInspection:
    id: str
    version: str | None
    name: str
    description: str
    author: str | None
    plugins: list[str]
    digest: str

    def summary(self) -> dict[str, Any]:
        """The preview fields Covel's inspectWorldBundle gives (a world has no server code)."""
        return {
            "id": self.id,
            "version": self.version,
            "description": self.description,
            "author": self.author,
            "hasServerCode": False,
        }

    def details(self) -> dict[str, Any]:
        """What the hub's preview shows beside them (the same keys as a plugin's)."""
        return {
            "displayName": self.name,
            "asks": [f"wants the packages {', '.join(self.plugins)}"] if self.plugins else [],
            "http": [],
            "settings": [],
            "code": [],
            "plugins": self.plugins,
        }


def installed_worlds_root() -> Path:
    root = Path(settings.COVEL_INSTALLED_WORLDS_DIR)
    root.mkdir(parents=True, exist_ok=True)
    return root


def _refused(message: str, code: str, *, issues: list[dict] | None = None) -> InstallProblem:
    return _problem(BundleRefused(message, code=code, issues=issues), "validate")


def _declared_id(entries: list[Entry]) -> str:
    files = {e.path: e.content for e in entries}
    if WORLD_FILE not in files:
        raise _refused(f"no {WORLD_FILE} at the top of the world", "no-world")
    try:
        data = YAML(typ="safe", pure=True).load(files[WORLD_FILE].decode("utf-8"))
    except Exception as exc:  # any YAML or decoding error: the message names the file
        raise _refused(f"{WORLD_FILE}: not YAML ({exc})", "invalid-world") from exc
    world_id = data.get("id") if isinstance(data, dict) else None
    # Covel requires the id in world.yaml to install a world: it names the world's folder.
    if not isinstance(world_id, str) or not ID_RE.match(world_id) or len(world_id) > WORLD_ID_MAX:
        raise _refused(
            f"{WORLD_FILE}: /id is missing or not a world id ({ID_HINT}); an installed world's "
            "id names its folder",
            "bad-id",
            issues=[{"file": WORLD_FILE, "path": "/id", "code": "bad-id", "message": ID_HINT}],
        )
    return world_id


def _judge(entries: list[Entry], folder: Path, world_id: str) -> WorldInspection:
    from worlds.services import world_check_folder
    from worlds.world_file import read_world

    errors = world_check_folder(folder=folder)
    if errors:
        first = errors[0]
        issues = [i.as_dict() for i in errors]
        raise _refused(
            f"the world does not validate: {first.file}:{first.path} {first.message} "
            f"[{first.code}]" + (f" (and {len(issues) - 1} more)" if len(issues) > 1 else ""),
            "invalid-world",
            issues=issues,
        )
    data = read_world(folder).data
    author = data.get("author")
    return WorldInspection(
        id=world_id,
        version=data.get("version"),
        name=data.get("name", ""),
        description=str(data.get("description", ""))[:1000],
        author=author.get("name") if isinstance(author, dict) else None,
        plugins=list(data.get("plugins", [])),
        digest=digest(entries),
    )


def world_folders(entries: list[Entry], *, limit: int = 20) -> list[str]:
    """The world folders of a tree, as Covel's findWorldDirectories: the tree itself when it has
    a world.yaml, else every folder holding one (hidden folders and node_modules skipped)."""
    paths = {e.path for e in entries}
    if WORLD_FILE in paths:
        return [""]
    found = sorted(
        p[: -len(WORLD_FILE) - 1]
        for p in paths
        if p.endswith(f"/{WORLD_FILE}")
        and not any(s.startswith(".") or s == "node_modules" for s in p.split("/"))
    )
    if len(found) > limit:
        raise InstallProblem(
            f"{len(found)} worlds here, over {limit}: link a more specific world folder",
            code="too_many_packages",
        )
    return found


def world_inspect(entries: list[Entry], *, into: Path | None = None) -> WorldInspection:
    """Check a world's files (the archive rules, its id, the sync's checks) in into/<id>, or in
    a throwaway folder when into is None (a preview). Nothing of it runs: a world has no code."""
    try:
        entries = check_tree(entries)
    except ArchiveRefused as exc:
        raise _problem(exc, "validate") from exc
    world_id = _declared_id(entries)
    if into is not None:
        write_entries(entries, into / world_id)
        return _judge(entries, into / world_id, world_id)
    with tempfile.TemporaryDirectory(prefix="covel-world-preview-") as tmp:
        write_entries(entries, Path(tmp) / world_id)
        return _judge(entries, Path(tmp) / world_id, world_id)


def world_check_free(world_id: str) -> None:
    """Covel: "The world <id> is already installed; nothing was changed" (409)."""
    from worlds.models import World

    taken = World.objects.filter(world_id=world_id).exists()
    if taken or (installed_worlds_root() / world_id).exists():
        raise InstallProblem(
            f"the world {world_id} is already installed; nothing was changed",
            status=409,
            code="already_installed",
        )


def world_install(
    entries: list[Entry], *, source: dict[str, Any], actor: Any, expect: dict[str, str]
) -> WorldInspection:
    """Check, stage, place and index one world; a failure leaves no folder and no row."""
    from worlds.services import world_forget, world_index_one

    root = installed_worlds_root()
    staging = root / f"{STAGING_PREFIX}{os.getpid()}-{uuid.uuid4().hex[:8]}"
    staging.mkdir()
    try:
        inspection = world_inspect(entries, into=staging)
        if inspection.id != expect.get("id"):
            raise InstallProblem(
                "the world's identity changed; preview again", status=409, code="identity_changed"
            )
        if inspection.digest != expect.get("digest"):
            raise InstallProblem(
                "the world's files changed; preview again", status=409, code="content_changed"
            )
        # The lock's namespace is the world's, so a world and a package may share an id.
        with package_mutation(f"world.{inspection.id}"):
            world_check_free(inspection.id)
            folder = staging / inspection.id
            receipt = {
                "kind": "world",
                "source": source,
                "version": inspection.version,
                "installedAt": timezone.now().isoformat(),
                "installedBy": getattr(actor, "username", "") or "",
            }
            (folder / RECEIPT_FILE).write_bytes(receipt_bytes(receipt))
            final = root / inspection.id
            os.rename(folder, final)
            try:
                result = world_index_one(folder=final)
                if result.errors:  # judged above; a change on disk in between is refused
                    raise InstallProblem(
                        f"the world {inspection.id} did not index: {result.errors[0].message}",
                        code="invalid_world",
                        details={"step": "index"},
                    )
            except BaseException:
                world_forget(world_id=inspection.id)
                shutil.rmtree(final, ignore_errors=True)
                raise
        return inspection
    finally:
        shutil.rmtree(staging, ignore_errors=True)


def world_uninstall_quietly(world_id: str) -> None:
    """Undo a world this call installed (a later member of the same batch failed)."""
    from worlds.services import world_forget

    world_forget(world_id=world_id)
    shutil.rmtree(installed_worlds_root() / world_id, ignore_errors=True)
