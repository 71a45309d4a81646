"""The permission set of a package: what it asks an admin to approve.

A permission set is plain JSON:

    {"code": [{"path": "server/index.js", "sha256": "<hex>|null", "roles": ["entry module"]}, ...],
     "http": [{"runtime": null | "<qualified runtime id>", "origin": "https://api.example.com",
               "methods": ["GET", "POST"]}, ...]}

code lists every server-code file with the hash of its bytes (sorted by path); http lists every
grant (runtime None = package level, for the entry module and every runtime). This module does no
database work, so the sync, the selectors and the HTTP client share it, and it reads no package
file the loader read: the set is a function of a LoadResult (permission_set_of).
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Iterable, Mapping
from pathlib import Path, PurePosixPath
from typing import Any
from urllib.parse import urlsplit

from catalogue.manifest.package_files import FileRefused, file_sha256
from catalogue.manifest.types import LoadResult, thaw

HTTP_METHODS = ("GET", "POST", "PUT", "PATCH", "DELETE", "HEAD")
DEFAULT_METHODS = ["GET"]
# Files Node can execute: one of them (or a manifest naming server code) makes the package one
# that runs code, and then every file the host could import is part of what staff approve.
CODE_SUFFIXES = (".js", ".mjs", ".cjs", ".ts", ".mts", ".cts", ".wasm", ".node")
# Text the hub reads and the host never gets: manifests, their translations and prompts, notes.
# They are not copied into the approved store, so no code can import them either.
HUB_ONLY_SUFFIXES = (".md",)
HUB_ONLY_DIRS = ("locales/",)

PermissionSet = dict[str, list[dict[str, Any]]]


def empty_set() -> PermissionSet:
    return {"code": [], "http": []}


def is_empty(permissions: Mapping[str, Any]) -> bool:
    return not permissions.get("code") and not permissions.get("http")


def permission_hash(permissions: Mapping[str, Any]) -> str:
    text = json.dumps(permissions, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def normalise_origin(origin: str) -> str:
    """Lower-case scheme and host, default port dropped: "HTTPS://API.x.com:443" -> "https://api.x.com"."""
    text = str(origin).strip()
    try:
        parts = urlsplit(text)
        port = parts.port
    except ValueError:
        return text
    scheme = parts.scheme.lower()
    host = (parts.hostname or "").lower()
    if not scheme or not host:
        return text
    if ":" in host:  # IPv6 literal
        host = f"[{host}]"
    default_port = {"https": 443, "http": 80}.get(scheme)
    if port is None or port == default_port:
        return f"{scheme}://{host}"
    return f"{scheme}://{host}:{port}"


def normalise_methods(methods: Any) -> list[str]:
    if not methods:
        return list(DEFAULT_METHODS)
    if isinstance(methods, str):
        methods = [methods]
    return sorted({str(m).upper() for m in methods}, key=_method_rank)


def _method_rank(method: str) -> tuple[int, str]:
    return (HTTP_METHODS.index(method) if method in HTTP_METHODS else len(HTTP_METHODS), method)


def _grants(entries: Any, runtime: str | None) -> list[dict[str, Any]]:
    grants = []
    if not isinstance(entries, list | tuple):
        return grants
    for entry in entries:
        if not isinstance(entry, Mapping) or not entry.get("origin"):
            continue
        grants.append(
            {
                "runtime": runtime,
                "origin": normalise_origin(entry["origin"]),
                "methods": normalise_methods(entry.get("methods")),
            }
        )
    return grants


def _merge_grants(grants: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
    merged: dict[tuple[str, str], dict[str, Any]] = {}
    for grant in grants:
        key = (grant["runtime"] or "", grant["origin"])
        if key in merged:
            merged[key]["methods"] = normalise_methods([*merged[key]["methods"], *grant["methods"]])
        else:
            merged[key] = dict(grant)
    return [merged[key] for key in sorted(merged)]


def _package_relative(root: Path, base: Path, written: str) -> str:
    """A module path as written in a manifest, made relative to the package root."""
    text = str(written).strip()
    candidate = os.path.normpath(os.path.join(base, text))
    from_root = os.path.normpath(os.path.join(root, text))
    # The loader's normalised paths are relative to the root, a raw RUNTIME.md's to its folder.
    if not os.path.exists(candidate) and os.path.exists(from_root):
        candidate = from_root
    return PurePosixPath(Path(os.path.relpath(candidate, root)).as_posix()).as_posix()


def _file_hash(root: Path, relative: str) -> str | None:
    """A named file the loader's inventory does not hold (missing, outside the package, or in a
    folder the inventory skips such as node_modules/): hashed here, if at all."""
    path = (root / relative).resolve()
    try:
        path.relative_to(root.resolve())
    except ValueError:
        return None  # outside the package: never hashed, never approved by accident
    try:
        return file_sha256(path)  # streamed; FIFOs, devices and oversized files are refused
    except (FileRefused, OSError):
        return None


def is_hub_only(relative: str) -> bool:
    """A file the host is never given (and so never in the approved set)."""
    return relative.lower().endswith(HUB_ONLY_SUFFIXES) or relative.startswith(HUB_ONLY_DIRS)


def http_grants(
    *, manifest: Mapping[str, Any], runtimes: Iterable[tuple[str, Mapping[str, Any]]]
) -> list[dict[str, Any]]:
    """The http part of a permission set from the package's manifest and its runtimes
    ((qualified id, runtime object)), as the catalogue indexed them."""
    grants = _grants((manifest.get("permissions") or {}).get("http"), None)
    for runtime_id, runtime in runtimes:
        grants.extend(_grants((runtime.get("permissions") or {}).get("http"), runtime_id))
    return _merge_grants(grants)


def _runtime_specs(
    result: LoadResult, package_id: str, root: Path, manifest: Mapping[str, Any]
) -> list[tuple[str, Path, Mapping[str, Any]]]:
    """(qualified runtime id, folder its paths are relative to, runtime object) for every runtime,
    as the loader read them: normalised (paths package-relative) for a valid package, as written
    for an invalid one."""
    if result.ok and result.manifest is not None:
        return [(rt.qualified_id, root, thaw(rt.data)) for rt in result.manifest.runtimes]
    specs: list[tuple[str, Path, Mapping[str, Any]]] = []
    inline = manifest.get("runtime")
    if isinstance(inline, Mapping):
        specs.append((package_id, root, inline))
    for name, data in result.raw_runtimes:
        specs.append((f"{package_id}/{name}", root / "runtimes" / name, thaw(data)))
    return specs


def permission_set_of(result: LoadResult, *, package_id: str | None = None) -> PermissionSet:
    """Everything a loaded package asks for: its server-code files (hashed) and its HTTP grants.

    Built from what the loader read and nothing else: the manifest (normalised when valid, the
    raw frontmatter otherwise), its runtimes, and the hashes of the package's files from the
    loader's one read of their bytes (LoadResult.files). package_id: the id the catalogue keys
    the package by (an invalid package's written id may not be one).
    """
    package_id = package_id or result.package_id
    ok = result.ok and result.manifest is not None
    manifest = thaw(result.manifest.data) if ok else thaw(result.raw or {})
    return compute_permission_set(
        package_id=package_id,
        source_dir=result.path,
        manifest=manifest,
        runtimes=_runtime_specs(result, package_id, Path(result.path), manifest),
        files=result.files,
    )


def compute_permission_set(
    *,
    package_id: str,
    source_dir: str,
    manifest: Mapping[str, Any],
    runtimes: Iterable[tuple[str, Path, Mapping[str, Any]]],
    files: Iterable[tuple[str, str | None]],
) -> PermissionSet:
    """The permission set from a manifest, its runtimes ((qualified id, folder, runtime object))
    and the package's files ((path, sha256) as the loader's inventory lists and hashes them).
    No file is read, except one the manifest names that the inventory does not hold."""
    root = Path(source_dir)
    hashes = dict(files)
    roles: dict[str, list[str]] = {}

    def add(relative: str, role: str) -> None:
        bucket = roles.setdefault(relative, [])
        if role not in bucket:
            bucket.append(role)

    entry = manifest.get("entry")
    if not entry and (root / "server" / "index.js").is_file():
        entry = "./server/index.js"
    if isinstance(entry, str) and entry.strip():
        add(_package_relative(root, root, entry), "entry module")

    runtimes = list(runtimes)
    for runtime_id, base, runtime in runtimes:
        function = runtime.get("function")
        if isinstance(function, Mapping) or function is True or function == {}:
            handler = function.get("handler") if isinstance(function, Mapping) else None
            if not handler and (base / "handler.js").is_file():
                handler = "./handler.js"
            if handler:
                add(
                    _package_relative(root, base, handler),
                    f"function handler of runtime {runtime_id}",
                )
        guard = runtime.get("guard")
        if isinstance(guard, str) and guard.strip():
            add(_package_relative(root, base, guard), f"guard of runtime {runtime_id}")

    projections = (manifest.get("contributes") or {}).get("worldProjections") or {}
    if isinstance(projections, Mapping):
        for name, projection in projections.items():
            if isinstance(projection, Mapping) and projection.get("handler"):
                add(
                    _package_relative(root, root, projection["handler"]),
                    f"projection handler {name}",
                )

    # Every other file the host could import is part of the approved set too: any extension,
    # any folder (tests/ included), everything but the hub-only text. The loader's inventory:
    # special files and links out of the package are never opened.
    runs_code = bool(roles) or any(path.endswith(CODE_SUFFIXES) for path in hashes)
    if runs_code:
        for relative in hashes:
            if relative not in roles and not is_hub_only(relative):
                top = relative.split("/", 1)[0]
                if relative.endswith(CODE_SUFFIXES):
                    add(relative, "tool module" if top == "tools" else "module")
                else:
                    add(relative, "file the code can import")

    code = [
        {
            "path": path,
            "sha256": hashes[path] if path in hashes else _file_hash(root, path),
            "roles": roles[path],
        }
        for path in sorted(roles)
    ]
    grants = http_grants(manifest=manifest, runtimes=((r, data) for r, _, data in runtimes))
    return {"code": code, "http": grants}


def grant_covers(
    grants: Iterable[Mapping[str, Any]], *, runtime: str | None, origin: str, method: str
) -> bool:
    """True when a grant lets `runtime` (None: package code) use `method` on `origin`.

    A package-level grant covers the entry module and every runtime; a runtime-level grant covers
    only that runtime.
    """
    for grant in grants:
        if grant["origin"] != origin or method not in grant["methods"]:
            continue
        if grant["runtime"] is None or (runtime is not None and grant["runtime"] == runtime):
            return True
    return False


def is_within(requested: Mapping[str, Any], approved: Mapping[str, Any]) -> bool:
    """True when `requested` is the same as or narrower than `approved`.

    Narrower: every code file (path and hash) was approved, and every (runtime, origin, method)
    was reachable under the approved grants.
    """
    approved_code = {(item["path"], item["sha256"]) for item in approved.get("code", [])}
    for item in requested.get("code", []):
        if item["sha256"] is None or (item["path"], item["sha256"]) not in approved_code:
            return False
    approved_http = approved.get("http", [])
    for grant in requested.get("http", []):
        for method in grant["methods"]:
            if not grant_covers(
                approved_http, runtime=grant["runtime"], origin=grant["origin"], method=method
            ):
                return False
    return True


def describe(permissions: Mapping[str, Any]) -> list[str]:
    """The set in plain language, one sentence per item."""
    lines = []
    for item in permissions.get("code", []):
        what = ", ".join(item["roles"])
        if item["sha256"] and item["roles"] == ["file the code can import"]:
            lines.append(f"Gives its code the file {item['path']} (sha256 {item['sha256'][:12]}…).")
        elif item["sha256"]:
            lines.append(
                f"Runs server code from {item['path']} ({what}; sha256 {item['sha256'][:12]}…)."
            )
        else:
            lines.append(
                f"Names server code {item['path']} ({what}) that is missing or outside the package."
            )
    for grant in permissions.get("http", []):
        who = (
            "The entry module and every runtime"
            if grant["runtime"] is None
            else f"Runtime {grant['runtime']}"
        )
        methods = ", ".join(grant["methods"])
        lines.append(f"{who} may send {methods} requests to {grant['origin']}.")
    return lines


def diff(
    requested: Mapping[str, Any], approved: Mapping[str, Any] | None
) -> dict[str, list[dict[str, Any]]]:
    """Side-by-side rows of what was approved and what is asked now.

    Each row: {"what", "approved", "requested", "status", "widens"}; status is one of unchanged,
    added, removed, changed; widens says whether the row alone needs a new approval.
    """
    approved = approved or empty_set()
    code_rows = []
    old_code = {item["path"]: item for item in approved.get("code", [])}
    new_code = {item["path"]: item for item in requested.get("code", [])}
    for path in sorted(set(old_code) | set(new_code)):
        old, new = old_code.get(path), new_code.get(path)
        if old and new:
            status = "unchanged" if old["sha256"] == new["sha256"] else "changed"
        else:
            status = "added" if new else "removed"
        code_rows.append(
            {
                "what": path,
                "roles": ", ".join((new or old or {}).get("roles", [])),
                "approved": _short(old["sha256"]) if old else "",
                "requested": _short(new["sha256"]) if new else "",
                "status": status,
                "widens": status in ("added", "changed"),
            }
        )
    http_rows = []
    old_http = {(g["runtime"] or "", g["origin"]): g for g in approved.get("http", [])}
    new_http = {(g["runtime"] or "", g["origin"]): g for g in requested.get("http", [])}
    for key in sorted(set(old_http) | set(new_http)):
        old, new = old_http.get(key), new_http.get(key)
        old_methods = old["methods"] if old else []
        new_methods = new["methods"] if new else []
        if old and new:
            status = "unchanged" if old_methods == new_methods else "changed"
        else:
            status = "added" if new else "removed"
        runtime = key[0] or None
        widens = any(
            not grant_covers(approved.get("http", []), runtime=runtime, origin=key[1], method=m)
            for m in new_methods
        )
        http_rows.append(
            {
                "what": f"{'package' if runtime is None else 'runtime ' + runtime}: {key[1]}",
                "runtime": runtime,
                "origin": key[1],
                "approved": ", ".join(old_methods),
                "requested": ", ".join(new_methods),
                "status": status,
                "widens": widens,
            }
        )
    return {"code": code_rows, "http": http_rows}


def _short(sha: str | None) -> str:
    return sha[:12] if sha else "missing"
