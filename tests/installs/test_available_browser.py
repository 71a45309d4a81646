"""The community directory's entries in the catalogue, in a real browser (Debian Chromium): the
live search finds an available entry beside an installed package, its detail page says what the
directory says, and staff's Install button opens the preview of its files (served over loopback
git, nothing written). Screenshots at 1280 and 390 px go to var/screenshots/ for review; this
lives beside the installs page tests because it needs their git server fixture."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from install_archives import plugin_files

SCREENSHOTS = Path(__file__).resolve().parents[2] / "var" / "screenshots"
# The registry schema's shape, enough for these entries (the validator accepts any schema).
SCHEMA = {"type": "object", "required": ["id", "name", "description", "repository", "ref"]}


def entry(entry_id: str, repository: str, **changes: str) -> dict:
    return {
        "id": entry_id,
        "name": entry_id.replace("-", " ").title(),
        "description": f"The {entry_id} package.",
        "maintainer": "community",
        "author": "Ada",
        "repository": repository,
        "path": f"plugins/{entry_id}",
        "ref": "main",
        "category": "tools",
        "locales": ["en-US"],
        "license": "MIT",
        "covelVersion": ">=0.0.45",
        "status": "active",
        "demo": None,
        "notes": "Works best with a dark scene.",
        **changes,
    }


@pytest.mark.browser
@pytest.mark.parametrize("width", [1280, 390])
def test_an_available_entry_is_found_beside_installed_ones_and_staff_install_it(
    width, page, live_server, log_in, bob, hub_dirs, git_server, tmp_path
):
    from catalogue.services import packages_sync
    from installs.directory import directory_source_set

    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    packages_sync()  # the bundled "dice" is installed
    git_server.repo("pkgs")
    git_server.commit(
        "pkgs", {f"plugins/dice-tower/{k}": v for k, v in plugin_files("dice-tower").items()}
    )
    repository = f"{git_server.url}/pkgs.git"
    registry = tmp_path / "directory" / "registry"
    (registry / "plugins").mkdir(parents=True)
    (registry / "schema.json").write_text(json.dumps(SCHEMA))
    for data in (
        entry("dice-tower", repository, description="Rolls dice <fairly> in a tower."),
        entry("lantern", repository, description="Lights the scene."),
    ):
        (registry / "plugins" / f"{data['id']}.json").write_text(json.dumps(data))
    directory_source_set(kind="folder", location=str(registry.parent))

    page.set_viewport_size({"width": width, "height": 900})
    log_in(page, "bob", "bob-password", "/")
    assert page.locator("[data-available]").count() == 2  # no search yet: both entries
    page.fill("#q", "dice")
    page.wait_for_selector('[data-available="lantern"]', state="detached")  # the live search
    page.wait_for_selector('[data-package="dice"]')
    assert page.locator("[data-available]").count() == 1
    card = page.locator('[data-available="dice-tower"]')
    assert "available" in card.locator(".available-badge").inner_text()
    assert "Rolls dice <fairly> in a tower." in card.inner_text()  # shown as text, escaped
    assert card.locator("button", has_text="Install…").is_visible()
    page.screenshot(path=str(SCREENSHOTS / f"catalogue-available-{width}.png"), full_page=True)

    with page.expect_navigation():
        card.locator("h3 a").click()
    detail = page.locator(".available-detail")
    assert "Works best with a dark scene." in detail.inner_text()
    assert "plugins/dice-tower" in detail.inner_text()
    page.screenshot(
        path=str(SCREENSHOTS / f"catalogue-available-detail-{width}.png"), full_page=True
    )

    with page.expect_navigation():
        detail.locator("button", has_text="Install…").click()
    preview = page.locator("form.preview")
    assert "Ada Author" in preview.inner_text() and "dice-tower" in preview.inner_text()
    assert not (hub_dirs / "dice-tower").exists()  # the preview writes nothing
