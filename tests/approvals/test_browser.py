"""The approval flow in Debian's Chromium: bob approves from /approvals/, the package page agrees,
alice is refused."""

from __future__ import annotations

import pytest

from approvals.selectors import package_is_usable

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_staff_approve_in_the_browser_and_players_are_refused(
    log_in, live_server, weather, bob, alice, browser
):
    base = live_server.url
    context = browser.new_context()
    page = context.new_page()
    log_in(page, "bob", "bob-password", "/approvals/")
    page.wait_for_url(f"{base}/approvals/")
    card = page.locator("article.approval-card-pending")
    assert card.count() == 1
    assert "https://api.weather.example" in card.inner_text()
    card.locator("input[name=note]").fill("read the entry module")
    # The decision asks first (hub.js data-confirm); dismissed, nothing is decided.
    page.once("dialog", lambda dialog: dialog.dismiss())
    card.locator("button[value=allow]").click()
    assert not package_is_usable(package_id="weather")
    asked = []
    page.once("dialog", lambda dialog: (asked.append(dialog.message), dialog.accept()))
    card.locator("button[value=allow]").click()
    page.wait_for_url(f"{base}/approvals/")
    assert "approved" in page.locator("ul.messages").inner_text()
    assert asked and "weather" in asked[0]
    assert package_is_usable(package_id="weather")

    page.goto(f"{base}/packages/weather/")
    panel = page.locator("[aria-labelledby=approval-panel-title]")
    assert "Approved: sessions may use this package." in panel.inner_text()
    assert "read the entry module" in panel.inner_text()
    context.close()

    player = browser.new_context()
    page = player.new_page()
    log_in(page, "alice", "alice-password", "/approvals/")
    response = page.goto(f"{base}/approvals/")
    assert response is not None and response.status == 403
    player.close()
