"""A package's UI view drawn over its state: bindings, repeat, visible, {zh, en} texts,
placeholders, and what the page template makes of package text (escaped, never markup).

The specs here are shaped like Covel's own (ackness/covel plugins/dice-check and
plugins/affinity ui/*.json), written anew for these tests.
"""

from __future__ import annotations

from django.template.loader import render_to_string

from sessions.package_ui.render import MAX_REPEAT, render_view

CHECK_VIEW = {
    "component": "Stack",
    "props": {"gap": "sm"},
    "children": [
        {
            "component": "Text",
            "visible": {"$state": "/rejectedCount"},
            "props": {"content": {"zh": "有判定未通过核验。", "en": "Some checks were rejected."}},
        },
        {
            "component": "Card",
            "props": {"variant": "subtle"},
            "repeat": {"statePath": "/checks", "key": "seq"},
            "children": [
                {
                    "component": "Row",
                    "props": {"gap": "sm", "align": "center"},
                    "children": [
                        {
                            "component": "Text",
                            "props": {"content": {"$item": "action"}, "weight": "bold"},
                        },
                        {
                            "component": "Badge",
                            "props": {
                                "label": {"$item": "outcomeLabel"},
                                "color": {"$item": "outcomeColor"},
                            },
                        },
                        {
                            "component": "Icon",
                            "visible": {"$item": "critical"},
                            "props": {"name": "sparkles"},
                        },
                    ],
                },
                {
                    "component": "Text",
                    "props": {"content": {"$item": "rollText"}, "variant": "muted"},
                },
            ],
        },
    ],
}

STATE = {
    "rejectedCount": 0,
    "checks": [
        {
            "action": "Pick the lock",
            "outcomeLabel": {"zh": "大成功", "en": "Critical success"},
            "outcomeColor": "purple",
            "critical": True,
            "rollText": "20 + 1 = 21 vs DC 12",
        },
        {
            "action": "<script>alert(1)</script>",
            "outcomeLabel": {"zh": "失败", "en": "Failure"},
            "outcomeColor": "url(javascript:alert(1))",
            "critical": False,
            "rollText": "3 + 1 = 4 vs DC 12",
        },
    ],
}


def types(nodes):
    """The node types of a tree, depth first."""
    out = []
    for node in nodes:
        out.append(node["type"])
        out.extend(types(node.get("children", [])))
    return out


def test_repeat_draws_the_children_once_per_item_with_item_bindings():
    [stack] = render_view(CHECK_VIEW, STATE, "en")
    # rejectedCount is 0: hidden, as JavaScript judges 0. One card, its rows repeated per check.
    [card] = stack["children"]
    assert card["type"] == "card" and card["classes"] == "variant-subtle"
    rows = [n for n in card["children"] if n["type"] == "row"]
    assert len(rows) == 2
    first = rows[0]["children"]
    assert [n["type"] for n in first] == ["text", "badge", "icon"]
    assert first[0]["text"] == "Pick the lock" and first[0]["classes"] == "weight-bold"
    assert first[1] == {"type": "badge", "text": "Critical success", "classes": "tone-purple"}
    assert first[2]["glyph"] == "✦" and first[2]["name"] == "sparkles"
    # critical false: the icon is not drawn; an unknown colour falls back to our neutral tone.
    second = rows[1]["children"]
    assert [n["type"] for n in second] == ["text", "badge"]
    assert second[1]["classes"] == "tone-neutral"


def test_texts_follow_the_session_language():
    [stack] = render_view(CHECK_VIEW, {**STATE, "rejectedCount": 1}, "zh-CN")
    notice, card = stack["children"]
    assert notice["text"] == "有判定未通过核验。"
    badge = card["children"][0]["children"][1]
    assert badge["text"] == "大成功"
    # A locale without its own text falls back to English.
    [stack] = render_view(CHECK_VIEW, {**STATE, "rejectedCount": 1}, "fr")
    assert stack["children"][0]["text"] == "Some checks were rejected."


def test_an_unknown_component_and_a_bad_binding_are_named_placeholders():
    view = {
        "component": "Stack",
        "children": [
            {"component": "HoloDeck", "props": {"content": "x"}},
            {"component": "Text", "props": {"content": {"$item": "name"}}},  # no repeat here
            {"component": "Text", "props": {"content": {"$state": "entries"}}},  # not a pointer
            {"component": "Badge", "props": {"label": {"$eval": "1+1"}}},
            {"component": "Text", "props": {"content": "still drawn"}},
        ],
    }
    [stack] = render_view(view, {}, "en")
    unknown, item, state, expr, text = stack["children"]
    assert unknown == {
        "type": "placeholder",
        "name": "HoloDeck",
        "reason": "unknown-component",
        "text": "Unknown component 'HoloDeck'.",
    }
    assert item["reason"] == "bad-binding" and "outside a repeat" in item["text"]
    assert state["reason"] == "bad-binding" and "not a JSON pointer" in state["text"]
    assert expr["reason"] == "bad-binding" and "$eval" in expr["text"]
    assert text == {"type": "text", "text": "still drawn", "classes": ""}


