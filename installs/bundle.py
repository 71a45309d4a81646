"""What a package's files are before they are installed: identity, validity, what it asks.

The files are written to a folder named after the package (the loader's id rule) and judged by
the catalogue's own loader and the approvals' permission set, so an install is held to exactly
the rules a copied folder meets at sync. Nothing here runs package code: the loader reads
manifests, the permission set hashes files.
"""

from __future__ import annotations

import json
import re
import shutil
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from approvals.permissions import describe, permission_set_of
from catalogue.manifest.loader import load_package
from catalogue.manifest.types import thaw
from installs.archive import RECEIPT_FILE, Entry, digest

# Covel's install id rule (packages/shared/src/schemas/plugin-install.ts, pluginInstallIdSchema);
# the hub's loader then holds the id to its own stricter rule (lowercase, digits, hyphens).
INSTALL_ID = re.compile(r"^[a-z0-9][a-z0-9-_]{0,63}$", re.IGNORECASE)
CODE_SUFFIXES = (".js", ".mjs", ".cjs", ".ts", ".tsx", ".mts", ".cts", ".node", ".wasm")


class BundleRefused(Exception):
    def __init__(
        self, message: str, *, code: str, status: int = 400, issues: list[dict] | None = None
    ) -> None:
        super().__init__(message)
        self.message = message
        self.code = code
        self.status = status
        self.issues = issues or []


@dataclass
class Inspection:
    id: str
    version: str | None
    description: str
    author: str | None
    has_server_code: bool
    digest: str
    folder: Path  # where the checked files are (a temporary or staging folder named <id>)
    permissions: dict[str, Any] = field(default_factory=dict)
    asks: list[str] = field(default_factory=list)
    settings: list[str] = field(default_factory=list)
    display_name: str = ""

    def summary(self) -> dict[str, Any]:
        """The preview fields Covel's inspectBundle gives, plus what the hub's preview shows."""
        return {
            "id": self.id,
            "version": self.version,
            "description": self.description,
            "author": self.author,
            "hasServerCode": self.has_server_code,
        }

    def details(self) -> dict[str, Any]:
        return {
            "displayName": self.display_name,
            "asks": self.asks,
            "http": [g["origin"] for g in self.permissions.get("http", [])],
            "settings": self.settings,
            "code": [c["path"] for c in self.permissions.get("code", [])],
        }


def package_json_id(entries: dict[str, bytes]) -> str | None:
    """The id package.json names: the npm basename without its scope and one `plugin-` prefix
    (Covel: `@covel/plugin-dice` and `dice` are the same package). None when there is none."""
    raw = entries.get("package.json")
    if raw is None:
        return None
    try:
        data = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as exc:
        raise BundleRefused(f"package.json: not JSON ({exc})", code="bad-package-json") from exc
    if not isinstance(data, dict):
        raise BundleRefused("package.json: not a JSON object", code="bad-package-json")
    deps = [k for k in ("dependencies", "optionalDependencies", "peerDependencies") if data.get(k)]
    if deps:
        raise BundleRefused(
            f"package.json: /{deps[0]} is not empty; the hub never runs a package manager, so a "
            "package must ship every file it imports",
            code="runtime-dependencies",
        )
    name = data.get("name")
    if not isinstance(name, str) or not name.strip():
        raise BundleRefused("package.json: /name is missing or empty", code="bad-package-json")
    base = name.strip().rsplit("/", 1)[-1]
    return base[len("plugin-") :] if base.startswith("plugin-") else base


def write_entries(entries: Iterable[Entry], folder: Path) -> None:
    folder.mkdir(parents=True, exist_ok=False)
    for entry in entries:
        target = folder / entry.path
        target.parent.mkdir(parents=True, exist_ok=True)
        # O_EXCL: a path written twice (never after check_tree) or through a link fails loudly.
        with open(target, "xb") as handle:
            handle.write(entry.content)


