"""The catalogue in a real Chromium: search, filter by a tag, open a package, confirm a link."""

from __future__ import annotations

import re

import pytest
from django.db import connections

from catalogue.services import packages_sync

PACKAGES = {
    "dice-roller": """---
displayName: Dice Roller
description: Rolls dice for skill checks.
tags: [mode:tabletop]
author:
  name: Jane Doe
  about: I make tabletop tools.
  links:
    - { label: Community, url: "https://community.example.com/dice?ref=covel" }
runtime:
  schedule: { stage: post-turn }
---
Roll the dice the narrative asks for.
""",
    "dice-stats": """---
displayName: Dice Stats
description: Counts how often each dice face came up.
tags: [mode:stats]
---
""",
    "weather": """---
displayName: Weather
description: Changes the sky.
tags: [mode:tabletop]
---
""",
}


@pytest.mark.browser
@pytest.mark.django_db(transaction=True)
def test_a_player_finds_a_package_and_confirms_an_author_link(
    browser, live_server, real_plugin_dirs, monkeypatch
) -> None:
    try:
        _walk_through(browser, live_server, real_plugin_dirs)
    finally:
        # Under Playwright's greenlet this test body has its own context, hence its own database
        # connection, which pytest-django never sees: close it so the test database can be dropped.
        connections.close_all()


def _walk_through(browser, live_server, real_plugin_dirs) -> None:
    for name, text in PACKAGES.items():
        (real_plugin_dirs.bundled / name).mkdir()
        (real_plugin_dirs.bundled / name / "PLUGIN.md").write_text(text)
    assert packages_sync().line() == "indexed 3, unchanged 0, removed 0, invalid 0"

    page = browser.new_page()
    page.goto(live_server.url + "/")
    assert page.locator("article.package-card").count() == 3

    # Search (htmx swaps the results and puts the query in the URL).
    page.fill("#q", "dice")
    page.wait_for_url(re.compile(r"q=dice"))
    page.wait_for_function("document.querySelectorAll('article.package-card').length === 2")
    assert page.locator("article.package-card").first.get_attribute("data-package") == "dice-roller"

    # Filter by a tag facet: AND with the search.
    page.click('a.facet[data-tag="mode:tabletop"]')
    page.wait_for_url(re.compile(r"tag=mode%3Atabletop"))
    cards = page.locator("article.package-card")
    assert cards.count() == 1 and cards.first.get_attribute("data-package") == "dice-roller"

    # Open the detail page and follow the author's link: a confirmation page, not the site.
    page.click("article.package-card h3 a")
    page.wait_for_url(re.compile(r"/packages/dice-roller/$"))
    assert "I make tabletop tools." in page.inner_text(".author-card")
    page.click(".author-links a")
    page.wait_for_url(re.compile(r"/packages/dice-roller/links/\d+/$"))
    assert page.inner_text("#full-address") == "https://community.example.com/dice?ref=covel"
    assert "You are leaving Covel Hub" in page.inner_text("h1")
    page.close()
