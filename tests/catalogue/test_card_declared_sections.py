"""The API card carries the detail page's declared sections as typed fields (wires, wiring,
forms, asking, world projections, prompt segments and text, the PLUGIN.md body, contract
schemas, what a world can supply, and each runtime's details), built by the same selector.

Personas: the anonymous visitor reads every card; nothing here needs a login.
"""

from __future__ import annotations

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from catalogue.manifest.types import Issue
from catalogue.selectors import package_declarations, package_get

pytestmark = pytest.mark.django_db

SECTIONS = (
    "wires",
    "wiring",
    "forms",
    "asking",
    "worldProjections",
    "promptSegments",
    "promptExtensions",
    "prompts",
    "contractSchemas",
    "worldContent",
)


def card_of(client, package_id: str) -> dict:
    response = client.get(f"/api/packages/{package_id}")
    assert response.status_code == 200, response.status_code
    return response.json()


def test_bundled_plugins_have_their_sections_in_the_card(client, bundled):
    scene = card_of(client, "scene-setter")
    assert scene["wires"] == ["scene-wire"] and scene["forms"] == ["scene-form"]
    assert [a["runtime"] for a in scene["asking"]] == ["scene-setter"]
    assert scene["promptExtensions"] == [{"point": "prompt.segment@1", "id": "scene-brief"}]
    assert scene["prompts"][0]["kind"] == "function" and scene["prompts"][0]["text"]

    rapport = card_of(client, "rapport")
    segments = {s["id"]: s for s in rapport["promptSegments"]}
    assert segments["affinity-reminder"]["place"] == "inside the conversation history, at depth 2"
    assert segments["affinity-reminder"]["content"].startswith("Scores in <current-affinity>")
    assert rapport["prompts"][0]["runtime"] == "rapport"
    assert "Prefer missing a change over inventing one." in rapport["prompts"][0]["text"]
    # The inline runtime owns the PLUGIN.md body: it is in prompts, not repeated as body.
    assert rapport["body"] is None

    chronicle = card_of(client, "chronicle")
    wiring = {w["runtime"]: w["lines"] for w in chronicle["wiring"]}
    assert "waits for runtime chronicle/summarize to succeed" in wiring["chronicle/archive"]
    assert chronicle["worldContent"][0]["title"] == "Prologue chapters"
    assert "example: ./examples/chapters.json" in chronicle["worldContent"][0]["details"]
    assert chronicle["body"].startswith("Chronicle has no inline runtime")
    assert [p["file"] for p in chronicle["prompts"]] == [
        "runtimes/archive/RUNTIME.md",
        "runtimes/index/RUNTIME.md",
        "runtimes/summarize/RUNTIME.md",
    ]
    summarize = next(r for r in chronicle["runtimes"] if r["id"] == "summarize")
    assert "model reasoning off" in summarize["details"]

    weather = card_of(client, "weather")
    assert {"contract": "weather-report@1", "schema": "./schemas/report.schema.json"} in weather[
        "contractSchemas"
    ]


def test_the_card_and_the_page_read_the_same_selector(client, bundled):
    for package_id in ("scene-setter", "rapport", "chronicle", "weather", "satchel"):
        card = card_of(client, package_id)
        declared = package_declarations(package_get(package_id=package_id))
        for key, value in declared.items():
            # JSON turns nothing the selector returns into something else, so equal means equal.
            assert card[key] == value, (package_id, key)


def test_world_projections_in_the_card(client, add):
    add(
        "atlas",
        {
            "contributes": {
                "worldProjections": {
                    "places-from-map": {
                        "from": "https://example.com/schemas/map.json",
                        "handler": "./project.js",
                        "outputs": {"places": {"namespace": "places", "key": "id"}},
                    }
                }
            }
        },
    )
    assert card_of(client, "atlas")["worldProjections"] == [
        {
            "id": "places-from-map",
            "from": "https://example.com/schemas/map.json",
            "handler": "./project.js",
            "outputs": [{"id": "places", "namespace": "places", "key": "id"}],
        }
    ]


