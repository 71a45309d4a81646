"""The detail page spells out what a manifest declares beyond the index rows: how the package
connects, its forms, world projections, prompt text, published contract schemas, what a world
can supply and how each runtime runs.

Personas: the anonymous visitor reads every detail page; nothing here needs a login.
"""

from __future__ import annotations

import re

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from catalogue.manifest.types import Issue
from catalogue.selectors import package_declarations, package_get, runtime_details
from catalogue.services import packages_sync

pytestmark = pytest.mark.django_db

EVIL = "<script>alert(1)</script>"
ESCAPED = "&lt;script&gt;alert(1)&lt;/script&gt;"
SECTION_IDS = ("wiring-h", "prompt-h", "forms-h", "world-content-h", "projections-h")


def page_of(client, package_id: str) -> str:
    response = client.get(f"/packages/{package_id}/")
    assert response.status_code == 200, response.status_code
    return response.content.decode()


def section(page: str, heading_id: str) -> str:
    """The HTML of the section labelled by heading_id ("" when the page has none)."""
    match = re.search(
        rf'<section class="card[^"]*" aria-labelledby="{heading_id}">(.*?)</section>', page, re.S
    )
    return match.group(1) if match else ""


def text_of(html: str) -> str:
    return " ".join(re.sub(r"<[^>]+>", " ", html).split())


# --- The bundled plugins ---------------------------------------------------------------------


def test_wires_forms_and_prompt_extensions_of_scene_setter(client, bundled):
    page = page_of(client, "scene-setter")
    wiring = text_of(section(page, "wiring-h"))
    assert "Provider wires its own code registers: scene-wire ." in wiring
    forms = text_of(section(page, "forms-h"))
    assert "Form validators its own code registers: scene-form ." in forms
    assert "scene-setter may ask the player for input, such as a form" in forms
    prompt = text_of(section(page, "prompt-h"))
    assert "adds prompt text while a session runs: prompt.segment@1/scene-brief" in prompt
    # A function runtime's body is shown as notes, never as a model prompt.
    assert "notes for people; a function runtime sends no prompt to a model" in prompt


def test_prompt_segments_say_where_they_go_and_show_the_text_collapsed(client, bundled):
    page = page_of(client, "rapport")
    prompt = section(page, "prompt-h")
    assert "affinity-rules</code>: after the conversation history, as a system message" in prompt
    assert "affinity-reminder</code>: inside the conversation history, at depth 2" in prompt
    # Each body is collapsed, preformatted and escaped (this one contains a tag-like word).
    assert re.search(
        r"<details><summary>Show the text \(74 characters\)</summary>"
        r'<pre tabindex="0" class="prompt-body">Scores in &lt;current-affinity&gt; are cumulative',
        prompt,
    )
    runtime_prompt = re.search(
        r'<details><summary><strong>rapport</strong>.*?</summary><pre tabindex="0" class="prompt-body">(.*?)</pre>',
        prompt,
        re.S,
    )
    assert runtime_prompt and "Prefer missing a change over inventing one." in runtime_prompt.group(
        1
    )
    assert "the instructions its model reads on each run" in prompt


def test_wiring_shows_inputs_self_data_and_runtime_order(client, bundled):
    rapport = text_of(section(page_of(client, "rapport"), "wiring-h"))
    assert (
        "reads its input narrative from the provider of narrative-engine@2 "
        "(the part at /narrativeOutput); it runs without it" in rapport
    )
    assert "sees its own rapport data in the prompt as &lt;current-affinity&gt;" in rapport
    assert "(summary, at most 20 entries)" in rapport
    chronicle = text_of(section(page_of(client, "chronicle"), "wiring-h"))
    for line in (
        "chronicle/archive",
        "reads its input summary from runtime chronicle/summarize, "
        "as committed in an earlier turn under chapter-summary",
        "waits for runtime chronicle/summarize to succeed",
        "runs after runtime chronicle/index",
        "reads its input digest from the turn digest",
        "keeps its output under chapter-summary for later turns",
    ):
        assert line in chronicle, line
    storyteller = text_of(section(page_of(client, "storyteller"), "wiring-h"))
    assert "publishes its output as narrative-engine@2" in storyteller


def test_what_a_world_can_supply_and_memory_search(client, bundled):
    page = page_of(client, "chronicle")
    world = section(page, "world-content-h")
    assert "<strong>Prologue chapters</strong>" in world
    assert "read from data/chronicle/*.yaml in the world folder, one record per id" in world
    assert "example: ./examples/chapters.json" in world
    assert re.search(
        r"<details><summary>How to write it</summary><p class=\"hint\">One record", world
    )
    assert "found by memory search (field summary)" in section(page, "data-h")
    rapport = text_of(section(page_of(client, "rapport"), "world-content-h"))
    assert "Starting rapport" in rapport and "read from data/affinity.yaml" in rapport


