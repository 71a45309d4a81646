"""axe-core (the npm package, pinned in package.json) run in Debian's Chromium over the main
pages, light and dark, at 1280 and 390 px: no WCAG 2 A/AA violation. And a keyboard-only walk:
search, a package page and its tabs, a session, an approval, without touching the mouse.

Personas (tests/conftest.py): Alice plays; Bob is staff; the anonymous visitor browses.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "sessions"))
from test_play_support import play  # noqa: E402

REPO = Path(__file__).resolve().parents[2]
AXE = REPO / "node_modules" / "axe-core" / "axe.min.js"

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def sign_in(page, live_server, username: str, password: str) -> None:
    page.goto(f"{live_server.url}/accounts/login/")
    page.fill("input[name=username]", username)
    page.fill("input[name=password]", password)
    with page.expect_navigation():
        page.click("form.card button[type=submit]")


def violations(page) -> list[str]:
    """axe's WCAG 2 A and AA violations of the page as it stands, one line each."""
    # evaluate() runs through the DevTools protocol, so the page's CSP does not refuse it.
    page.evaluate(AXE.read_text(encoding="utf-8"))
    found = page.evaluate(
        """async () => {
          const result = await axe.run(document, {
            runOnly: {type: "tag", values: ["wcag2a", "wcag2aa", "wcag21a", "wcag21aa"]},
          });
          return result.violations.map((v) => ({
            id: v.id, help: v.help,
            nodes: v.nodes.slice(0, 4).map((n) => n.target.join(" ") + " :: " + (n.failureSummary || "").split("\\n").slice(0, 2).join(" ")),
          }));
        }"""
    )
    return [f"{v['id']}: {v['help']} -> {json.dumps(v['nodes'])}" for v in found]


@pytest.fixture
def main_pages(community_dir, lantern_denied, harbor_session, bob):
    from django.utils import timezone

    from approvals.selectors import approval_current
    from jobs.models import RuntimeJob

    for message in ("I walk along the quay.", "I ask the harbour master about the storm."):
        play(harbor_session, message)
    # A failed job, so /jobs/ and the session's jobs panel have a row to lay out on a phone.
    RuntimeJob.objects.create(
        session=harbor_session,
        plugin_id="chronicle",
        runtime_id="chronicle/summarize",
        source_turn=str(harbor_session.turns.order_by("-created_at").first().pk),
        state="failed",
        error="no model is configured for slot 'utility'",
        created_at=timezone.now(),
        updated_at=timezone.now(),
    )
    request = approval_current(package_key="lantern")
    return {
        "home": "/",
        "search-empty": "/?q=zzqqxx",
        "package": "/packages/rapport/",
        "worlds": "/worlds/",
        "world": "/worlds/harbor-nights/",
        "sessions": "/sessions/",
        "session-new": "/sessions/new/",
        "session": f"/sessions/{harbor_session.pk}/",
        "approvals": "/approvals/",
        "approval": f"/approvals/{request.pk}/",
        "jobs": "/jobs/",
        "sources": "/sources/",
        "tokens": "/accounts/tokens/",
    }


@pytest.mark.parametrize("scheme", ["light", "dark"])
def test_the_main_pages_have_no_axe_violation(viewport_page, live_server, main_pages, scheme):
    assert AXE.is_file(), "npm ci installs axe-core (package.json)"
    found = {}
    for width in (1280, 390):
        page = viewport_page(width=width, color_scheme=scheme)
        page.goto(f"{live_server.url}/accounts/login/")
        problems = violations(page)
        if problems:
            found[f"login@{width}"] = problems
        sign_in(page, live_server, "bob", "bob-password")
        for name, url in main_pages.items():
            page.goto(live_server.url + url)
            page.wait_for_load_state("networkidle")
            # Open every drawer and fold so that axe sees what a player can open.
            page.evaluate("document.querySelectorAll('details').forEach((d) => { d.open = true; })")
            problems = violations(page)
            # No page scrolls sideways, on a phone either (the session page was 629 px wide
            # at 390 and /jobs/ 877 px).
            wider = page.evaluate(
                "document.documentElement.scrollWidth - document.documentElement.clientWidth"
            )
            if wider > 0:
                problems.append(f"the page is {wider} px wider than the window")
            if problems:
                found[f"{name}@{width}"] = problems
        page.goto("about:blank")
    assert not found, json.dumps(found, indent=1)


