"""Every bundled package under plugins/ validates (none skipped)."""

from __future__ import annotations

from pathlib import Path

import pytest

from catalogue.manifest import load_package

PLUGINS = Path(__file__).resolve().parents[2] / "plugins"
FOLDERS = sorted(p for p in PLUGINS.iterdir() if p.is_dir()) if PLUGINS.is_dir() else []


def test_there_are_bundled_packages() -> None:
    assert len(FOLDERS) >= 8, FOLDERS


@pytest.mark.parametrize("folder", FOLDERS, ids=[p.name for p in FOLDERS])
def test_each_bundled_package_is_valid(folder: Path) -> None:
    from django.conf import settings

    result = load_package(folder, host_version=settings.COVEL_HOST_VERSION)
    assert result.ok, "\n".join(str(e) for e in result.errors)
    assert result.manifest is not None and result.manifest.id == folder.name
