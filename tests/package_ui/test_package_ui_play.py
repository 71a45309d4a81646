"""Package UI through real turns: the fate-checks (dice-check-like) and kinship (affinity-like)
corpus packages write their data in real turns in the Node host; the session page, its refresh
fragment, `GET /api/sessions/{id}/slots` and each turn's `blocks` show their specs drawn.
"""

from __future__ import annotations

import json

from django.db import connection
from django.test.utils import CaptureQueriesContext
from support import play, ui_session

WORLD_IR = ("hub-world-ir", "hub-narrative-v1")


def slots_of(client, session):
    answer = client.get(f"/api/sessions/{session.pk}/slots")
    assert answer.status_code == 200, answer.content
    return {s.get("id") or s["slot"]: s for s in answer.json()}


def texts(nodes):
    """Every text a drawn tree shows, depth first."""
    out = []
    for node in nodes:
        if node.get("text"):
            out.append(node["text"])
        out.extend(texts(node.get("children", [])))
    return out


def test_the_check_panel_is_empty_then_lists_each_check(db, alice, client):
    client.force_login(alice)
    session = ui_session(alice, "fate-checks")
    panel = slots_of(client, session)["fate-checks-panel"]
    assert panel["slot"] == "ui.right" and panel["placement"] == "right"
    assert panel["label"] == "Check log" and panel["icon"] == "dices"
    assert panel["watch"] == ["fate-checks/checks"]
    assert panel["empty"].startswith("No checks yet.")
    assert panel["value"] == {"entries": []}

    play(session, "I try to pick the lock.")
    play(session, "I look around.")  # nothing risky: no check
    play(session, "I climb the wall.")
    panel = slots_of(client, session)["fate-checks-panel"]
    assert panel["empty"] == "" and len(panel["value"]["entries"]) == 2
    [cards] = panel["nodes"]
    assert cards["type"] == "cardlist" and len(cards["children"]) == 2
    shown = texts(panel["nodes"])
    assert "I try to pick the lock." in shown and "I climb the wall." in shown
    assert any(t.endswith("vs DC 12") for t in shown)


def test_each_turn_carries_its_own_message_block(db, alice, client):
    client.force_login(alice)
    session = ui_session(alice, "fate-checks")
    play(session, "I try to force the door.")
    play(session, "I wait.")
    turns = client.get(f"/api/sessions/{session.pk}/turns").json()["items"]
    first, second = turns
    [block] = first["blocks"]
    assert block["type"] == "ui.message" and block["id"] == "fate-checks/fate-check-result"
    assert block["meta"] == {
        "pluginId": "fate-checks",
        "turnId": first["turnId"],
        "spec": "./ui/check-message.json",
        "specId": "fate-check-result",
    }
    assert block["data"]["checks"][0]["action"] == "I try to force the door."
    assert "I try to force the door." in texts(block["nodes"])
    assert second["blocks"] == []  # no check that turn: no block under it


def test_the_page_draws_panels_and_blocks_in_the_sessions_language(db, alice, client):
    client.force_login(alice)
    session = ui_session(alice, "fate-checks", "kinship", bundled=WORLD_IR, locale="zh-CN")
    play(session, "I thank Mira, then try to <b>sneak</b> past Tobin.")
    page = client.get(f"/sessions/{session.pk}/").content.decode()
    assert 'href="/static/css/package-ui.css"' in page
    assert 'id="package-ui"' in page and 'data-watch="fate-checks/checks kinship/affinity"' in page
    assert 'data-message-watch="fate-checks/message kinship/message"' in page
    # Labels and texts in Chinese: the panel titles, the tier badge, the toast's heading.
    assert "判定记录" in page and "好感" in page and "好感变化" in page and "友好" in page
    # The player's markup is escaped text in the check block, never markup.
    assert "I thank Mira, then try to &lt;b&gt;sneak&lt;/b&gt; past Tobin." in page
    assert "<b>sneak</b>" not in page
    # The message blocks sit in the turn's list item.
    turn = page.index('class="turn" data-turn=')
    assert page.index('class="package-ui-message"', turn) < page.index("</li>", turn)
    # The affinity bar is a <meter>: no inline style (the CSP forbids them anyway).
    assert '<meter min="0" max="200" value="110">' in page


def test_the_fragment_gives_the_panels_or_one_turns_blocks(db, alice, bob, client):
    client.force_login(alice)
    session = ui_session(alice, "fate-checks")
    result = play(session, "I try the lock.")
    panels = client.get(f"/sessions/{session.pk}/ui/").content.decode()
    assert panels.lstrip().startswith('<section id="package-ui"') and "I try the lock." in panels
    block = client.get(f"/sessions/{session.pk}/ui/?turn={result['turnId']}").content.decode()
    assert 'class="package-ui-message"' in block and "I try the lock." in block
    assert client.get(f"/sessions/{session.pk}/ui/?turn=not-a-uuid").status_code == 404
    # Another player's session: refused.
    from django.contrib.auth import get_user_model

    charlie = get_user_model().objects.create_user("charlie", "c@example.com", "pw")
    client.force_login(charlie)
    assert client.get(f"/sessions/{session.pk}/ui/").status_code == 403