def test_a_package_without_sections_gets_empty_lists_and_a_null_body(client, add):
    add("plain")
    card = card_of(client, "plain")
    for key in SECTIONS:
        assert card[key] == [], key
    assert card["body"] is None


def test_an_invalid_package_gets_only_what_its_raw_values_allow(client, add):
    issue = Issue("PLUGIN.md", "/contributes", "type", "contributes is malformed")
    add(
        "odd",
        {"contributes": {"wires": "one-wire", "forms": [1, None, "real-form"], "prompt": {}}},
        errors=(issue,),
    )
    card = card_of(client, "odd")
    assert card["forms"] == ["real-form"]
    assert card["wires"] == [] and card["promptSegments"] == [] and card["body"] is None


def test_a_concealed_prompt_stays_out_of_the_card(client, add):
    add(
        "secret",
        {"runtime": {"schedule": {"stage": "post-turn"}, "io": {"concealed": True}}},
        body="The murderer is the butler.",
    )
    card = card_of(client, "secret")
    assert card["prompts"] == [
        {
            "runtime": "secret",
            "file": "PLUGIN.md",
            "kind": "agent",
            "concealed": True,
            "text": "",
        }
    ]
    assert card["body"] is None and "butler" not in str(card)


def test_the_openapi_schema_documents_the_new_fields(client):
    schema = client.get("/api/openapi.json").json()["components"]["schemas"]
    card = schema["PackageCardOut"]
    for key in (*SECTIONS, "body"):
        assert key in card["properties"], key
        assert key in card.get("required", []), key
        assert card["properties"][key].get("description"), key
    assert "details" in schema["RuntimeOut"]["properties"]
    assert "from" in schema["WorldProjectionOut"]["properties"]
    assert "schema" in schema["ContractSchemaOut"]["properties"]


def _big(n: int) -> dict:
    """A package without an inline runtime but with n entries in every declared section."""
    return {
        "contracts": {f"c{i}@1": {"schema": f"./c{i}.json"} for i in range(n)},
        "tags": [f"t{i}" for i in range(n)],
        "contributes": {
            "wires": [f"w{i}" for i in range(n)],
            "forms": [f"f{i}" for i in range(n)],
            "data": {
                f"ns{i}": {"schema": "./s.json", "authoring": {"title": f"T{i}"}} for i in range(n)
            },
            "prompt": [
                {"id": f"s{i}", "position": "system", "content": "x" * 2000} for i in range(n)
            ],
            "extensions": [f"prompt.segment@1/e{i}" for i in range(n)],
        },
    }


@pytest.mark.parametrize("url", ["/api/packages?page_size=100", "/api/packages?q=pkg"])
def test_the_list_query_count_stays_flat_and_leaves_the_body_behind(
    client, add, django_assert_num_queries, url
):
    def fill(start: int, stop: int, size: int) -> None:
        for n in range(start, stop):
            add(f"pkg-{n}", _big(size), body="Notes for people. " * 500)

    fill(1, 3, 1)
    with CaptureQueriesContext(connection) as small:
        assert client.get(url).status_code == 200
    fill(3, 31, 12)
    with django_assert_num_queries(len(small)) as big:
        response = client.get(url)
    assert response.status_code == 200 and response.json()["count"] == 30
    # A list item never needs the body (or the manifest): those columns stay in the database.
    package_selects = [
        q["sql"] for q in big.captured_queries if 'FROM "catalogue_package"' in q["sql"]
    ]
    assert package_selects
    assert not any('"catalogue_package"."body"' in sql for sql in package_selects)
    assert "Notes for people" not in response.content.decode()


def test_the_card_query_count_does_not_grow_with_its_sections(
    client, add, django_assert_num_queries
):
    add("big", _big(1), body="Short notes.")
    with CaptureQueriesContext(connection) as small:
        card_of(client, "big")
    add("big", _big(12), body="Long notes. " * 2000)
    with django_assert_num_queries(len(small)):
        card = card_of(client, "big")
    assert len(card["promptSegments"]) == 12 and len(card["worldContent"]) == 12
    assert card["body"].startswith("Long notes.")
