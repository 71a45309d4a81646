"""World and session pages: panels with the right controls, saving by POST, errors, refusals."""

from __future__ import annotations

from pathlib import Path

import pytest
from django.test import Client
from worlds_testdata import make_package

from worlds.models import World

WORLD_URL = "/worlds/harbor/"


def as_user(user) -> Client:
    client = Client()
    client.force_login(user)
    return client


def affinity_form(**overrides: str) -> dict[str, str]:
    """What the rapport panel posts when nothing is touched (a toggle posts its hidden false too)."""
    form = {
        "package": "rapport",
        "setting:tone": "harsh",
        "setting:intensity": "7",
        "setting:nickname": "",
        "setting:notes": "",
        "setting:decay": "0.1",
        "setting:max-entries": "20",
        "setting:show-panel": "false",
        "setting:model": "utility",
    }
    form.update(overrides)
    return form


def test_world_list_shows_author_cards(
    client: Client, harbor, django_assert_max_num_queries
) -> None:
    World.objects.create(
        world_id="second",
        name="Second",
        author={"name": "Zed", "links": [{"label": "Site", "url": "https://zed.example"}]},
    )
    with django_assert_max_num_queries(4):
        response = client.get("/worlds/")
    html = response.content.decode()
    assert response.status_code == 200
    assert (
        "Alice Author" in html
        and 'href="https://example.com/alice"' in html
        and "Writes rainy worlds." in html
    )
    assert "https://zed.example" in html  # the full address of a link is shown


def test_world_list_costs_the_same_queries_for_many_worlds(
    client: Client, db, django_assert_num_queries, alice
) -> None:
    for i in range(3):
        World.objects.create(world_id=f"w{i}", name=f"W{i}", owner=alice)
    with django_assert_num_queries(1):
        client.get("/worlds/")
    for i in range(3, 30):
        World.objects.create(world_id=f"w{i}", name=f"W{i}", owner=alice)
    with django_assert_num_queries(1):
        client.get("/worlds/")


def test_world_page_renders_the_right_control_for_each_type(harbor, alice) -> None:
    html = as_user(alice).get(WORLD_URL).content.decode()
    assert (
        'type="range" id="panel-rapport-intensity" name="setting:intensity" value="7" min="0" max="10" step="1"'
        in html
    )
    assert '<output id="panel-rapport-intensity-value"' in html
    assert '<option value="harsh" selected>Harsh</option>' in html  # a select shows its labels
    assert (
        'type="number" id="panel-rapport-decay" name="setting:decay" value="0.1" min="0" max="1" step="0.05"'
        in html
    )
    assert (
        'type="number" id="panel-rapport-max-entries" name="setting:max-entries" value="20" min="1" max="100" step="1"'
        in html
    )
    assert (
        'type="checkbox" id="panel-rapport-show-panel" name="setting:show-panel" value="true" checked'
        in html
    )
    assert '<textarea id="panel-rapport-notes"' in html
    assert (
        'type="text" id="panel-rapport-nickname" name="setting:nickname" value="" maxlength="500"'
        in html
    )
    assert '<option value="memory">memory</option>' in html  # the slot control offers the slots
    # One panel per plugin the world uses, in its order; where each value comes from is shown.
    assert (
        html.index('id="panel-rapport"')
        < html.index('id="panel-dice"')
        < html.index('id="panel-storyteller"')
    )
    assert 'id="panel-weather"' not in html
    assert "world preset" in html and "Reset to default (Neutral)" in html


def test_world_page_query_count_does_not_grow_with_plugins(client: Client, harbor) -> None:
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    with CaptureQueriesContext(connection) as three:
        client.get(WORLD_URL)
    harbor.plugins = [*harbor.plugins, "weather"]
    harbor.save()
    with CaptureQueriesContext(connection) as four:
        html = client.get(WORLD_URL).content.decode()
    assert 'id="panel-weather"' in html
    # The world, its packages and the configured model slots.
    assert len(four.captured_queries) == len(three.captured_queries) <= 3


def test_saving_the_world_panel_writes_db_and_file(harbor, alice) -> None:
    response = as_user(alice).post(
        WORLD_URL, affinity_form(**{"setting:intensity": "9", "setting:tone": "gentle"})
    )
    assert response.status_code == 302 and response["Location"] == "/worlds/harbor/#panel-rapport"
    harbor.refresh_from_db()
    # Untouched controls showing inherited values are not pinned as presets, except the toggle
    # that was switched off.
    assert harbor.plugin_settings["rapport"] == {
        "tone": "gentle",
        "intensity": 9,
        "show-panel": False,
    }
    text = (Path(harbor.source_dir) / "world.yaml").read_text()
    assert "intensity: 9" in text and "tone: gentle     # grudges" in text


