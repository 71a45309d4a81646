"""The package page's tabs in Chromium: one panel at a time, the address keeps the tab, Back
returns to the previous one; the README renders with its packaged image."""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import expect

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_tabs_switch_panels_and_back_restores_them(
    viewport_page, live_server, community_dir, fresh_install
):
    page = viewport_page()
    page.goto(f"{live_server.url}/packages/lantern/")
    expect(page.locator("#overview")).to_be_visible()
    expect(page.locator("#details")).to_be_hidden()
    expect(page.locator(".readme h1")).to_have_text("Lantern")
    # The packaged image loads from the package folder.
    assert page.eval_on_selector(".readme img", "img => img.complete && img.naturalWidth") == 1

    page.click("#tab-details")
    expect(page.locator("#details")).to_be_visible()
    expect(page.locator("#overview")).to_be_hidden()
    assert page.url.endswith("#details")
    page.click("#tab-permissions")
    expect(page.locator("#permissions")).to_be_visible()
    expect(page.locator("#tab-permissions")).to_have_attribute("aria-selected", "true")
    page.go_back()
    expect(page.locator("#details")).to_be_visible()
    page.go_back()
    expect(page.locator("#overview")).to_be_visible()

    # A shared link opens on its tab.
    page.goto(f"{live_server.url}/packages/lantern/#versions")
    expect(page.locator("#versions")).to_be_visible()
    expect(page.locator("#versions")).to_contain_text(re.compile(r"1\.0\.0"))


def test_a_refused_save_scrolls_to_the_field(
    viewport_page, live_server, fresh_install, alice, tmp_path
):
    import shutil
    from pathlib import Path

    from django.core.management import call_command

    from worlds.models import World

    folder = tmp_path / "worlds" / "harbor"
    shutil.copytree(
        Path(__file__).resolve().parents[2] / "world-packages" / "harbor-nights", folder
    )
    call_command("sync_worlds", str(folder.parent), verbosity=0)
    World.objects.filter(world_id="harbor").update(owner=alice)

    page = viewport_page(width=390, height=700)
    page.goto(f"{live_server.url}/accounts/login/?next=/worlds/harbor/")
    page.fill("input[name=username]", "alice")
    page.fill("input[name=password]", "alice-password")
    with page.expect_navigation():
        page.click("form.card button[type=submit]")
    page.fill("#panel-rapport-decay", "7")  # outside 0..1
    with page.expect_navigation():
        page.click("#panel-rapport button.save")
    expect(page.locator(".settings-banner")).to_contain_text("Rapport: not saved.")
    field = page.locator("#panel-rapport-decay")
    expect(field).to_be_in_viewport()
    expect(field).to_be_focused()
