"""The catalogue API: /api/packages, /api/packages/{id}, /api/tags, /api/contracts, /api/docs."""

from __future__ import annotations

import re

import pytest
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext

from catalogue.services import package_index

pytestmark = pytest.mark.django_db


@pytest.fixture
def add(tmp_path, make_result):
    def add(package_id, data, source="bundled", errors=()):
        data = {"description": f"About {package_id}.", **data}
        return package_index(
            result=make_result(tmp_path / package_id, data, errors=errors),
            source=source,
            content_hash="0" * 64,
            host_version="0.1.0",
        )

    return add


@pytest.fixture
def catalogue(tmp_path, rich_data, add):
    add("dice", rich_data)
    add(
        "storyteller",
        {
            "displayName": "Storyteller",
            "kind": "core",
            "tags": ["mode:story"],
            "provides": [{"contract": "narrative-engine@2", "default": True}],
            "runtime": {"schedule": {"stage": "narrative"}, "io": {"visibility": "story"}},
        },
    )
    add(
        "dice-extra",
        {"displayName": "More dice", "tags": ["mode:story"], "provides": ["narrative-engine@2"]},
        source="community",
    )
    add(
        "word-count",
        {
            "displayName": "Word count",
            "description": "Counts dice words.",
            "runtime": {"schedule": {"stage": "audit"}, "function": {}},
        },
        source="user",
    )
    return tmp_path


def get(client: Client, url: str, **params):
    response = client.get(url, params)
    return response.status_code, response.json()


def test_the_list_has_the_documented_fields(client, catalogue):
    status, body = get(client, "/api/packages")
    assert status == 200 and body["count"] == 4
    item = next(i for i in body["items"] if i["id"] == "dice")
    assert set(item) >= {
        "id",
        "displayName",
        "description",
        "kind",
        "version",
        "source",
        "state",
        "tags",
        "author",
        "provides",
        "requires",
    }
    assert (
        item["displayName"] == "Dice Roller"
        and item["version"] == "1.2.0"
        and item["state"] == "loaded"
    )
    assert item["author"] == {"name": "Jane Doe", "url": "https://jane.example.com"}
    assert {"contract": "dice@1", "default": True} in item["provides"]
    assert item["requires"] == ["narrative-engine@2"]
    # Sorted by name without a query.
    assert [i["displayName"] for i in body["items"]] == [
        "Dice Roller",
        "More dice",
        "Storyteller",
        "Word count",
    ]


def test_search_puts_exact_id_matches_first(client, catalogue):
    _, body = get(client, "/api/packages", q="dice")
    ids = [i["id"] for i in body["items"]]
    assert ids[0] == "dice"
    assert set(ids) == {
        "dice",
        "dice-extra",
        "word-count",
    }  # word-count mentions dice in its description
    assert ids.index("dice-extra") < ids.index(
        "word-count"
    )  # a name match beats a description match
    _, body = get(client, "/api/packages", q="MORE DICE")
    assert [i["id"] for i in body["items"]] == ["dice-extra"]  # exact display name, any case
    _, body = get(client, "/api/packages", q="counts cards")
    assert [i["id"] for i in body["items"]] == []  # every word must match
    _, body = get(client, "/api/packages", q="narrative-engine@2")
    assert {i["id"] for i in body["items"]} == {"dice", "storyteller", "dice-extra"}


def test_filters_combine(client, catalogue):
    _, body = get(client, "/api/packages", tag=["mode:story"])
    assert {i["id"] for i in body["items"]} == {"storyteller", "dice-extra"}
    response = client.get("/api/packages?tag=mode:story&tag=cost:llm")
    assert [i["id"] for i in response.json()["items"]] == ["storyteller"]  # AND
    assert {i["id"] for i in get(client, "/api/packages", kind="core")[1]["items"]} == {
        "storyteller"
    }
    assert {i["id"] for i in get(client, "/api/packages", source="community")[1]["items"]} == {
        "dice-extra"
    }
    assert {i["id"] for i in get(client, "/api/packages", cost="function")[1]["items"]} == {
        "word-count"
    }
    assert {i["id"] for i in get(client, "/api/packages", cost="none")[1]["items"]} == {
        "dice-extra"
    }
    assert {
        i["id"] for i in get(client, "/api/packages", contract="narrative-engine@2")[1]["items"]
    } == {"storyteller", "dice-extra"}


def test_pagination_and_sort(client, catalogue):
    _, body = get(client, "/api/packages", limit=3, offset=3)
    assert body["count"] == 4 and [i["id"] for i in body["items"]] == ["word-count"]
    assert (body["limit"], body["offset"]) == (3, 3)
    _, body = get(client, "/api/packages", offset=40)
    assert body == {"items": [], "count": 4, "limit": 20, "offset": 40}
    _, body = get(client, "/api/packages", limit=2, offset=1)
    assert [i["id"] for i in body["items"]] == [
        i["id"] for i in get(client, "/api/packages")[1]["items"]
    ][1:3]


def test_the_old_page_parameters_still_page(client, catalogue):
    # page/page_size were the catalogue's paging before the one style; clients may still send them.
    _, body = get(client, "/api/packages", page_size=3, page=2)
    assert [i["id"] for i in body["items"]] == ["word-count"]
    assert (body["limit"], body["offset"]) == (3, 3)
    _, body = get(client, "/api/packages", page=9)
    assert body == {"items": [], "count": 4, "limit": 20, "offset": 160}
    _, body = get(client, "/api/packages", sort="updated")
    assert [i["id"] for i in body["items"]][0] == "word-count"  # indexed last