def test_an_out_of_range_value_shows_its_error_beside_the_field(harbor, alice) -> None:
    response = as_user(alice).post(
        WORLD_URL, affinity_form(**{"setting:max-entries": "500", "setting:decay": "abc"})
    )
    assert response.status_code == 422
    html = response.content.decode()
    assert "Characters shown: must be at most 100, not 500" in html
    assert "Decay per turn: must be a number, not &#x27;abc&#x27;" in html
    assert 'name="setting:max-entries" value="500"' in html  # what was typed stays in the field
    harbor.refresh_from_db()
    assert harbor.plugin_settings["rapport"] == {"tone": "harsh", "intensity": 7}


def test_reset_button_returns_a_preset_to_the_default(harbor, alice) -> None:
    response = as_user(alice).post(WORLD_URL, {"package": "rapport", "reset": "tone"})
    assert response.status_code == 302
    harbor.refresh_from_db()
    assert harbor.plugin_settings["rapport"] == {"intensity": 7}


@pytest.mark.parametrize(("who", "status"), [("alice", 302), ("bob", 302), ("charlie", 403)])
def test_who_may_save_world_presets(harbor, alice, bob, charlie, who: str, status: int) -> None:
    user = {"alice": alice, "bob": bob, "charlie": charlie}[who]
    response = as_user(user).post(WORLD_URL, affinity_form(**{"setting:intensity": "1"}))
    assert response.status_code == status
    harbor.refresh_from_db()
    assert (harbor.plugin_settings["rapport"]["intensity"] == 1) == (status == 302)


def test_anonymous_post_is_sent_to_log_in_and_sees_disabled_controls(
    client: Client, harbor
) -> None:
    response = client.post(WORLD_URL, affinity_form(**{"setting:intensity": "1"}))
    assert response.status_code == 302 and response["Location"].startswith("/accounts/login/")
    html = client.get(WORLD_URL).content.decode()
    assert (
        'name="setting:intensity" value="7" min="0" max="10" step="1" data-output="panel-rapport-intensity-value" disabled'
        in html
    )
    assert "Save Rapport" not in html


def test_a_post_for_a_package_the_world_does_not_use_is_404(harbor, alice) -> None:
    assert (
        as_user(alice).post(WORLD_URL, {"package": "weather", "setting:city": "X"}).status_code
        == 404
    )


def test_plugin_text_is_escaped(harbor, alice, packages) -> None:
    evil = "<script>alert(1)</script>"
    packages["storyteller"].delete()
    make_package(
        "storyteller",
        [
            {
                "key": "style",
                "type": "select",
                "label": evil,
                "description": evil,
                "default": "a",
                "options": [{"value": "a", "label": evil}],
            }
        ],
        display_name=evil,
    )
    harbor.description = evil
    harbor.author = {"name": evil, "about": evil}
    harbor.save()
    for url in ("/worlds/", WORLD_URL):
        html = as_user(alice).get(url).content.decode()
        assert evil not in html and "&lt;script&gt;alert(1)&lt;/script&gt;" in html


def test_session_page_shows_the_players_panel_and_saves_over_the_world(
    harbor, alice_session, alice
) -> None:
    url = f"/sessions/{alice_session.pk}/"
    client = as_user(alice)
    html = client.get(url).content.decode()
    assert "Alice at the docks" in html and "world preset" in html
    response = client.post(
        url, {"package": "dice", "setting:sides": "6", "setting:advantage": "false"}
    )
    assert response.status_code == 302
    from worlds.services import user_settings_for

    assert user_settings_for(package_id="dice", world=None, session=alice_session) == {
        "sides": 6,
        "advantage": False,
    }
    html = client.get(url).content.decode()
    assert "your value" in html and "Reset to world preset (12)" in html
    client.post(url, {"package": "dice", "reset": "sides"})
    assert user_settings_for(package_id="dice", world=None, session=alice_session)["sides"] == 12


def test_session_page_errors_beside_fields(harbor, alice_session, alice) -> None:
    response = as_user(alice).post(
        f"/sessions/{alice_session.pk}/", {"package": "dice", "setting:sides": "1"}
    )
    assert response.status_code == 422
    assert "Sides: must be at least 2, not 1" in response.content.decode()
    assert not alice_session.plugin_settings.exists()


@pytest.mark.parametrize(("who", "status"), [("alice", 200), ("bob", 200), ("charlie", 403)])
def test_who_may_open_a_session_page(
    harbor, alice_session, alice, bob, charlie, who: str, status: int
) -> None:
    user = {"alice": alice, "bob": bob, "charlie": charlie}[who]
    url = f"/sessions/{alice_session.pk}/"
    assert as_user(user).get(url).status_code == status
    assert as_user(user).post(url, {"package": "dice", "setting:sides": "4"}).status_code == (
        302 if status == 200 else 403
    )


def test_anonymous_session_page_is_sent_to_log_in(client: Client, alice_session) -> None:
    response = client.get(f"/sessions/{alice_session.pk}/")
    assert response.status_code == 302 and response["Location"].startswith("/accounts/login/")