def test_visible_conditions():
    def shown(condition, state):
        return bool(
            render_view(
                {"component": "Text", "visible": condition, "props": {"content": "x"}}, state, "en"
            )
        )

    assert shown({"$state": "/tab", "eq": "home"}, {"tab": "home"})
    assert not shown({"$state": "/tab", "eq": "home"}, {"tab": "log"})
    assert shown({"$state": "/tab", "neq": "home"}, {"tab": "log"})
    assert shown({"$state": "/missing", "not": True}, {})
    assert shown({"$state": "/list"}, {"list": []})  # an empty list is truthy in JavaScript
    assert not shown({"$state": "/n"}, {"n": 0})
    assert shown({"$and": [{"$state": "/a"}, {"$state": "/b"}]}, {"a": 1, "b": "y"})
    assert not shown({"$and": [{"$state": "/a"}, {"$state": "/b"}]}, {"a": 1, "b": ""})
    assert shown({"$or": [{"$state": "/a"}, {"$state": "/b"}]}, {"a": 0, "b": "y"})


def test_progress_is_clamped_and_classes_only_come_from_our_lists():
    view = {
        "component": "Stack",
        "props": {"gap": "huge; background:url(x)", "align": "center"},
        "children": [
            {"component": "Progress", "props": {"value": 260, "max": 200}},
            {"component": "Progress", "props": {"value": "lots"}},
            {"component": "Text", "props": {"content": 12.0, "size": "xs", "weight": "x" * 40}},
        ],
    }
    [stack] = render_view(view, {}, "en")
    assert stack["classes"] == "align-center"
    high, bad, text = stack["children"]
    assert (high["value"], high["max"]) == (200, 200)
    assert (bad["value"], bad["max"]) == (0, 100)
    assert text == {"type": "text", "text": "12", "classes": "size-xs"}


def test_huge_data_and_deep_trees_are_bounded():
    view = {
        "component": "CardList",
        "repeat": {"statePath": "/rows"},
        "children": [{"component": "Text", "props": {"content": {"$item": ""}}}],
    }
    [cards] = render_view(view, {"rows": list(range(5000))}, "en")
    assert len(cards["children"]) == MAX_REPEAT
    deep: dict = {"component": "Text", "props": {"content": "leaf"}}
    for _ in range(100):
        deep = {"component": "Stack", "children": [deep]}
    assert "too-large" in str(render_view(deep, {}, "en"))


def test_the_node_template_escapes_package_text():
    [stack] = render_view(CHECK_VIEW, STATE, "en")
    html = render_to_string("sessions/package_ui/_node.html", {"node": stack})
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html
    assert "<script>" not in html and "javascript:" not in html
    assert 'class="pui-badge tone-purple"' in html
    assert "style=" not in html


def test_data_and_event_bindings_meter_and_callout_of_the_bundled_specs():
    scene = {
        "component": "Stack",
        "children": [
            {"component": "Heading", "props": {"content": {"$data": "value/place"}}},
            {"component": "Callout", "props": {"icon": "map-pin", "content": {"$data": "key"}}},
            {
                "component": "Meter",
                "props": {"value": {"$state": "/score"}, "min": -100, "max": 100},
            },
        ],
    }
    row = {"key": "current", "value": {"place": "The quay", "score": 40}}
    [stack] = render_view(scene, row["value"], "en", row)
    heading, callout, meter = stack["children"]
    assert heading["text"] == "The quay"
    assert callout["type"] == "card" and callout["children"][0]["glyph"] == "⌖"
    assert callout["children"][1]["text"] == "current"
    assert (meter["value"], meter["max"]) == (140, 200)  # -100..100 shifted to 0..200
    toast = {"component": "Badge", "props": {"label": {"$event": "delta"}}}
    assert render_view(toast, {"delta": "+5"}, "en")[0]["text"] == "+5"


def test_a_filter_container_lists_its_items_as_entry_cards():
    view = {
        "component": "FilterContainer",
        "props": {
            "items": {"$state": "/entries"},
            "itemComponent": "EntryCard",
            "itemPropMap": {
                "title": "value/name",
                "category": "value/status",
                "tags": "value/chips",
            },
            "footer": {"zh": "共 {{count}} 个任务", "en": "{{count}} quests tracked"},
            "emptyMessage": {"zh": "没有匹配的任务", "en": "No matching quests"},
        },
    }
    entries = [
        {
            "key": "q1",
            "value": {
                "name": "Find the key",
                "status": {"zh": "进行中", "en": "Active"},
                "chips": ["harbor"],
            },
        },
        {"key": "q2", "value": {"name": "<b>Sail</b>", "status": "completed"}},
    ]
    [box] = render_view(view, {"entries": entries}, "zh")
    first, second = box["children"]
    assert (first["title"], first["category"], first["tags"]) == (
        "Find the key",
        "进行中",
        ["harbor"],
    )
    assert (
        second["title"] == "<b>Sail</b>" and box["footer"] == "共 2 个任务" and box["empty"] == ""
    )
    [empty] = render_view(view, {"entries": []}, "en")
    assert empty["children"] == [] and empty["empty"] == "No matching quests"
    html = render_to_string("sessions/package_ui/_node.html", {"node": box})
    assert "&lt;b&gt;Sail&lt;/b&gt;" in html and "<b>Sail" not in html
