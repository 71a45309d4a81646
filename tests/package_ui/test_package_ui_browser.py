"""Package UI in a real Chromium: the fate-checks and kinship corpus packages' panels and message
blocks appear and refresh over the event stream as turns commit, fit a 390 px phone, follow dark
mode, and a screenshot of each (1280 and 390 px, light and dark) is saved under var/screenshots/
for a person to review."""

from __future__ import annotations

from pathlib import Path

import pytest
from playwright.sync_api import expect
from support import play, ui_session

SCREENSHOTS = Path(__file__).resolve().parents[2] / "var" / "screenshots"
WORLD_IR = ("hub-world-ir", "hub-narrative-v1")

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_panels_and_blocks_refresh_as_turns_commit(page, live_server, alice, log_in):
    session = ui_session(alice, "fate-checks", "kinship", bundled=WORLD_IR)
    log_in(page, "alice", "alice-password", f"/sessions/{session.pk}/")
    checks = page.locator('#package-ui .pui-panel[data-spec="fate-checks-panel"]')
    expect(checks.locator(".pui-empty")).to_have_text(
        "No checks yet. Results appear here when you try something risky."
    )
    expect(page.locator("#play[data-connected=true]")).to_have_count(1)

    page.fill("#message", "I try to pick the lock while Mira watches.")
    page.click("#send")
    turn = page.locator("#story li.turn").last
    block = turn.locator('.pui-message[data-spec="fate-check-result"]')
    expect(block).to_contain_text("I try to pick the lock while Mira watches.")
    expect(block.locator(".pui-badge")).to_have_count(1)
    expect(checks.locator(".pui-card")).to_have_count(1)
    expect(checks.locator(".pui-empty")).to_have_count(0)
    kinship = page.locator('#package-ui .pui-panel[data-spec="kinship"]')
    expect(kinship.locator(".pui-card", has_text="Mira")).to_have_count(1)
    expect(turn.locator('.pui-message[data-spec="kinship-toast"]')).to_contain_text(
        "Affinity changes"
    )

    # Package text is text: markup the player wrote shows as written, never as elements.
    page.fill("#message", "I <b>thank</b> Mira and try to climb.")
    page.click("#send")
    expect(checks.locator(".pui-card")).to_have_count(2)
    last = page.locator("#story li.turn").last.locator(
        '.pui-message[data-spec="fate-check-result"]'
    )
    expect(last).to_contain_text("I <b>thank</b> Mira and try to climb.")
    expect(last.locator("b")).to_have_count(0)
    mira = kinship.locator(".pui-card", has_text="Mira")
    expect(mira.locator("meter")).to_have_attribute("value", "112")  # 2 + 10 = 12, bar = 112


@pytest.mark.parametrize("width", [1280, 390])
@pytest.mark.parametrize("scheme", ["light", "dark"])
def test_the_panels_look_right(browser, live_server, alice, log_in, width, scheme):
    session = ui_session(alice, "fate-checks", "kinship", bundled=WORLD_IR)
    play(session, "I try to pick the lock and thank Mira.")
    play(session, "I threaten Tobin, then try to climb the wall.")
    play(session, "I thank Mira and Tobin.")
    context = browser.new_context(viewport={"width": width, "height": 900}, color_scheme=scheme)
    try:
        page = context.new_page()
        page.set_default_timeout(20_000)
        log_in(page, "alice", "alice-password", f"/sessions/{session.pk}/")
        panels = page.locator("#package-ui")
        expect(panels.locator(".pui-panel")).to_have_count(2)
        expect(page.locator(".package-ui-message .pui-message").first).to_be_visible()
        overflow = page.evaluate(
            "document.documentElement.scrollWidth - document.documentElement.clientWidth"
        )
        assert overflow <= 0, f"the page scrolls sideways by {overflow}px at {width}px"
        card = panels.locator(".pui-card").first
        colour = card.evaluate("el => getComputedStyle(el).backgroundColor")
        channels = [
            int(c) for c in colour[colour.index("(") + 1 : colour.index(")")].split(",")[:3]
        ]
        assert (sum(channels) / 3 < 100) == (scheme == "dark"), colour
        # A subtle card does not mute what is in it: only a muted text is muted.
        block = page.locator(".pui-message").first
        bold = block.locator(".pui-text.weight-bold").first.evaluate(
            "el => getComputedStyle(el).color"
        )
        muted = block.locator(".pui-text.variant-muted").first.evaluate(
            "el => getComputedStyle(el).color"
        )
        assert bold != muted
        badge = panels.locator(
            ".pui-badge.tone-green, .pui-badge.tone-red, .pui-badge.tone-purple"
        ).first
        expect(badge).to_be_visible()
        SCREENSHOTS.mkdir(parents=True, exist_ok=True)
        page.locator("#story").scroll_into_view_if_needed()
        page.screenshot(path=SCREENSHOTS / f"package-ui-{width}-{scheme}.png", full_page=True)
        # The parts this issue draws, close up: the story with its blocks, and the panels.
        page.locator("#story").screenshot(
            path=SCREENSHOTS / f"package-ui-{width}-{scheme}-story.png"
        )
        panels.screenshot(path=SCREENSHOTS / f"package-ui-{width}-{scheme}-panels.png")
    finally:
        from django.db import connections

        context.close()
        connections.close_all()
