"""A world author edits presets in a real Chromium: slider and select persist; errors show."""

from __future__ import annotations

import pytest

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_world_author_changes_slider_and_select_and_sees_them_after_reload(
    page, log_in, live_server, harbor
) -> None:
    log_in(page, "alice", "alice-password", "/worlds/harbor/")
    assert page.url.endswith("/worlds/harbor/")
    slider = page.locator("#panel-rapport-intensity")
    output = page.locator("#panel-rapport-intensity-value")
    assert slider.input_value() == "7" and output.text_content() == "7"

    # Move the slider with the keyboard, as a person would: it shows its value as it moves.
    slider.focus()
    page.keyboard.press("ArrowRight")
    page.keyboard.press("ArrowRight")
    assert slider.input_value() == "9"
    assert output.text_content() == "9"
    page.select_option("#panel-rapport-tone", label="Gentle")
    with page.expect_navigation():
        page.click("#panel-rapport button.save")
    assert "Rapport: settings saved." in page.content()

    page.reload()
    assert page.locator("#panel-rapport-intensity").input_value() == "9"
    assert page.locator("#panel-rapport-intensity-value").text_content() == "9"
    assert page.locator("#panel-rapport-tone").input_value() == "gentle"
    assert page.locator("#panel-rapport-tone option:checked").text_content() == "Gentle"
    assert page.locator('.setting[data-key="intensity"] .origin').text_content() == "world preset"

    harbor.refresh_from_db()
    assert harbor.plugin_settings["rapport"] == {"tone": "gentle", "intensity": 9}


def test_an_out_of_range_value_shows_its_error(page, log_in, live_server, harbor) -> None:
    log_in(page, "alice", "alice-password", "/worlds/harbor/")
    page.fill("#panel-rapport-max-entries", "500")
    with page.expect_navigation():
        page.click("#panel-rapport button.save")
    error = page.locator('.setting[data-key="max-entries"] .field-error')
    assert error.is_visible()
    assert "must be at most 100, not 500" in error.text_content()
    assert page.locator("#panel-rapport-max-entries").input_value() == "500"
    harbor.refresh_from_db()
    assert "max-entries" not in harbor.plugin_settings["rapport"]
