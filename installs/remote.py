"""Git previews, installs, collections and updates: the signed-token half of the install API.

Each preview fetches the commit a link names now, judges every package folder in it exactly as
an install would (in a throwaway folder outside the catalogue's sight) and signs what staff
see: id, version, the source {repository, commit, path, digest, tracking}. Install fetches that
commit again and refuses (409) when the digest or identity moved or the token expired.
"""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path
from typing import Any

from django.conf import settings
from ruamel.yaml import YAML

from approvals.permissions import diff
from installs import gitsource, tokens
from installs.archive import Entry, read_zip, select
from installs.bundle import inspect_entries
from installs.models import Installation
from installs.services import (
    REFUSALS,
    InstallProblem,
    Progress,
    _problem,
    install_entries,
    installed_root,
    package_mutation,
    reserved_ids,
)
from installs.worlds import (
    world_check_free,
    world_folders,
    world_inspect,
    world_install,
    world_uninstall_quietly,
)

COLLECTION_FILE = "covel-collection.yaml"
COLLECTION_LIMIT = 20


def _fetch(location: gitsource.Location, commit: str, ref: str | None = None) -> list[Entry]:
    try:
        return gitsource.fetch_tree(location, commit, ref_hint=ref)
    except REFUSALS as exc:
        raise _problem(exc, "fetch") from exc


def _inspect(entries: list[Entry]) -> dict[str, Any]:
    """Judge one package's files in a throwaway folder: the preview's facts, or a refusal."""
    with tempfile.TemporaryDirectory(prefix="covel-preview-") as tmp:
        try:
            found = inspect_entries(
                entries,
                into=Path(tmp),
                reserved=reserved_ids(),
                host_version=settings.COVEL_HOST_VERSION,
            )
        except REFUSALS as exc:
            raise _problem(exc, "validate") from exc
        return {
            "summary": found.summary(),
            "details": found.details(),
            "permissions": found.permissions,
            "digest": found.digest,
        }


def _item(
    location: gitsource.Location,
    commit: str,
    tracking: dict,
    directory: str,
    facts: dict,
    *,
    action: str = "install",
    **extra: Any,
) -> dict[str, Any]:
    plugin = {
        **facts["summary"],
        "source": {
            "repository": location.repository,
            "commit": commit,
            "path": directory,
            "digest": facts["digest"],
            "tracking": tracking,
        },
        "expiresAt": tokens.now_ms() + tokens.LIFETIME_MS,
    }
    return {**plugin, "hub": facts["details"], "token": tokens.sign(action, plugin, **extra)}


def _resolve(url: str) -> tuple[gitsource.Location, str, dict]:
    try:
        location = gitsource.parse_location(url)
        commit, tracking = gitsource.resolve(location)
    except REFUSALS as exc:
        raise _problem(exc, "fetch") from exc
    return location, commit, tracking


def github_preview(*, url: str, progress: Progress | None = None) -> dict[str, Any]:
    """POST /api/install/plugin/github/preview: {items} for every package under the link."""
    location, commit, tracking = _resolve(url)
    if progress:
        progress("fetch", 20)
    tree = _fetch(location, commit, tracking.get("ref"))
    try:
        folders = gitsource.package_folders(tree)
    except REFUSALS as exc:
        raise _problem(exc, "validate") from exc
    items = []
    for folder in folders:
        directory = "/".join(p for p in (location.directory, folder) if p)
        facts = _inspect(select(tree, folder))
        items.append(_item(location, commit, tracking, directory, facts))
    return {"items": items}


def _refetch(plugin: dict[str, Any]) -> list[Entry]:
    source = plugin["source"]
    location = (
        gitsource.parse_location(source["repository"])
        if "github.com" in source["repository"]
        else gitsource.Location(source["repository"], source["repository"], None, "")
    )
    tree = _fetch(location, source["commit"], (source.get("tracking") or {}).get("ref"))
    return select(tree, source["path"])


def _verified(token: str, actions: tuple[str, ...]) -> dict[str, Any]:
    try:
        return tokens.verify(token, actions=actions)
    except tokens.TokenRefused as exc:
        raise _problem(exc, "token") from exc