def _frontmatter(raw: bytes) -> dict[str, Any]:
    """The YAML frontmatter of an uploaded PLUGIN.md, read only for its id before anything is
    written ({} when absent or broken: the loader says why once the files are written)."""
    from ruamel.yaml import YAML

    try:
        text = raw.decode("utf-8").removeprefix("\ufeff")
    except UnicodeDecodeError:
        return {}
    lines = text.splitlines()
    if not lines or lines[0].strip() != "---":
        return {}
    for index, line in enumerate(lines[1:], start=1):
        if line.strip() in ("---", "..."):
            try:
                data = YAML(typ="safe", pure=True).load("\n".join(lines[1:index]))
            except Exception:  # a broken file is the loader's finding, not ours
                return {}
            return data if isinstance(data, dict) else {}
    return {}


def declared_id(entries: list[Entry]) -> str:
    files = {e.path: e.content for e in entries}
    if "PLUGIN.md" not in files:
        raise BundleRefused("no PLUGIN.md at the top of the package", code="no-manifest")
    written = _frontmatter(files["PLUGIN.md"]).get("id")
    if not isinstance(written, str) or not INSTALL_ID.match(written):
        raise BundleRefused(
            "PLUGIN.md: /id is missing or not a package id",
            code="bad-id",
            issues=[
                {
                    "file": "PLUGIN.md",
                    "path": "/id",
                    "code": "bad-id",
                    "message": "a package id: letters, digits, - and _, at most 64",
                }
            ],
        )
    from_json = package_json_id(files)
    if from_json is not None and from_json != written:
        raise BundleRefused(
            f"package.json /name names the package {from_json!r} but PLUGIN.md /id says "
            f"{written!r}; they must agree",
            code="id-mismatch",
            issues=[
                {
                    "file": "package.json",
                    "path": "/name",
                    "code": "id-mismatch",
                    "message": f"must name {written!r} (or plugin-{written})",
                }
            ],
        )
    return written


def inspect_entries(
    entries: list[Entry], *, into: Path, reserved: set[str], host_version: str
) -> Inspection:
    """Check identity, write the files to into/<id>, and judge them with the loader.

    On refusal the written folder is removed again; on success the caller owns it."""
    package_id = declared_id(entries)
    if package_id in reserved:
        raise BundleRefused(
            f"{package_id!r} is the id of a package bundled with the hub; it cannot be installed "
            "over it",
            code="reserved-id",
            status=409,
        )
    folder = into / package_id
    write_entries(entries, folder)
    try:
        return _judge(entries, folder, package_id, host_version)
    except BaseException:
        shutil.rmtree(folder, ignore_errors=True)
        raise


def _judge(entries: list[Entry], folder: Path, package_id: str, host_version: str) -> Inspection:
    result = load_package(folder, host_version=host_version)
    if not result.ok or result.manifest is None:
        issues = [i.as_dict() for i in result.errors]
        first = result.errors[0] if result.errors else None
        where = f"{first.file}:{first.path} " if first else ""
        raise BundleRefused(
            f"the package does not validate: {where}{first.message if first else ''} "
            f"[{first.code if first else 'invalid'}]"
            + (f" (and {len(issues) - 1} more)" if len(issues) > 1 else ""),
            code="invalid-package",
            issues=issues,
        )
    data = thaw(result.manifest.data)
    permissions = permission_set_of(result, package_id=package_id)
    author = data.get("author")
    author_name = author.get("name") if isinstance(author, dict) else author
    description = data.get("description") or ""
    settings = (data.get("contributes") or {}).get("settings") or []
    setting_keys = [str(s.get("key") or s.get("id") or "") for s in settings if isinstance(s, dict)]
    has_code = bool(permissions.get("code")) or any(e.path.endswith(CODE_SUFFIXES) for e in entries)
    return Inspection(
        id=package_id,
        version=str(data.get("version")) if data.get("version") is not None else None,
        description=str(description)[:1000],
        author=str(author_name) if author_name else None,
        has_server_code=has_code,
        digest=digest(entries),
        folder=folder,
        permissions=permissions,
        asks=describe(permissions),
        settings=[k for k in setting_keys if k],
        display_name=str(data.get("displayName") or ""),
    )


def receipt_bytes(receipt: dict[str, Any]) -> bytes:
    return (json.dumps(receipt, indent=2, sort_keys=True) + "\n").encode()


__all__ = ["RECEIPT_FILE", "BundleRefused", "Inspection", "inspect_entries", "receipt_bytes"]
