"""GET /api/sources, /api/sources/{id} and /api/sources/{id}/resolve (full stack)."""

from __future__ import annotations

from pathlib import Path

import pytest
from django.test import Client

from sources.services import source_plugins_sync
from tests.sources.conftest import PluginWriter, minimal_manifest

pytestmark = pytest.mark.django_db


@pytest.fixture
def synced(tmp_path: Path, settings, example_copy: Path, write_plugin: PluginWriter) -> None:
    settings.COVEL_SOURCE_PLUGIN_DIRS = [tmp_path / "plugins"]
    broken = minimal_manifest("broken")
    broken["source"]["codec"]["fields"]["number"] = "(?<=x)1"
    write_plugin(broken)
    source_plugins_sync()


def test_it_lists_source_plugins(client: Client, synced: None) -> None:
    response = client.get("/api/sources")
    assert response.status_code == 200
    assert response.json() == [
        {
            "id": "broken",
            "name": "Pulls",
            "state": "error",
            "errors": 1,
            "warnings": 0,
            "url": "/api/sources/broken",
        },
        {
            "id": "localfeed",
            "name": "Local feed",
            "state": "loaded",
            "errors": 0,
            "warnings": 0,
            "url": "/api/sources/localfeed",
        },
    ]


def test_it_filters_the_list_by_state(client: Client, synced: None) -> None:
    assert [p["id"] for p in client.get("/api/sources?state=error").json()] == ["broken"]
    assert [p["id"] for p in client.get("/api/sources?state=loaded").json()] == ["localfeed"]


def test_it_shows_one_plugin_with_manifest_and_jobs(client: Client, synced: None) -> None:
    body = client.get("/api/sources/localfeed").json()
    assert body["id"] == "localfeed" and body["state"] == "loaded" and body["errors"] == []
    assert body["manifest"]["source"]["slot"] == "item"
    assert {j["name"]: j["every"] for j in body["jobs"]} == {"ingest": "5m", "sweep": "1h"}


def test_it_shows_an_invalid_plugins_errors(client: Client, synced: None) -> None:
    body = client.get("/api/sources/broken").json()
    assert body["state"] == "error"
    assert [(e["path"], e["code"]) for e in body["errors"]] == [
        ("/source/codec/fields/number", "regex")
    ]


def test_an_unknown_plugin_is_404(client: Client, synced: None) -> None:
    response = client.get("/api/sources/nope")
    assert response.status_code == 404 and "nope" in response.json()["detail"]
    assert client.get("/api/sources/nope/resolve?key=a").status_code == 404


def test_it_resolves_a_key(client: Client, synced: None) -> None:
    response = client.get("/api/sources/localfeed/resolve", {"key": "news#12"})
    assert response.status_code == 200
    assert response.json() == {
        "key": "news#12",
        "url": "https://feeds.example/news/items/12",
        "label": "news item 12",
        "fields": {"feed": "news", "number": "12"},
    }


def test_it_resolves_an_address(client: Client, synced: None) -> None:
    response = client.get("/api/sources/localfeed/resolve", {"url": "https://feeds.example/news"})
    assert response.status_code == 200
    assert response.json() == {
        "key": "news",
        "url": "https://feeds.example/news",
        "label": "news",
        "fields": {"feed": "news"},
    }


@pytest.mark.parametrize(
    ("query", "why"),
    [
        ({"key": "news#0"}, "matches no key template"),
        ({"url": "https://elsewhere.example/news"}, "matches no URL template"),
        ({}, "exactly one of key or url"),
        ({"key": "news#1", "url": "https://feeds.example/news"}, "exactly one of key or url"),
    ],
)
def test_an_unresolvable_query_is_422_saying_why(
    client: Client, synced: None, query: dict, why: str
) -> None:
    response = client.get("/api/sources/localfeed/resolve", query)
    assert response.status_code == 422
    assert why in response.json()["detail"]


def test_an_invalid_plugin_resolves_nothing(client: Client, synced: None) -> None:
    response = client.get("/api/sources/broken/resolve", {"key": "a/b#1"})
    assert response.status_code == 422 and "invalid" in response.json()["detail"]


def test_the_router_answers_through_ninjas_test_client(synced: None) -> None:
    from ninja.testing import TestClient

    from config.api import api

    # The whole API, not the router alone: refusals take their shape from the API root.
    client = TestClient(api)
    assert [p["id"] for p in client.get("/sources").json()] == ["broken", "localfeed"]
    response = client.get("/sources/localfeed/resolve?url=https://feeds.example/news/items/9")
    assert response.status_code == 200 and response.json()["key"] == "news#9"
    assert client.get("/sources/localfeed/resolve?key=%20").status_code == 422
