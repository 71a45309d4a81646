"""Small things of the pages, each with its own test: no server folder for anonymous API
clients, yes/no instead of True/False for players."""

from __future__ import annotations

import pytest
from django.template import Context, Template

pytestmark = pytest.mark.django_db


def test_the_source_plugin_api_shows_the_folder_to_staff_only(client, fresh_install, alice, bob):
    anonymous = client.get("/api/sources/localfeed").json()
    assert anonymous["folder"] is None
    assert "source-plugins/localfeed" not in client.get("/api/sources/localfeed").content.decode()
    client.force_login(alice)
    assert client.get("/api/sources/localfeed").json()["folder"] is None
    client.force_login(bob)
    assert (
        client.get("/api/sources/localfeed").json()["folder"].endswith("source-plugins/localfeed")
    )


@pytest.mark.parametrize(
    ("value", "shown"), [(True, "yes"), (False, "no"), (2.0, "2"), ("True story", "True story")]
)
def test_players_read_yes_and_no_not_python_booleans(value, shown):
    html = Template("{% load hub %}<b>{{ v|plain }}</b>").render(Context({"v": value}))
    assert html == f"<b>{shown}</b>"


def test_a_slot_entry_and_a_block_part_print_yes_not_true():
    slots = Template('{% include "sessions/_slots.html" %}').render(
        Context(
            {
                "session": {"pk": "s"},
                "ui_slots": [
                    {
                        "slot": "status",
                        "entries": [{"id": "a", "kind": "text", "label": "Armed", "value": True}],
                    }
                ],
            }
        )
    )
    assert '<span class="value">yes</span>' in slots and "True" not in slots
    block = Template('{% include "sessions/_ui_block.html" %}').render(
        Context(
            {"block": {"id": "b", "meta": {}, "data": {"parts": [{"type": "t", "content": False}]}}}
        )
    )
    assert '<p class="part-content">no</p>' in block and "False" not in block


def test_the_worlds_list_is_paged_like_the_other_lists(
    client, fresh_install, django_assert_max_num_queries
):
    first = client.get("/api/worlds", {"limit": 1}).json()
    assert first["count"] == 2 and first["limit"] == 1 and first["offset"] == 0
    second = client.get("/api/worlds", {"limit": 1, "offset": 1}).json()
    assert [first["items"][0]["id"], second["items"][0]["id"]] == [
        "clockwork-academy",
        "harbor-nights",
    ]
    assert client.get("/api/worlds").json()["limit"] == 50
    refused = client.get("/api/worlds", {"limit": 0})
    assert refused.status_code == 422 and "/query/limit" in refused.content.decode()
    with django_assert_max_num_queries(4):
        client.get("/api/worlds")