def test_an_unusable_spec_shows_a_named_placeholder_not_a_broken_page(db, alice, client, tmp_path):
    from shutil import copytree

    from support import index_bundled, index_folder
    from test_play_support import make_world

    from sessions.services import session_create

    package = tmp_path / "fate-checks"
    copytree(ui_session.__globals__["CORPUS"] / "fate-checks", package)
    spec = json.loads((package / "ui/checks-panel.json").read_text())
    spec["view"]["children"][0]["children"].insert(0, {"component": "HoloDeck"})
    spec["view"]["children"][0]["children"].append(
        {"component": "Text", "props": {"content": {"$item": 7}}}
    )
    (package / "ui/checks-panel.json").write_text(json.dumps(spec))
    (package / "ui/check-message.json").write_text("{ not json")
    index_bundled("storyteller")
    index_folder(package)
    world = make_world(owner=alice, plugins=["fate-checks"])
    session = session_create(owner=alice, world=world)
    play(session, "I try the lock.")
    client.force_login(alice)
    answer = client.get(f"/sessions/{session.pk}/")
    assert answer.status_code == 200
    page = answer.content.decode()
    assert 'data-reason="unknown-component" data-component="HoloDeck"' in page
    assert "Unknown component &#x27;HoloDeck&#x27;." in page
    assert 'data-reason="bad-binding"' in page and "$item must be a string path" in page
    # The unreadable message spec is named in the API's failures and on the page.
    slots = slots_of(client, session)
    failure = slots["check-message"]["failures"][0]
    assert failure["code"] == "spec-unusable" and failure["plugin"] == "fate-checks"
    assert failure["message"].startswith("./ui/check-message.json: the file is not JSON")
    assert "./ui/check-message.json: the file is not JSON" in page


def test_the_page_reads_package_data_once_however_many_turns(db, alice, client):
    client.force_login(alice)
    session = ui_session(alice, "fate-checks", "kinship", bundled=WORLD_IR)
    play(session, "I thank Mira.")
    with CaptureQueriesContext(connection) as one:
        client.get(f"/sessions/{session.pk}/")
    for n in range(3):
        play(session, f"I try to climb, Mira, {n}.")
    with CaptureQueriesContext(connection) as four:
        client.get(f"/sessions/{session.pk}/")
    ui_reads = [
        q["sql"]
        for q in four.captured_queries
        if "pluginda" in q["sql"].lower() and "updated_at" in q["sql"] and " IN " in q["sql"]
    ]
    assert len(ui_reads) == 1
    assert len(four.captured_queries) == len(one.captured_queries)


def test_the_bundled_scene_view_draws_its_row_without_placeholders(db, alice, client):
    from support import index_bundled
    from test_play_support import make_world

    from sessions.services import session_create

    index_bundled("storyteller", "scene-setter")
    world = make_world(owner=alice, plugins=["scene-setter"])
    session = session_create(owner=alice, world=world)
    client.force_login(alice)
    [empty] = [s for s in slots_of(client, session).values() if s.get("id") == "scene-view"]
    assert empty["placement"] == "view" and empty["empty"] == "No scene has been set yet."
    play(session, "I look around.")
    [view] = [s for s in slots_of(client, session).values() if s.get("id") == "scene-view"]
    assert view["empty"] == "" and view["failures"] == []
    scene = view["value"]
    assert "placeholder" not in json.dumps(view["nodes"])
    assert scene["place"] in texts(view["nodes"])


OMEN_PLUGIN = """---
id: omens
version: 0.1.0
description: Tells one omen a turn as its own story segment, drawn by a segment template.
contributes:
  ui:
    segment: [./ui/omen-segment.json]
runtime:
  description: Tells an omen.
  schedule:
    stage: post-turn
  function:
    timeoutMs: 2000
---
Omens.
"""
OMEN_HANDLER = """
import { makeProposal, withPendingProposals } from "@covel/plugin-handlers-utils";
export default async function handler(ctx) {
  const now = new Date().toISOString();
  const said = String(ctx.playerMessage ?? "");
  return withPendingProposals({ outcome: "success", value: {} }, [
    makeProposal(ctx, now, "narrative.append", { content: `A crow circles: ${said}`, kind: "omen" }),
    makeProposal(ctx, now, "narrative.append", { content: "An aside.", kind: "plugin" }),
  ]);
}
"""
OMEN_SPEC = {
    "id": "omen-segment",
    "match": {"kind": "omen"},
    "view": {
        "component": "Row",
        "children": [
            {
                "component": "Badge",
                "props": {"label": {"zh": "预兆", "en": "Omen"}, "color": "purple"},
            },
            {"component": "Text", "props": {"content": {"$segment": "content"}}},
        ],
    },
}


def test_a_segment_template_draws_the_segments_of_its_kind_under_the_turn(
    db, alice, client, tmp_path
):
    from support import index_bundled, index_folder
    from test_play_support import make_world

    from sessions.services import session_create

    root = tmp_path / "omens"
    (root / "ui").mkdir(parents=True)
    (root / "PLUGIN.md").write_text(OMEN_PLUGIN)
    (root / "handler.js").write_text(OMEN_HANDLER)
    (root / "ui/omen-segment.json").write_text(json.dumps(OMEN_SPEC))
    index_bundled("storyteller")
    index_folder(root)
    session = session_create(owner=alice, world=make_world(owner=alice, plugins=["omens"]))
    result = play(session, "I <i>wait</i>.")
    client.force_login(alice)
    [turn] = client.get(f"/api/sessions/{session.pk}/turns").json()["items"]
    [block] = [b for b in turn["blocks"] if b["type"] == "ui.segment"]
    assert block["meta"]["specId"] == "omen-segment" and block["meta"]["turnId"] == result["turnId"]
    assert block["data"]["kind"] == "omen"
    assert texts(block["nodes"]) == ["Omen", "A crow circles: I <i>wait</i>."]
    page = client.get(f"/sessions/{session.pk}/").content.decode()
    assert 'class="pui-message pui-segment"' in page and "A crow circles: I &lt;i&gt;wait" in page
    assert 'data-refresh-on-commit="true"' in page
