"""A player in a real Chromium answers a form: it appears live when a turn asks, a bad value
shows its message under the field, the typed values stay, and the fixed answer runs the
follow-up turn."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect
from test_play_forms import sheet_session

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_a_player_fixes_a_refused_answer_and_sees_the_answer_turn(
    page, live_server, log_in, alice, tmp_path
):
    session = sheet_session(tmp_path, alice)
    log_in(page, "alice", "alice-password", next_url=f"/sessions/{session.pk}/")
    expect(page.locator("#play[data-connected=true]")).to_have_count(1)
    expect(page.locator("#asks")).to_be_hidden()
    page.fill("#message", "ask")
    page.click("#send")

    form = page.locator('form.ask[data-interaction="sheet-1"]')
    expect(form.locator(".ask-title")).to_have_text("Your character")
    expect(form.locator(".ask-notice")).to_have_text("Fill in your character.")
    expect(page.locator("#notifications .notification .title")).to_have_text("A bell rings")
    form.get_by_label("Name").fill("Ana")
    form.get_by_label("Strength").fill("16")
    form.get_by_label("Class").select_option("wizard")
    form.get_by_label("Brave").check()
    form.get_by_role("button", name="Create").click()

    # The package's validator says no: the message sits under its field, nothing is lost.
    strength_issue = form.locator('.issue[data-issue-for="strength"]')
    expect(strength_issue).to_have_text("Strength is at most 15.")
    expect(form.get_by_label("Name")).to_have_value("Ana")
    expect(form.get_by_label("Class")).to_have_value("wizard")
    expect(page.locator("#story li.turn")).to_have_count(1)

    form.get_by_label("Strength").fill("12")
    form.get_by_role("button", name="Create").click()
    expect(form.locator(".answered-note")).to_have_text("Answered.")
    expect(strength_issue).to_be_hidden()
    story = page.locator("#story li.turn")
    expect(story).to_have_count(2)
    # The answer turn reads as the answer it is, not as "[Player input] ..." typed by the player.
    expect(story.nth(1).locator(".answer-line")).to_have_text("You answered “Your character”.")
    expect(story.nth(1).locator(".player-line")).to_have_count(0)
    expect(page.locator("#session-turns")).to_have_text("2")

    # After a reload the answered form is gone from the waiting list.
    page.reload()
    expect(page.locator("form.ask")).to_have_count(0)
    expect(page.locator("#story li.turn")).to_have_count(2)
    expect(page.locator("#story li.turn").nth(1).locator(".answer-line")).to_have_text(
        "You answered “Your character”."
    )
    page.goto("about:blank")
    # The closed stream notices at its next keep-alive; let its server thread end while the
    # test database is still there.
    page.wait_for_timeout(3000)
