"""The scene form sets the scene: on a fresh install, Alice plays Harbor Nights with the bundled
Scene Setter in a real Chromium, answers its form, and the page shows the scene she chose, not
her answer read back as story text."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def scene_session(fresh_install, alice):
    from sessions.services import session_create
    from worlds.models import World

    world = World.objects.get(world_id="harbor-nights")
    return session_create(
        owner=alice, world=world, requested=[*world.plugins, "scene-setter"], title="Fog"
    )


def test_the_scene_form_sets_the_scene_the_page_shows(page, live_server, log_in, scene_session):
    log_in(page, "alice", "alice-password", next_url=f"/sessions/{scene_session.pk}/")
    expect(page.locator("#play[data-connected=true]")).to_have_count(1)
    page.fill("#message", "I look around.")
    page.click("#send")

    form = page.locator('form.ask[data-interaction^="scene-form-"]')
    expect(form.locator(".ask-title")).to_have_text("Adjust the opening scene")
    form.get_by_label("Place").fill("The bell tower")
    form.get_by_label("Mood").select_option("eerie")
    form.get_by_label("Time of day").select_option("night")
    form.get_by_label("Details").fill("A rope sways in the dark.")
    form.get_by_role("button", name="Set the scene").click()
    expect(form.locator(".answered-note")).to_have_text("Answered.")

    # The scene-setter's own data row now holds the chosen scene, live, and after a reload.
    row = page.locator('#plugin-data tr[data-key="scene-setter/scene/current"]')
    expect(row.locator("td.value")).to_contain_text("The bell tower")
    expect(row.locator("td.value")).to_contain_text("eerie")
    story = page.locator("#story li.turn")
    expect(story).to_have_count(2)
    expect(story.nth(1).locator(".narrative")).to_contain_text("You take it all in")
    expect(story.nth(1).locator(".narrative")).not_to_contain_text("[Player input]")
    page.reload()
    expect(row.locator("td.value")).to_contain_text("The bell tower")
    expect(row.locator("td.value")).to_contain_text("A rope sways in the dark.")
    page.goto("about:blank")
    # The closed stream notices at its next keep-alive; let its server thread end while the
    # test database is still there.
    page.wait_for_timeout(3000)