def tab_to(page, selector: str, limit: int = 120) -> None:
    """Press Tab until the focused element matches selector (fails when it never does)."""
    for _ in range(limit):
        page.keyboard.press("Tab")
        if page.evaluate("(s) => document.activeElement?.matches(s) ?? false", selector):
            return
    raise AssertionError(f"Tab never reached {selector} on {page.url}")


def test_a_keyboard_only_walk(viewport_page, live_server, main_pages):
    from playwright.sync_api import expect

    page = viewport_page()
    sign_in(page, live_server, "bob", "bob-password")
    # Search: the skip link first, then the search box; a misspelt word finds the package.
    page.goto(live_server.url + "/")
    page.keyboard.press("Tab")
    assert page.evaluate("document.activeElement.className") == "skip-link"
    page.keyboard.press("Enter")
    assert page.evaluate("document.activeElement.id") == "main"
    tab_to(page, "#q")
    page.keyboard.type("dise")
    page.keyboard.press("Enter")
    expect(page.locator('article.package-card[data-package="dice"]')).to_have_count(1)
    tab_to(page, 'article[data-package="dice"] h3 a')
    with page.expect_navigation():
        page.keyboard.press("Enter")
    # A package page: one tab stop for the tabs, the arrow keys move between them. (Wait for
    # the page itself: the navigation's commit comes before its scripts set the tabs up.)
    page.wait_for_load_state("load")
    expect(page.locator("[role=tab][aria-selected=true]")).to_have_count(1)
    tab_to(page, "[role=tab][aria-selected=true]")
    page.keyboard.press("ArrowRight")
    assert page.evaluate("document.activeElement.id") == "tab-details"
    expect(page.locator("#details")).to_be_visible()
    expect(page.locator("#overview")).to_be_hidden()
    page.keyboard.press("End")
    assert page.evaluate("document.activeElement.id") == "tab-versions"

    # A session: the composer sends on Enter; "/" opens the command menu, Escape closes it.
    page.goto(live_server.url + main_pages["session"])
    expect(page.locator("#play[data-connected=true]")).to_have_count(1)
    tab_to(page, "#message")
    page.keyboard.type("I look at the lanterns.")
    page.keyboard.press("Enter")
    expect(page.locator("#story li.turn")).to_have_count(3)
    expect(page.locator("#story-live")).not_to_be_empty()
    expect(page.locator("#message")).to_have_value("")
    page.keyboard.type("/")
    menu = page.locator("#command-menu")
    expect(menu).to_be_visible()
    expect(menu.locator("li[data-name=roll]")).to_have_count(1)
    page.keyboard.press("Escape")
    expect(menu).to_be_hidden()
    page.keyboard.type("help")
    page.keyboard.press("Enter")
    expect(page.locator("#command-result .help-list")).to_contain_text("/roll [notation]")
    # Shift+Enter is a new line, not a send.
    page.keyboard.type("one")
    page.keyboard.press("Shift+Enter")
    page.keyboard.type("two")
    expect(page.locator("#message")).to_have_value("one\ntwo")

    # An approval: the decision asks first, and Enter on the dialog's OK decides.
    page.goto(live_server.url + main_pages["approval"])
    tab_to(page, "button[value=allow]")
    page.once("dialog", lambda dialog: dialog.accept())
    with page.expect_navigation():
        page.keyboard.press("Enter")
    expect(page.locator("ul.messages")).to_contain_text("approved")
    page.goto("about:blank")
    page.wait_for_timeout(3000)  # let the closed event stream's server thread end