def test_published_schemas_and_how_each_runtime_runs(client, bundled):
    weather = page_of(client, "weather")
    contracts = text_of(section(weather, "contracts-h"))
    assert (
        "Contract schemas it publishes weather-report@1 : ./schemas/report.schema.json" in contracts
    )
    runtimes = text_of(section(weather, "runtimes-h"))
    assert "stops after 3 s" in runtimes
    assert "safe to run beside the other runtimes of its stage" in runtimes
    satchel = text_of(section(page_of(client, "satchel"), "runtimes-h"))
    assert "sees the last 1 turn; at most 4 model steps a run" in satchel
    assert "change-items (service inventory.items@1)" in satchel and "wallet-get" in satchel
    summarize = text_of(section(page_of(client, "chronicle"), "runtimes-h"))
    assert "model reasoning off" in summarize
    assert "a guard (./runtimes/summarize/guard.js) may skip a run" in summarize
    assert "A core package: every session requests it by default." in page_of(client, "storyteller")


def test_world_projections_from_the_real_loader(client, real_plugin_dirs):
    package = real_plugin_dirs.bundled / "atlas"
    (package / "schemas").mkdir(parents=True)
    (package / "schemas" / "place.schema.json").write_text('{"type": "object"}')
    (package / "project.js").write_text("export default function project(value) { return []; }\n")
    (package / "PLUGIN.md").write_text(
        """---
description: Keeps the world's places.
contributes:
  data:
    places:
      schema: ./schemas/place.schema.json
  worldProjections:
    places-from-map:
      from: https://example.com/schemas/map.json
      handler: ./project.js
      outputs:
        places:
          namespace: places
          key: id
---
"""
    )
    summary = packages_sync()
    assert not summary.invalid, summary.invalid
    projections = text_of(section(page_of(client, "atlas"), "projections-h"))
    assert (
        "places-from-map : world data with the schema https://example.com/schemas/map.json , "
        "through ./project.js , into places (one record per id)" in projections
    )


# --- Empty states, hidden prompts, hostile text ---------------------------------------------


def test_nothing_declared_means_no_new_section(client, add):
    add("plain")
    page = page_of(client, "plain")
    for heading_id in SECTION_IDS:
        assert f'aria-labelledby="{heading_id}"' not in page, heading_id
    assert "Contract schemas it publishes" not in page and "runtime-details" not in page


def test_a_concealed_runtime_prompt_is_never_shown(client, add):
    add(
        "secret",
        {"runtime": {"schedule": {"stage": "post-turn"}, "io": {"concealed": True}}},
        body="The murderer is the butler.",
    )
    page = page_of(client, "secret")
    assert "butler" not in page
    assert "secret</strong> handles hidden content: its prompt is not shown." in section(
        page, "prompt-h"
    )


def test_hostile_text_is_escaped_in_every_new_section(client, add):
    data = {
        "contracts": {f"evil{EVIL}@1": {"schema": f"./{EVIL}.json"}},
        "contributes": {
            "wires": [f"wire{EVIL}"],
            "forms": [f"form{EVIL}"],
            "data": {
                f"ns{EVIL}": {
                    "schema": "./s.json",
                    "authoring": {
                        "title": f"Title {EVIL}",
                        "summary": f"Summary {EVIL}",
                        "hint": f"Hint {EVIL}",
                        "source": {"path": f"data/{EVIL}.yaml"},
                    },
                }
            },
            "worldProjections": {
                f"proj{EVIL}": {
                    "from": f"https://example.com/{EVIL}",
                    "handler": f"./{EVIL}.js",
                    "outputs": {"o": {"namespace": f"ns{EVIL}", "key": f"k{EVIL}"}},
                }
            },
            "prompt": [
                {
                    "id": f"seg{EVIL}",
                    "position": f"pos{EVIL}",
                    "role": f"role{EVIL}",
                    "content": f"</pre>{EVIL}",
                }
            ],
        },
        "runtime": {
            "schedule": {"stage": "post-turn", "needs": [f"other{EVIL}"]},
            "io": {"inputs": {f"in{EVIL}": {"from": {"contract": f"c{EVIL}@1"}}}},
            "agent": {
                "tools": {"builtin": ["create-form", f"tool{EVIL}"]},
                "finishWith": f"t{EVIL}",
            },
            "effects": {"reads": [f"state:{EVIL}"]},
        },
    }
    add("evil", data, body=f"Prompt </pre>{EVIL}")
    page = page_of(client, "evil")
    assert "<script>alert(1)" not in page and "</pre><script>" not in page
    for heading_id in (*SECTION_IDS, "contracts-h", "runtimes-h"):
        assert ESCAPED in section(page, heading_id), heading_id
    prompt = section(page, "prompt-h")
    assert f'<pre tabindex="0" class="prompt-body">&lt;/pre&gt;{ESCAPED}</pre>' in prompt
    assert f'<pre tabindex="0" class="prompt-body">Prompt &lt;/pre&gt;{ESCAPED}</pre>' in prompt