def github_install(*, token: str, actor: Any, progress: Progress | None = None) -> dict[str, Any]:
    """POST /api/install/plugin/github: install exactly what the signed preview showed."""
    signed = _verified(token, ("install",))
    plugin = signed["plugin"]
    if progress:
        progress("fetch", 20)
    entries = _refetch(plugin)
    _verified(token, ("install",))  # consent may have expired while fetching
    inspection, _ = install_entries(
        entries,
        kind=Installation.Kind.GIT,
        source=plugin["source"],
        actor=actor,
        expect={"id": plugin["id"], "digest": plugin["source"]["digest"]},
        progress=progress,
    )
    return {"ok": True, "kind": "plugin", "id": inspection.id, "restartRequired": False}


# --- Collections ----------------------------------------------------------------------------


def _collection_members(data: dict[str, Any], kind: str) -> list[dict[str, Any]]:
    members = data.get(kind)
    if members is None:
        return []
    if not isinstance(members, list):
        raise InstallProblem(f"{COLLECTION_FILE}: /{kind} must be a list", code="bad_collection")
    for index, member in enumerate(members):
        if not isinstance(member, dict) or not isinstance(member.get("path", ""), str):
            raise InstallProblem(
                f"{COLLECTION_FILE}: /{kind}/{index} must be {{path}}", code="bad_collection"
            )
        if any(part in ("", ".", "..") for part in str(member.get("path") or "x").split("/")):
            raise InstallProblem(
                f"{COLLECTION_FILE}: /{kind}/{index}/path must be a relative path without . or "
                ".. segments",
                code="bad_collection",
            )
    return members


def _collection_manifest(entries: list[Entry]) -> dict[str, Any] | None:
    """covel-collection.yaml (Covel's collectionManifestSchema): schemaVersion 1, an id, and 1
    to 20 members in `worlds` and `plugins` together."""
    raw = next((e.content for e in entries if e.path == COLLECTION_FILE), None)
    if raw is None:
        return None
    try:
        data = YAML(typ="safe", pure=True).load(raw.decode("utf-8"))
    except Exception as exc:
        raise InstallProblem(f"{COLLECTION_FILE}: not YAML ({exc})", code="bad_collection") from exc
    if (
        not isinstance(data, dict)
        or data.get("schemaVersion") != 1
        or not isinstance(data.get("id"), str)
    ):
        raise InstallProblem(
            f"{COLLECTION_FILE}: /schemaVersion must be 1 and /id a string", code="bad_collection"
        )
    data["plugins"] = _collection_members(data, "plugins")
    data["worlds"] = _collection_members(data, "worlds")
    count = len(data["plugins"]) + len(data["worlds"])
    if count == 0:
        raise InstallProblem(
            f"{COLLECTION_FILE}: a collection lists at least one world or plugin",
            code="bad_collection",
        )
    if count > COLLECTION_LIMIT:
        raise InstallProblem(
            f"{COLLECTION_FILE}: /worlds and /plugins list {count} packages, over "
            f"{COLLECTION_LIMIT}",
            code="bad_collection",
        )
    return data


def _members(here: list[Entry], manifest: dict[str, Any] | None) -> list[tuple[str, str]]:
    """(kind, folder) of every member: the manifest's (plugins, then worlds), or every plugin and
    world folder found (Covel: "nothing of this kind here" is an empty list)."""
    if manifest:
        return [("plugin", str(m.get("path") or "")) for m in manifest["plugins"]] + [
            ("world", str(m.get("path") or "")) for m in manifest["worlds"]
        ]
    found: list[tuple[str, str]] = []
    try:
        found += [("plugin", f) for f in gitsource.package_folders(here, limit=COLLECTION_LIMIT)]
    except gitsource.SourceError as exc:
        if exc.code != "no-package":
            raise _problem(exc, "validate") from exc
    found += [("world", f) for f in world_folders(here)]
    if not found:
        raise InstallProblem(
            f"no plugin, world or {COLLECTION_FILE} here", code="no_package", details={}
        )
    if len(found) > COLLECTION_LIMIT:
        raise InstallProblem(
            f"{len(found)} packages here, over {COLLECTION_LIMIT}: link a more specific folder",
            code="too_many_packages",
        )
    return found