@pytest.mark.parametrize(
    "params",
    [
        {"sort": "random"},
        {"page_size": 101},
        {"page": 0},
        {"cost": "gold"},
        {"limit": 0},
        {"limit": 101},
        {"offset": -1},
    ],
)
def test_bad_parameters_are_refused_with_a_clear_error(client, catalogue, params):
    response = client.get("/api/packages", params)
    assert response.status_code == 422
    body = response.json()
    name = list(params)[0]
    assert body["code"] == "invalid" and name in body["message"]
    assert [i["path"] for i in body["details"]["issues"]] == [f"/query/{name}"]


def test_the_card_has_everything_the_detail_page_shows(client, catalogue):
    status, card = get(client, "/api/packages/dice")
    assert status == 200
    assert card["author"]["name"] == "Jane Doe" and card["author"]["about"] == "I make dice."
    assert [link["label"] for link in card["author"]["links"]] == ["Discord"]
    assert re.fullmatch(r"/packages/dice/links/\d+/", card["author"]["links"][0]["confirmUrl"])
    assert card["conflicts"] == ["other-dice@1"]
    assert [s["key"] for s in card["settings"]] == ["sides", "bonus"]
    assert card["settings"][0]["options"] == [
        {"value": "6", "label": "Six"},
        {"value": "20", "label": "Twenty"},
    ]
    assert card["stages"][0]["stage"] == "post-turn"
    runtime = card["runtimes"][0]
    assert runtime["detached"] and runtime["settle"] and runtime["maxSettleWaitMs"] == 5000
    assert card["commands"][0]["arguments"][0] == {
        "name": "expr",
        "type": "string",
        "description": "",
        "required": True,
        "variadic": False,
        "choices": [],
    }
    assert card["events"][0]["schema"] == "./schemas/rolled.json"
    assert card["dataNamespaces"][0]["namespace"] == "history"
    assert any("https://api.example.com" in line for line in card["permissions"]["summary"])
    assert card["manifest"]["displayName"] == "Dice Roller"
    assert card["errors"] == [] and card["tools"] == ["roll"]


def test_an_unknown_package_is_a_404_with_detail(client, catalogue):
    status, body = get(client, "/api/packages/nope")
    assert status == 404 and "nope" in body["detail"]


def test_tags_and_contracts(client, catalogue):
    status, tags = get(client, "/api/tags")
    assert status == 200
    counts = {t["tag"]: t["count"] for t in tags}
    assert counts["mode:story"] == 2 and counts["cost:llm"] == 2 and counts["cost:function"] == 1
    status, contracts = get(client, "/api/contracts")
    engine = next(c for c in contracts if c["contract"] == "narrative-engine@2")
    assert engine == {
        "contract": "narrative-engine@2",
        "providers": ["dice-extra", "storyteller"],
        "default": "storyteller",
    }
    assert not any(c["contract"] == "other-dice@1" for c in contracts)  # only provided contracts


@pytest.mark.parametrize(
    "url",
    ["/api/packages?page_size=100", "/api/packages?q=dice&page_size=100", "/api/packages/pkg-1"],
)
def test_the_api_query_count_does_not_grow_with_the_catalogue(
    client, tmp_path, rich_data, django_assert_num_queries, url, add
):
    def fill(start: int, stop: int) -> None:
        for n in range(start, stop):
            add(f"pkg-{n}", {**rich_data, "displayName": f"Dice {n}"})

    fill(1, 3)
    with CaptureQueriesContext(connection) as small:
        assert client.get(url).status_code == 200
    fill(3, 31)
    with django_assert_num_queries(len(small)):
        assert client.get(url).status_code == 200


def test_the_docs_load_swagger_from_our_static_files(client):
    response = client.get("/api/docs")
    assert response.status_code == 200
    html = response.content.decode()
    assert "cdn" not in html.lower() and "unpkg" not in html.lower()
    assets = re.findall(r'(?:src|href)="(/static/[^"]+)"', html)
    assert any(a.endswith("swagger-ui-bundle.js") for a in assets)
    assert any(a.endswith("swagger-ui.css") for a in assets)
    from django.contrib.staticfiles import finders

    for asset in assets:
        assert finders.find(asset.removeprefix("/static/")), asset


def test_the_card_says_who_can_satisfy_each_requirement(client, catalogue, add):
    add("needy", {"requires": ["narrative-engine@2", "missing@1"]})
    card = client.get("/api/packages/needy").json()
    assert card["requiresProviders"] == [
        {"contract": "narrative-engine@2", "providers": ["dice-extra", "storyteller"]},
        {"contract": "missing@1", "providers": []},
    ]
    page = client.get("/packages/needy/").content.decode()
    assert 'href="/packages/storyteller/"' in page and "no installed package provides it" in page


def test_the_router_answers_through_ninjas_test_client(catalogue):
    from ninja.testing import TestClient

    from catalogue.api import router

    response = TestClient(router).get("/packages?q=storyteller")
    assert response.status_code == 200
    assert [i["id"] for i in response.json()["items"]] == ["storyteller"]