def test_an_invalid_package_with_odd_values_still_renders(client, add):
    issue = Issue("PLUGIN.md", "/contributes", "type", "contributes is malformed")
    add(
        "odd",
        {
            "contracts": ["not", "a", "map"],
            "contributes": {
                "wires": "scene-wire",
                "forms": [1, None, "real-form"],
                "worldProjections": ["x"],
                "prompt": {"id": "x"},
                "data": {"n": {"authoring": "title"}},
            },
            "runtime": {
                "schedule": {"every": True, "needs": 3, "trigger": "often"},
                "io": {"inputs": ["x"], "selfData": "all"},
                "agent": {"loop": {"maxSteps": "many"}, "tools": {"services": [{"as": "x"}]}},
            },
        },
        errors=(issue,),
    )
    page = page_of(client, "odd")
    assert "real-form" in section(page, "forms-h")
    for heading_id in ("wiring-h", "world-content-h", "projections-h"):
        assert f'aria-labelledby="{heading_id}"' not in page, heading_id
    assert "model step" not in page


# --- Plain data and cost ---------------------------------------------------------------------


def test_runtime_details_in_plain_language():
    agent = {
        "schedule": {
            "every": 3,
            "trigger": {"type": "auto", "startTurn": 2, "maxTriggerCount": 1, "cooldownTurns": 4},
        },
        "agent": {
            "history": {"maxTurns": 0},
            "loop": {"maxSteps": 1, "maxRetries": 0, "timeoutMs": 90000},
            "tools": {"datasets": [{"dataset": "items", "tools": ["get", "list"]}]},
        },
    }
    assert runtime_details(agent, kind="agent") == [
        "runs every 3 turns",
        "not before turn 2",
        "at most 1 time a session",
        "at least 4 turns between two runs",
        "sees no earlier turns",
        "at most 1 model step a run",
        "never retries a failed model call",
        "stops after 90 s",
        "the model may call items-get, items-list",
    ]
    assert runtime_details({"function": {"timeoutMs": 500}}, kind="function") == [
        "stops after 500 ms"
    ]
    assert runtime_details("not a runtime", kind="agent") == []


def test_declarations_cost_no_query_and_the_page_count_stays_flat(
    client, add, django_assert_num_queries
):
    def package(n: int) -> dict:
        return {
            "contracts": {f"c{i}@1": {"schema": f"./c{i}.json"} for i in range(n)},
            "contributes": {
                "wires": [f"w{i}" for i in range(n)],
                "forms": [f"f{i}" for i in range(n)],
                "data": {
                    f"ns{i}": {"schema": "./s.json", "authoring": {"title": f"T{i}"}}
                    for i in range(n)
                },
                "worldProjections": {
                    f"p{i}": {
                        "from": "https://example.com/s.json",
                        "handler": "./p.js",
                        "outputs": {"o": {"namespace": f"ns{i}", "key": "id"}},
                    }
                    for i in range(n)
                },
                "prompt": [
                    {"id": f"s{i}", "position": "system", "content": "x" * 5000} for i in range(n)
                ],
                "extensions": [f"prompt.segment@1/e{i}" for i in range(n)],
            },
            "runtime": {
                "schedule": {"stage": "post-turn", "needs": [f"r{i}" for i in range(n)]},
                "io": {"inputs": {f"i{i}": {"from": {"contract": f"x{i}@1"}} for i in range(n)}},
            },
        }

    add("big", package(1), body="Short prompt.")
    with CaptureQueriesContext(connection) as small:
        page_of(client, "big")
    add("big", package(12), body="Long prompt. " * 2000)
    with django_assert_num_queries(len(small)):
        page = page_of(client, "big")
    assert "T11" in page and "p11" in page and "w11" in page and "prompt.segment@1/e11" in page
    loaded = package_get(package_id="big")
    with django_assert_num_queries(0):
        declared = package_declarations(loaded)
    assert len(declared["promptSegments"]) == 12 and len(declared["wiring"][0]["lines"]) == 24
