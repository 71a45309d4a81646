"""The staff pages in a real browser (Debian Chromium): add a package by link with the preview
before anything is written, then the package page says where it came from and that an update
is available. Screenshots at 1280 and 390 px go to var/screenshots/ for a person to review."""

from __future__ import annotations

from pathlib import Path

import pytest
from install_archives import plugin_files

SCREENSHOTS = Path(__file__).resolve().parents[2] / "var" / "screenshots"


@pytest.mark.parametrize("width", [1280, 390])
def test_add_a_package_by_link_then_see_where_it_came_from(
    width, page, live_server, log_in, bob, hub_dirs, git_server
):
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    git_server.repo("pkgs")
    extra = "permissions:\n  http:\n    - origin: https://api.example.org\n      methods: [GET]\n"
    git_server.commit(
        "pkgs",
        {
            f"plugins/lantern/{k}": v
            for k, v in plugin_files("lantern", code=True, extra=extra).items()
        },
    )
    page.set_viewport_size({"width": width, "height": 900})
    log_in(page, "bob", "bob-password", "/installs/add/")
    page.fill("#link-url", f"{git_server.url}/pkgs.git/tree/main/plugins/lantern")
    with page.expect_navigation():
        page.click("form:has(#link-url) button[type=submit]")
    preview = page.locator("form.preview")
    assert (
        "Ada Author" in preview.inner_text() and "https://api.example.org" in preview.inner_text()
    )
    assert not (hub_dirs / "lantern").exists()  # nothing written before the confirm
    page.screenshot(path=str(SCREENSHOTS / f"installs-preview-{width}.png"), full_page=True)

    # The worker's part runs here, in the test's process: the row is what the page shows.
    from installs.jobs import job_run
    from installs.models import InstallJob

    page.check("input[name=accept_risk]")
    with page.expect_navigation():
        page.click("form.preview button[type=submit]")
    job = InstallJob.objects.get()
    job_run(job_id=job.pk)
    page.wait_for_selector('#install-job[data-state="done"]')

    git_server.commit(
        "pkgs",
        {
            "plugins/lantern/PLUGIN.md": plugin_files(
                "lantern", version="1.2.0", code=True, extra=extra
            )["PLUGIN.md"]
        },
    )
    from installs.remote import update_record

    update_record(package_id="lantern")
    page.goto(f"{live_server.url}/packages/lantern/")
    provenance = page.locator(".provenance").inner_text()
    assert (
        "Installed from" in provenance
        and "follows branch main" in provenance
        and "by bob" in provenance
    )
    assert "update available: version 1.2.0" in provenance
    page.screenshot(path=str(SCREENSHOTS / f"installs-package-{width}.png"), full_page=True)
    page.goto(f"{live_server.url}/installs/")
    page.screenshot(path=str(SCREENSHOTS / f"installs-list-{width}.png"), full_page=True)
    page.goto(f"{live_server.url}/installs/packages/lantern/update/")
    assert "1.0.0" in page.inner_text("form.preview") and "1.2.0" in page.inner_text("form.preview")
    page.screenshot(path=str(SCREENSHOTS / f"installs-update-{width}.png"), full_page=True)
