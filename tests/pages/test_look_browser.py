"""The hub's look in a real Chromium: the stylesheet reaches every page, dark mode follows the
system, the header and the session page fit a 390 px phone, staff see their links, and a
screenshot of each main page is saved under var/screenshots/ for a person to review."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "sessions"))
from test_play_support import play  # noqa: E402

SCREENSHOTS = Path(__file__).resolve().parents[2] / "var" / "screenshots"

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def sign_in(page, live_server, username: str, password: str) -> None:
    page.goto(f"{live_server.url}/accounts/login/")
    page.fill("input[name=username]", username)
    page.fill("input[name=password]", password)
    with page.expect_navigation():
        page.click("form.card button[type=submit]")


def overflow(page) -> int:
    """How many pixels the page is wider than the viewport (0 when nothing scrolls sideways)."""
    return page.evaluate(
        "document.documentElement.scrollWidth - document.documentElement.clientWidth"
    )


def background(page, selector: str = "body") -> str:
    return page.eval_on_selector(selector, "el => getComputedStyle(el).backgroundColor")


def luminance(rgb: str) -> float:
    r, g, b = (int(part) for part in rgb[rgb.index("(") + 1 : rgb.index(")")].split(",")[:3])
    return 0.2126 * r + 0.7152 * g + 0.0722 * b


def test_dark_mode_follows_the_system(viewport_page, live_server, fresh_install) -> None:
    light = viewport_page(color_scheme="light")
    light.goto(live_server.url + "/")
    dark = viewport_page(color_scheme="dark")
    dark.goto(live_server.url + "/")
    assert luminance(background(light)) > 200
    assert luminance(background(dark)) < 60
    # Cards and controls follow too, not only the page behind them.
    assert luminance(background(dark, "article.package-card")) < 60
    assert luminance(background(dark, "#q")) < 60
    text = dark.eval_on_selector("body", "el => getComputedStyle(el).color")
    assert luminance(text) > 180


def test_the_header_and_session_page_fit_a_phone(
    viewport_page, live_server, harbor_session
) -> None:
    page = viewport_page(width=390, height=844)
    page.goto(live_server.url + "/")
    assert overflow(page) == 0
    header = page.locator("header.site-header")
    assert header.bounding_box()["width"] <= 390
    for link in ("Plugins", "Worlds", "Sessions", "Log in"):
        box = header.get_by_role("link", name=link, exact=True).bounding_box()
        assert box and box["x"] >= 0 and box["x"] + box["width"] <= 390, link

    sign_in(page, live_server, "alice", "alice-password")
    page.goto(f"{live_server.url}/sessions/{harbor_session.pk}/")
    assert overflow(page) == 0
    # The box and its Send button share the row, as in a chat app, and fill the phone's width.
    composer = page.locator(".composer-box").bounding_box()
    assert composer["width"] > 340 and composer["x"] + composer["width"] <= 390
    assert page.locator("#message").bounding_box()["width"] > 250
    # The side column drops below the story on a phone instead of squeezing it.
    story = page.locator(".story-column").bounding_box()
    side = page.locator(".side-column").bounding_box()
    assert side["y"] >= story["y"] + story["height"] - 1
    page.goto("about:blank")


def test_staff_see_jobs_and_admin_in_the_header(viewport_page, live_server, alice, bob) -> None:
    page = viewport_page()
    sign_in(page, live_server, "alice", "alice-password")
    nav = page.locator("header.site-header nav")
    assert nav.get_by_role("link", name="Jobs").count() == 0
    assert nav.get_by_role("link", name="Admin").count() == 0
    page.click("header button.link")
    sign_in(page, live_server, "bob", "bob-password")
    nav.get_by_role("link", name="Jobs").click()
    page.wait_for_url("**/jobs/")
    nav.get_by_role("link", name="Admin").click()
    page.wait_for_url("**/admin/")
    assert "Covel Hub administration" in page.inner_text("body")
    assert "settingss" not in page.inner_text("body")


def test_error_pages_and_favicon_are_styled(viewport_page, live_server, fresh_install) -> None:
    page = viewport_page(color_scheme="dark")
    response = page.goto(live_server.url + "/no-such-page/")
    assert response.status == 404
    assert page.locator(".error-page h1").inner_text() == "Nothing here"
    assert luminance(background(page, ".error-page")) < 60
    icon = page.locator("link[rel=icon]").get_attribute("href")
    assert page.request.get(live_server.url + icon).status == 200
    # Buttons are ours, not the browser's grey default.
    assert (
        page.eval_on_selector(".error-page .button", "el => getComputedStyle(el).borderRadius")
        == "6px"
    )


def test_screenshots_of_the_main_pages(
    viewport_page, live_server, community_dir, lantern_denied, harbor_session, bob
) -> None:
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    # A session that has been played looks as a player sees it: story, runtimes, plugin data.
    for message in ("I walk along the quay.", "I ask the harbour master about the storm."):
        assert play(harbor_session, message)["status"] == "committed"
    from approvals.selectors import approval_current

    request = approval_current(package_key="lantern")
    pages = {
        "home": "/",
        "search-empty": "/?q=notbk",
        "detail": "/packages/rapport/",
        "session-new": "/sessions/new/",
        "session": f"/sessions/{harbor_session.pk}/",
        "approvals": "/approvals/",
        "approval": f"/approvals/{request.pk}/",
        "jobs": "/jobs/",
    }
    saved = []
    for width in (1280, 390):
        for scheme in ("light", "dark"):
            page = viewport_page(width=width, color_scheme=scheme)
            sign_in(page, live_server, "bob", "bob-password")
            for name, url in pages.items():
                page.goto(live_server.url + url)
                assert overflow(page) == 0, (name, width)
                if name == "session":
                    assert page.locator("#story li.turn").count() == 2
                    assert page.locator("#runtimes li.runtime").count() > 0
                path = SCREENSHOTS / f"{name}-{width}-{scheme}.png"
                page.screenshot(path=str(path), full_page=True)
                assert path.stat().st_size > 5_000
                saved.append(path)
            page.goto("about:blank")
    assert len(saved) == 4 * len(pages)


def test_the_language_switch_in_the_header(
    viewport_page, live_server, fresh_install, alice
) -> None:
    page = viewport_page(width=390, height=844)
    sign_in(page, live_server, "alice", "alice-password")
    page.goto(live_server.url + "/packages/rapport/")
    with page.expect_navigation():
        page.select_option("#language-select", "zh-hans")
    assert page.url.endswith("/packages/rapport/")
    assert page.locator("article header h1").inner_text() == "好感度"
    assert page.locator("#tab-overview").inner_text() == "概览"
    assert overflow(page) == 0
    # The choice is Alice's: a fresh browser shows Chinese once she logs in.
    other = viewport_page()
    sign_in(other, live_server, "alice", "alice-password")
    other.goto(live_server.url + "/")
    assert other.locator("h1").inner_text() == "插件"
