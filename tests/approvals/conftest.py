"""Fixtures of the approvals tests.

Personas come from tests/conftest.py: alice is a player, bob is staff, anonymous is the client
without a login. Packages are written to tmp_path and indexed as catalogue.models.Package rows
directly, so these tests do not depend on the catalogue's sync.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from ruamel.yaml import YAML

from catalogue.models import Package


def _dump_frontmatter(data: dict[str, Any], body: str = "Prompt.\n") -> str:
    import io

    stream = io.StringIO()
    YAML(typ="safe", pure=True).dump(data, stream)
    return f"---\n{stream.getvalue()}---\n{body}"


class PackageFactory:
    """Writes a package folder and upserts its Package row, like a sync would."""

    def __init__(self, root: Path) -> None:
        self.root = root

    def write(
        self,
        package_id: str,
        *,
        manifest: dict[str, Any] | None = None,
        files: dict[str, str] | None = None,
        runtimes: dict[str, dict[str, Any]] | None = None,
        trust: str = Package.Trust.COMMUNITY,
    ) -> Package:
        folder = self.root / package_id
        if folder.exists():
            import shutil

            shutil.rmtree(folder)
        folder.mkdir(parents=True)
        data = {
            "id": package_id,
            "version": "1.0.0",
            "description": "A test package.",
            **(manifest or {}),
        }
        (folder / "PLUGIN.md").write_text(_dump_frontmatter(data), encoding="utf-8")
        for name, frontmatter in (runtimes or {}).items():
            (folder / "runtimes" / name).mkdir(parents=True, exist_ok=True)
            (folder / "runtimes" / name / "RUNTIME.md").write_text(
                _dump_frontmatter(frontmatter), encoding="utf-8"
            )
        for relative, text in (files or {}).items():
            path = folder / relative
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text, encoding="utf-8")
        digest = hashlib.sha256()
        for path in sorted(p for p in folder.rglob("*") if p.is_file()):
            digest.update(path.relative_to(folder).as_posix().encode())
            digest.update(path.read_bytes())
        if "entry" not in data and (folder / "server" / "index.js").is_file():
            data["entry"] = "./server/index.js"  # the loader's default, as the catalogue stores it
        package, _ = Package.objects.update_or_create(
            package_id=package_id,
            defaults={
                "version": data["version"],
                "description": data["description"],
                "source_dir": str(folder),
                "trust": trust,
                "state": Package.State.LOADED,
                "content_hash": digest.hexdigest(),
                "manifest": json.loads(json.dumps(data)),
            },
        )
        return package


@pytest.fixture
def packages(tmp_path: Path) -> PackageFactory:
    return PackageFactory(tmp_path / "plugins")


@pytest.fixture
def synced(packages: PackageFactory) -> Callable[..., Package]:
    """Write a package and run approval_request_sync on it, as the catalogue's sync does."""
    from approvals.services import approval_request_sync

    def make(package_id: str, **kwargs: Any) -> Package:
        package = packages.write(package_id, **kwargs)
        approval_request_sync(package=package)
        return package

    return make


WEATHER_ENTRY = "export default function register(covel) { /* forecast */ }\n"


@pytest.fixture
def weather(synced: Callable[..., Package]) -> Package:
    """A community package with an entry module and one package-level HTTP grant (GET)."""
    return synced(
        "weather",
        manifest={"permissions": {"http": [{"origin": "https://api.weather.example"}]}},
        files={"server/index.js": WEATHER_ENTRY},
    )
