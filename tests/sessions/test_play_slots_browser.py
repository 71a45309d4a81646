"""A UI slot in a real Chromium: the status-panel corpus package's ui.slot@1 provider fills
session.summary@1, and the page fetches the slot again when its watched namespace changes."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from playwright.sync_api import expect

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "covel_corpus"))

from corpus_support import corpus_session  # noqa: E402

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_the_status_slot_refreshes_when_its_namespace_changes(page, live_server, alice, log_in):
    session = corpus_session(alice, "status-panel")
    log_in(page, "alice", "alice-password", f"/sessions/{session.pk}/")
    slot = page.locator('#ui-slots .ui-slot[data-slot="session.summary@1"]')
    expect(slot).to_have_attribute("data-watch", "status-panel/status")
    expect(slot.locator(".slot-entries")).to_have_text("Nothing to show yet.")
    expect(page.locator("#play[data-connected=true]")).to_have_count(1)

    page.fill("#message", "I run to the docks.")
    page.click("#send")
    stamina = slot.locator('[data-entry="stamina"]')
    expect(stamina.locator(".value")).to_have_text("7 / 10")
    expect(stamina.locator("meter")).to_have_attribute("value", "7")
    expect(slot.locator('[data-entry="last-action"] .value')).to_have_text("I run to the docks.")
    expect(slot).to_have_attribute("data-refreshed", "1")

    # Plugin text is text: markup the player wrote is shown, never rendered.
    page.fill("#message", "I <b>rest</b> by the fire.")
    page.click("#send")
    expect(slot.locator('[data-entry="turn"] .value')).to_have_text("2")
    expect(stamina.locator(".value")).to_have_text("9 / 10")
    last = slot.locator('[data-entry="last-action"] .value')
    expect(last).to_have_text("I <b>rest</b> by the fire.")
    expect(last.locator("b")).to_have_count(0)

    # A provider that fails leaves an error note in the slot instead of its entries.
    page.fill("#message", "A glitch in the lights.")
    page.click("#send")
    expect(slot.locator(".slot-error")).to_contain_text("status-panel/status could not be shown")
    expect(slot.locator(".slot-error")).to_contain_text("the status panel glitched")
