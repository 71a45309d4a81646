"""A player in a real Chromium: create a session from a world, play two turns, watch the story,
the runtime statuses and the plugin data panel update live over server-sent events."""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import expect
from test_play_support import index_bundled, make_world

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_a_player_creates_a_session_and_plays_two_turns(page, live_server, alice):
    index_bundled("storyteller", "word-count", "dice", "notebook")
    make_world(
        owner=alice,
        plugins=["word-count", "notebook"],
        settings={"storyteller": {"style": "terse"}},
    )

    page.goto(f"{live_server.url}/accounts/login/?next=/sessions/new/?world=harbor")
    page.fill("input[name=username]", "alice")
    page.fill("input[name=password]", "alice-password")
    with page.expect_navigation():
        page.click("form.card button[type=submit]")
    # The world's plugins and the core storyteller are ticked; dice is offered.
    expect(page.locator("input[name=plugins][value=storyteller]")).to_be_checked()
    expect(page.locator("input[name=plugins][value=word-count]")).to_be_checked()
    expect(page.locator("input[name=plugins][value=dice]")).not_to_be_checked()
    # The notebook agent has no model here: greyed out with the reason, not ticked, though the
    # world lists it (sessions/model_needs.py), so no turn runs a runtime that must fail.
    expect(page.locator("input[name=plugins][value=notebook]")).to_be_disabled()
    expect(page.locator("input[name=plugins][value=notebook]")).not_to_be_checked()
    expect(page.locator("#why-notebook")).to_contain_text("needs a model")
    page.check("input[name=plugins][value=dice]")
    with page.expect_navigation():
        page.click("#new-session button[type=submit]")
    assert re.search(r"/sessions/[0-9a-f-]{36}/$", page.url)
    # Why each plugin is in: the outcomes table.
    expect(page.locator("#outcomes")).to_contain_text("core")
    expect(page.locator("#outcomes")).to_contain_text("requested")
    expect(page.locator("#play[data-connected=true]")).to_have_count(1)

    page.fill("#message", "I open the gate.")
    page.click("#send")
    story = page.locator("#story li.turn")
    expect(story).to_have_count(1)
    expect(story.nth(0).locator(".player-line")).to_have_text("I open the gate.")
    expect(story.nth(0).locator(".narrative")).to_contain_text("You open the gate")
    expect(page.locator('#runtimes li[data-runtime="storyteller"] .status')).to_have_text(
        "succeeded"
    )
    expect(page.locator('#runtimes li[data-runtime="notebook"]')).to_have_count(0)
    totals = page.locator('#plugin-data tr[data-key="word-count/totals/session"] .value')
    expect(totals).to_contain_text('"turns":1')
    expect(page.locator("#session-turns")).to_have_text("1")

    page.fill("#message", "I wait for the tide")
    page.click("#send")
    expect(story).to_have_count(2)
    expect(story.nth(1).locator(".narrative")).to_contain_text("You wait for the tide")
    expect(totals).to_contain_text('"turns":2')
    expect(totals).to_contain_text('"playerWords":9')
    expect(page.locator("#session-turns")).to_have_text("2")

    # A slash command answers in place.
    page.fill("#message", "/roll 2 d6")
    page.click("#send")
    # ... its message as text, the rest folded as field/value pairs, never raw JSON; the next
    # action clears it.
    expect(page.locator("#command-result p.message")).to_contain_text("2d6")
    page.locator("#command-result details.command-data > summary").click()
    expect(page.locator("#command-result dl dt").first).to_be_visible()
    expect(page.locator("#command-result dl")).to_contain_text("dice")
    assert "{" not in page.inner_text("#command-result dl > dd:first-of-type")
    page.click("#command-result [data-close]")
    expect(page.locator("#command-result")).to_be_hidden()
    page.fill("#message", "/roll 1 d4")
    page.click("#send")
    expect(page.locator("#command-result")).to_be_visible()
    page.fill("#message", "I look around")
    page.click("#send")
    expect(page.locator("#command-result")).to_be_hidden()
    expect(story).to_have_count(3)
    # A structured plugin data value folds: a one-line summary that opens to indented JSON.
    totals_row = page.locator('#plugin-data tr[data-key="word-count/totals/session"]')
    page.locator("#drawer-diagnostics > summary").click()  # diagnostics live in the drawer
    totals_row.locator("summary").click()
    expect(totals_row.locator("pre")).to_contain_text('"turns": 3')

    # After a reload the page shows the same story and data from the server.
    page.reload()
    expect(page.locator("#story li.turn")).to_have_count(3)
    expect(
        page.locator('#plugin-data tr[data-key="word-count/totals/session"] .value')
    ).to_contain_text('"turns":3')
    page.goto("about:blank")
    # The closed stream notices at its next keep-alive; let its server thread end while the
    # test database is still there.
    page.wait_for_timeout(3000)


def test_hook_failures_show_in_the_notices_live_and_after_a_reload(
    page, live_server, alice, log_in, tmp_path
):
    from test_play_support import index_folder, write_plugin

    from sessions.services import session_create

    crier = """export default function register(covel) {
  covel.on("TurnStop", async () => { throw new Error("<img src=x> the bell cracked"); });
}
"""
    folder = write_plugin(
        tmp_path,
        "town-crier",
        {"contributes": {"hooks": ["TurnStop"]}},
        files={"server/index.js": crier},
    )
    index_folder(folder)
    index_bundled("storyteller")
    session = session_create(owner=alice, world=make_world(owner=alice, plugins=["town-crier"]))
    log_in(page, "alice", "alice-password", f"/sessions/{session.pk}/")
    expect(page.locator("#play[data-connected=true]")).to_have_count(1)
    expect(page.locator("#notifications .empty")).to_have_count(1)

    page.fill("#message", "I ring the bell.")
    page.click("#send")
    notice = page.locator('#notifications li[data-problem="hook.failed"]')
    # Live, over the event stream: package, event and message, as text.
    expect(notice).to_have_count(1)
    expect(notice.locator(".title")).to_have_text("The TurnStop hook of town-crier failed")
    expect(notice.locator(".body")).to_have_text(
        "hook town-crier:TurnStop threw: <img src=x> the bell cracked"
    )
    expect(notice.locator(".from")).to_have_text("town-crier")
    expect(page.locator("#notifications img")).to_have_count(0)
    expect(page.locator("#notifications .empty")).to_have_count(0)

    # A past turn's failure is in the server-rendered page too, escaped.
    page.reload()
    expect(notice).to_have_count(1)
    expect(notice.locator(".title")).to_have_text("The TurnStop hook of town-crier failed")
    expect(notice.locator(".body")).to_contain_text("<img src=x> the bell cracked")
    expect(page.locator("#notifications img")).to_have_count(0)
    page.goto("about:blank")
    page.wait_for_timeout(3000)  # the closed stream's server thread ends at its keep-alive
