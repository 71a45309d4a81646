"""Searching in Chromium: typing keeps relevance order (no sort pinned to name), a misspelt
word finds the package, and Back restores both the box and the results."""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import expect

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def first_card(page):
    return page.locator("article.package-card").first


def test_typing_keeps_relevance_and_back_restores_the_search(
    viewport_page, live_server, fresh_install
):
    page = viewport_page()
    page.goto(live_server.url + "/")
    expect(first_card(page)).to_have_attribute("data-package", "chronicle")  # by name

    page.locator("#q").press_sequentially("story", delay=30)
    page.wait_for_url(re.compile(r"q=story"))
    assert "sort=name" not in page.url
    # Relevance: the package whose name starts with the word comes first, not the first by name.
    expect(first_card(page)).to_have_attribute("data-package", "story-agent")
    expect(page.locator("select[name=sort]")).to_have_value("")

    page.fill("#q", "satchle")
    page.wait_for_url(re.compile(r"q=satchle"))
    expect(first_card(page)).to_have_attribute("data-package", "satchel")

    page.go_back()
    page.wait_for_url(re.compile(r"q=story(&|$)"))
    expect(page.locator("#q")).to_have_value("story")
    expect(first_card(page)).to_have_attribute("data-package", "story-agent")
    page.go_back()
    expect(page.locator("#q")).to_have_value("")
    expect(first_card(page)).to_have_attribute("data-package", "chronicle")
