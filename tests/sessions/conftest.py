"""Fixtures of the session-core tests: small packages written into tmp_path and loaded for real.

Every package goes through catalogue.manifest.loader.load_package, so the resolver and the
planner only ever see manifests the loader accepts.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from catalogue.manifest.loader import load_package
from catalogue.manifest.types import Manifest

REPO = Path(__file__).resolve().parents[2]
HANDLER = "export default async function handler() { return { outcome: 'success', value: {} }; }\n"

PackageFactory = Callable[..., Manifest]


def _markdown(frontmatter: dict[str, Any], body: str) -> str:
    return f"---\n{json.dumps(frontmatter, indent=1)}\n---\n{body}"


@pytest.fixture
def pkg(tmp_path: Path) -> PackageFactory:
    """pkg(id, **frontmatter, runtimes={name: runtime}, files={path: text}) -> a loaded Manifest.

    A runtime given as a dict without "agent" becomes a function runtime with its own handler.js.
    """

    def make(
        package_id: str,
        *,
        runtimes: dict[str, dict[str, Any]] | None = None,
        files: dict[str, str] | None = None,
        host_version: str = "0.1.0",
        **frontmatter: Any,
    ) -> Manifest:
        root = tmp_path / package_id
        if root.exists():  # hypothesis examples reuse tmp_path: start from an empty folder
            shutil.rmtree(root)
        root.mkdir(parents=True)
        data: dict[str, Any] = {
            "id": package_id,
            "version": "1.0.0",
            "description": f"The {package_id} package.",
        }
        data.update(frontmatter)
        inline = data.get("runtime")
        if isinstance(inline, dict) and "agent" not in inline:
            inline.setdefault("function", {})
            (root / "handler.js").write_text(HANDLER, encoding="utf-8")
        (root / "PLUGIN.md").write_text(_markdown(data, "Do the thing.\n"), encoding="utf-8")
        for name, runtime in (runtimes or {}).items():
            folder = root / "runtimes" / name
            folder.mkdir(parents=True, exist_ok=True)
            if "agent" not in runtime:
                runtime = {**runtime, "function": runtime.get("function", {})}
                (folder / "handler.js").write_text(HANDLER, encoding="utf-8")
            (folder / "RUNTIME.md").write_text(
                _markdown(runtime, f"Prompt of {name}.\n"), encoding="utf-8"
            )
        for relative, text in (files or {}).items():
            target = root / relative
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(text, encoding="utf-8")
        result = load_package(root, host_version=host_version)
        assert result.ok, [str(e) for e in result.errors]
        assert result.manifest is not None
        return result.manifest

    return make


@pytest.fixture(scope="session")
def bundled() -> dict[str, Manifest]:
    """The bundled packages under plugins/, loaded by the real loader."""
    found: dict[str, Manifest] = {}
    for folder in sorted((REPO / "plugins").iterdir()):
        if (folder / "PLUGIN.md").is_file():
            result = load_package(folder)
            assert result.ok, [str(e) for e in result.errors]
            assert result.manifest is not None
            found[result.manifest.id] = result.manifest
    return found