def _world_facts(entries: list[Entry]) -> dict[str, Any]:
    found = world_inspect(entries)
    return {"summary": found.summary(), "details": found.details(), "digest": found.digest}


def _world_needs(items: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """A world wanting a package neither the collection nor the catalogue has: a warning (the
    hub's sync says the same of such a world, which still loads)."""
    from catalogue.models import Package

    offered = {i["id"] for i in items if i["kind"] == "plugin"}
    wanted = {p for i in items if i["kind"] == "world" for p in i["hub"].get("plugins", [])}
    have = set(Package.objects.filter(package_id__in=wanted).values_list("package_id", flat=True))
    problems = []
    for item in items:
        if item["kind"] != "world":
            continue
        for package_id in item["hub"].get("plugins", []):
            if package_id not in offered and package_id not in have:
                problems.append(
                    {
                        "level": "warning",
                        "message": f"the world {item['id']} wants the package {package_id}, which "
                        "is neither in this collection nor on the hub",
                        "packageId": item["id"],
                    }
                )
    return problems


def collection_preview(*, url: str) -> dict[str, Any]:
    """POST /api/install/github/preview: the collection manifest's members (plugins and worlds),
    or every plugin and world folder under the link."""
    location, commit, tracking = _resolve(url)
    tree = _fetch(location, commit, tracking.get("ref"))
    here = select(tree, "")
    manifest = _collection_manifest(here)
    problems: list[dict[str, Any]] = []
    items = []
    for kind, folder in _members(here, manifest):
        directory = "/".join(p for p in (location.directory, folder) if p)
        try:
            files = select(here, folder)
            facts = _world_facts(files) if kind == "world" else _inspect(files)
        except InstallProblem as exc:
            if manifest:
                raise
            problems.append(
                {
                    "level": "warning",
                    "message": f"the {kind} in {folder or '/'} is left out: {exc.message}",
                }
            )
            continue
        action = "world-install" if kind == "world" else "install"
        item = _item(location, commit, tracking, directory, facts, action=action)
        items.append({**item, "kind": kind})
    if not items:
        raise InstallProblem(
            problems[0]["message"] if problems else "nothing here can be installed",
            code="no_package",
        )
    problems += _world_needs(items)
    collection = None
    if manifest:
        collection = {
            "id": manifest["id"],
            "name": manifest.get("name") or manifest["id"],
            "version": manifest.get("version"),
            "author": manifest.get("author"),
        }
    return {"collection": collection, "items": items, "problems": problems}


# One prepared member of a batch: (kind, files, install kind, source, expected id and digest).
Prepared = tuple[str, list[Entry], str, dict, dict]


def _install_all(prepared: list[Prepared], actor: Any) -> dict[str, Any]:
    """Install several packages as a unit, as Covel's installPrepared: refused before the first
    write if any target is taken; plugins first, then worlds; a failure while writing removes
    what this call installed."""
    from installs.services import _check_free, uninstall

    keys = [(kind, expect["id"]) for kind, _files, _how, _source, expect in prepared]
    if len(set(keys)) != len(keys):
        raise InstallProblem("a package is listed twice", code="duplicate")
    for kind, package_id in keys:
        if kind == "world":
            world_check_free(package_id)
        else:
            _check_free(package_id, updating=False)
    done: list[tuple[str, str]] = []
    try:
        for wanted in ("plugin", "world"):
            for kind, files, how, source, expect in prepared:
                if kind != wanted:
                    continue
                if kind == "world":
                    world = world_install(files, source=source, actor=actor, expect=expect)
                    done.append(("world", world.id))
                else:
                    inspection, _ = install_entries(
                        files, kind=how, source=source, actor=actor, expect=expect
                    )
                    done.append(("plugin", inspection.id))
    except BaseException:
        for kind, package_id in reversed(done):
            if kind == "world":
                world_uninstall_quietly(package_id)
            else:
                uninstall(package_id=package_id, detach=True)
        raise
    return {
        "ok": True,
        "installed": [{"kind": kind, "id": i} for kind, i in done],
        "restartRequired": False,
    }


def batch_install(*, tokens_in: list[str], actor: Any) -> dict[str, Any]:
    """POST /api/install/github/batch: 1 to 20 preview tokens (plugins and worlds), all or
    nothing."""
    if not 1 <= len(tokens_in) <= COLLECTION_LIMIT:
        raise InstallProblem(f"send 1 to {COLLECTION_LIMIT} tokens", code="bad_request")
    actions = ("install", "world-install")
    signed = [_verified(t, actions) for t in dict.fromkeys(tokens_in)]
    prepared: list[Prepared] = []
    for one in signed:
        plugin = one["plugin"]
        kind = "world" if one.get("action") == "world-install" else "plugin"
        expect = {"id": plugin["id"], "digest": plugin["source"]["digest"]}
        prepared.append((kind, _refetch(plugin), Installation.Kind.GIT, plugin["source"], expect))
    for token in tokens_in:
        _verified(token, actions)  # consent may have expired while fetching
    return _install_all(prepared, actor)


def collection_zip_install(*, data: bytes, filename: str, actor: Any) -> dict[str, Any]:
    """POST /api/install/collection: a ZIP with covel-collection.yaml and every member (plugins
    and worlds). No preview step, so every member is judged here before anything is written."""
    from installs.archive import digest

    try:
        entries = read_zip(data)
    except REFUSALS as exc:
        raise _problem(exc, "unpack") from exc
    manifest = _collection_manifest(entries)
    if manifest is None:
        raise InstallProblem(
            f"{COLLECTION_FILE} must be at the top of the ZIP", code="bad_collection"
        )
    prepared: list[Prepared] = []
    for kind in ("plugins", "worlds"):
        for member in manifest[kind]:
            if "repository" in member:
                raise InstallProblem(
                    f"a collection ZIP holds every member; {member['repository']} is elsewhere",
                    code="bad_collection",
                )
            files = select(entries, str(member.get("path") or ""))
            facts = _world_facts(files) if kind == "worlds" else _inspect(files)
            source = {
                "kind": "zip",
                "filename": filename[:200],
                "path": member.get("path") or "",
                "digest": digest(files),
            }
            prepared.append(
                (
                    kind[:-1],
                    files,
                    Installation.Kind.ZIP,
                    source,
                    {"id": facts["summary"]["id"], "digest": facts["digest"]},
                )
            )
    return _install_all(prepared, actor)


# --- Updates --------------------------------------------------------------------------------


def _installed_entries(package_id: str) -> list[Entry]:
    folder = installed_root() / package_id
    out = []
    for path in sorted(folder.rglob("*")):
        if path.is_file() and not path.is_symlink():
            rel = path.relative_to(folder).as_posix()
            if rel != ".covel-install.json":
                out.append(Entry(rel, path.read_bytes()))
    return out


def update_check(*, package_id: str, url: str | None = None) -> dict[str, Any]:
    """POST /api/install/plugin/github/update/preview: current, pinned, or available + preview."""
    row = Installation.objects.filter(package_id=package_id).first()
    if row is None:
        raise InstallProblem(
            f"{package_id} was not installed by the hub", status=404, code="not_found"
        )
    if row.kind != Installation.Kind.GIT:
        raise InstallProblem(
            f"{package_id} came from a ZIP; upload the new ZIP instead",
            status=409,
            code="no_source",
        )
    source = row.source
    tracking = source.get("tracking") or {}
    if url:
        location, commit, tracking = _resolve(url)
        if location.repository != source["repository"] or location.directory != source["path"]:
            raise InstallProblem(
                "an update link must name the installed repository and folder",
                status=409,
                code="other_source",
            )
    else:
        if tracking.get("kind") == "pinned":
            return {"status": "pinned"}
        base = source["repository"]
        if tracking.get("kind") == "branch":
            link = (
                f"{base}#{tracking['ref']}:{source['path']}"
                if "github.com" not in base
                else f"{base}/tree/{tracking['ref']}/{source['path']}".rstrip("/")
            )
        else:
            link = base if "github.com" in base else f"{base}#:{source['path']}"
        location, commit, _ = _resolve(link)
        location = gitsource.Location(
            location.remote, location.repository, location.ref, source["path"]
        )
    # fetch_tree already keeps only the package's folder (the location's directory).
    entries = _fetch(location, commit, tracking.get("ref"))
    facts = _inspect(entries)
    if facts["summary"]["id"] != package_id:
        raise InstallProblem(
            "the update names another package id", status=409, code="identity_changed"
        )
    if facts["digest"] == source["digest"]:
        return {"status": "current"}
    before = {e.path: e.content for e in _installed_entries(package_id)}
    after = {e.path: e.content for e in entries}
    changes = {
        "added": sorted(set(after) - set(before)),
        "modified": sorted(p for p in after if p in before and before[p] != after[p]),
        "removed": sorted(set(before) - set(after)),
    }
    previous = {"version": row.version, "source": source}
    item = _item(
        location, commit, tracking, source["path"], facts, action="update", previous=previous
    )
    widened = _widened(package_id, facts["permissions"])
    old_settings = set(_settings_of(package_id))
    item["hub"]["settingsAdded"] = [
        k for k in facts["details"]["settings"] if k not in old_settings
    ]
    item["hub"]["widened"] = widened
    return {"status": "available", "preview": {**item, "previous": previous, "changes": changes}}


def _settings_of(package_id: str) -> list[str]:
    from catalogue.models import Setting

    return list(
        Setting.objects.filter(package__package_id=package_id).values_list("key", flat=True)
    )


def _widened(package_id: str, requested: dict[str, Any]) -> list[str]:
    from approvals.selectors import approval_current

    current = approval_current(package_key=package_id)
    rows = diff(requested, current.permissions if current else None)
    return [r["what"] for part in rows.values() for r in part if r["widens"]]


def update_apply(*, token: str, actor: Any, progress: Progress | None = None) -> dict[str, Any]:
    """POST /api/install/plugin/github/update: replace the files and re-index (a new approval)."""
    signed = _verified(token, ("update",))
    plugin, previous = signed["plugin"], signed["previous"]
    row = Installation.objects.filter(package_id=plugin["id"]).first()
    if row is None or row.source != previous["source"]:
        raise InstallProblem(
            "the installed package changed since the preview; check again",
            status=409,
            code="installation_changed",
        )
    entries = _refetch(plugin)
    _verified(token, ("update",))
    install_entries(
        entries,
        kind=Installation.Kind.GIT,
        source=plugin["source"],
        actor=actor,
        updating=True,
        expect={"id": plugin["id"], "digest": plugin["source"]["digest"]},
        progress=progress,
    )
    return {"ok": True, "kind": "plugin", "id": plugin["id"], "restartRequired": False}


def update_record(*, package_id: str) -> dict[str, Any]:
    """The beat task's and the button's check: remember what an update would bring."""
    from django.utils import timezone

    row = Installation.objects.get(package_id=package_id)
    pending: dict[str, Any] | None
    try:
        found = update_check(package_id=package_id)
    except InstallProblem as exc:
        pending = (
            {"version": None, "source": row.source, "error": exc.message}
            if exc.status != 409 or exc.code != "no_source"
            else None
        )
    else:
        pending = None
        if found["status"] == "available":
            preview = found["preview"]
            pending = {"version": preview["version"], "source": preview["source"], "error": None}
    Installation.objects.filter(pk=row.pk).update(pending_update=pending, checked_at=timezone.now())
    return {"id": package_id, "pendingUpdate": pending}


def update_cancel(*, package_id: str) -> dict[str, Any]:
    """DELETE /api/install/plugin/github/update/{id}: forget the update the last check found."""
    with package_mutation(package_id):
        updated = (
            Installation.objects.filter(package_id=package_id)
            .exclude(pending_update=None)
            .update(pending_update=None)
        )
    if not updated:
        raise InstallProblem(f"no pending update for {package_id}", status=404, code="not_found")
    return {"ok": True}


def remove_tree(path: Path) -> None:
    shutil.rmtree(path, ignore_errors=True)
