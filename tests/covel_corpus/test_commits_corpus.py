"""Covel's commit through real packages and real Node: plugin.data.batch / .delete proposals,
lorebook.upsert, effects.pluginData, Covel's {level, title, message} notification, and
ctx.messages from locales/<locale>.yaml in an English and a Chinese session.

What is asserted is Covel's behaviour (packages/runtime/src/commit/, session-output-normalizer,
@covel/shared plugin-messages): each batch item lands under the writing package, a reserved
namespace or another owner's lore refuses the runtime's writes whole, and translations come
from a catalogue of the session's language and script.
"""

from __future__ import annotations

import json

from corpus_support import by_runtime, corpus_index, corpus_session, play
from django.test import Client
from test_play_support import index_folder, make_world, write_plugin

from agents.models import ModelSlot
from agents.standin import StandInModel
from sessions import selectors
from sessions.models import PluginData, Session
from sessions.services import session_create


def stored(session, plugin: str, namespace: str | None = None) -> dict[str, object]:
    rows = PluginData.objects.filter(session=session, plugin_id=plugin)
    if namespace is not None:
        rows = rows.filter(namespace=namespace)
    return {f"{r.namespace}/{r.key}": r.value for r in rows}


def notices(session) -> list[dict]:
    return selectors.notification_recent_list(session=session)


def in_locale(session, locale: str):
    Session.objects.filter(pk=session.pk).update(locale=locale)
    session.refresh_from_db()
    return session


# ------------------------------------------------------------------ ledger-batch


def test_a_batch_writes_every_item_and_a_delete_proposal_removes_a_key(db, alice):
    session = corpus_session(alice, "ledger-batch")
    first = by_runtime(play(session, "we set sail at dawn"))["ledger-batch"]
    assert first["status"] == "succeeded", first
    assert stored(session, "ledger-batch") == {
        "ledger/turn-1": {"turn": 1, "words": 5},
        "ledger/latest": {"turn": 1, "message": "we set sail at dawn"},
        "tallies/turns": 1,
    }
    second = by_runtime(play(session, "land ho"))["ledger-batch"]
    assert second["status"] == "succeeded", second
    # turn-1 went with turn 2's plugin.data.delete; the batch's keys were overwritten.
    assert stored(session, "ledger-batch") == {
        "ledger/turn-2": {"turn": 2, "words": 2},
        "ledger/latest": {"turn": 2, "message": "land ho"},
        "tallies/turns": 2,
    }
    commit = session.turns.order_by("-number").first().commit
    assert {"plugin": "ledger-batch", "namespace": "ledger", "key": "turn-1", "deleted": True} in (
        commit["written"]
    )


def test_a_batch_item_in_a_framework_namespace_refuses_the_whole_batch(db, alice):
    session = corpus_session(alice, "ledger-batch")
    play(session, "calm seas")
    result = by_runtime(play(session, "audit the books"))["ledger-batch"]
    assert result["status"] == "dropped"
    assert result["code"] == "namespace-reserved"
    assert "'_runtime_jobs'" in result["reason"] and "items/3" in result["reason"]
    # Nothing of turn 2: neither its batch items nor its delete of turn-1.
    assert stored(session, "ledger-batch") == {
        "ledger/turn-1": {"turn": 1, "words": 2},
        "ledger/latest": {"turn": 1, "message": "calm seas"},
        "tallies/turns": 1,
    }


# ------------------------------------------------------------------ lore-weaver


def test_lore_upserts_are_stored_per_session_and_seen_from_the_next_turn(db, alice):
    session = corpus_session(alice, "lore-weaver")
    first = by_runtime(play(session, "Lore: Old Lighthouse: Its lamp went dark in the storm."))
    assert first["lore-weaver"]["status"] == "succeeded", first["lore-weaver"]
    assert first["lore-weaver"]["output"] == {"known": []}  # committed lore shows next turn
    lore = {e["id"]: e for e in selectors.session_lore(session=session)}
    assert set(lore) == {"weaver-note", "old-lighthouse"}
    light = lore["old-lighthouse"]
    # Covel's defaults for what the entry leaves out, the owner taken from the writer.
    assert light["keys"] == ["Old Lighthouse"]
    assert light["content"] == "Its lamp went dark in the storm."
    assert light["strategy"] == "selective"
    assert (light["position"], light["insertionOrder"], light["enabled"]) == (
        "after_char_defs",
        100,
        True,
    )
    assert light["pluginId"] == "lore-weaver"
    assert (light["title"], light["text"]) == ("Old Lighthouse", light["content"])
    created = lore["weaver-note"]["createdAt"]

    second = by_runtime(play(session, "we walk on"))["lore-weaver"]
    # ctx.world.lorebook lists the session lore by insertionOrder, then id.
    assert second["output"] == {"known": ["weaver-note", "old-lighthouse"]}
    note = next(e for e in selectors.session_lore(session=session) if e["id"] == "weaver-note")
    assert note["content"] == "The weaver has listened for 2 turn(s)."
    assert note["createdAt"] == created  # an upsert keeps the entry's creation time


def test_the_session_lorebook_api_lists_the_entries_to_their_owner_only(db, alice, charlie):
    session = corpus_session(alice, "lore-weaver")
    play(session, "Lore: Old Lighthouse: Its lamp went dark in the storm.")
    client = Client()
    client.force_login(alice)
    answer = client.get(f"/api/sessions/{session.pk}/lorebook")
    assert answer.status_code == 200, answer.content
    entries = answer.json()["entries"]
    assert [(e["id"], e["pluginId"], e["strategy"], e["insertionOrder"]) for e in entries] == [
        ("weaver-note", "lore-weaver", "constant", 10),
        ("old-lighthouse", "lore-weaver", "selective", 100),
    ]
    assert entries[1]["keys"] == ["Old Lighthouse"]
    other = Client()
    other.force_login(charlie)
    assert other.get(f"/api/sessions/{session.pk}/lorebook").status_code == 403


def test_lore_for_another_owner_is_refused_and_nothing_of_the_run_is_kept(db, alice):
    session = corpus_session(alice, "lore-weaver")
    result = by_runtime(play(session, "Lore: Gate: Shut at dusk. Also claim the harbor law."))
    weaver = result["lore-weaver"]
    assert weaver["status"] == "dropped"
    assert weaver["code"] == "lore-owner-mismatch"
    assert "another owner's entry 'harbor-law'" in weaver["reason"]
    assert selectors.session_lore(session=session) == []


# ------------------------------------------------------------------ polyglot-hints


def test_an_english_session_keeps_the_code_text_and_labels_carry_every_language(db, alice):
    session = corpus_session(alice, "polyglot-hints")
    result = by_runtime(play(session, "hello"))["polyglot-hints"]
    assert result["status"] == "succeeded", result
    assert result["output"] == {
        "locale": "en",
        "title": "Hint for turn 1",
        "hint": "Look around before you move.",
        "label": {"en": "Hints", "zh": "提示"},
        "greeting": "Welcome back",
        "catalogued": 3,
    }
    assert notices(session)[0]["title"] == "Hint for turn 1"
    assert notices(session)[0]["body"] == "Look around before you move."


def test_a_chinese_session_gets_the_zh_catalogue_with_placeholders_filled(db, alice):
    session = in_locale(corpus_session(alice, "polyglot-hints"), "zh-CN")
    play(session, "你好")
    result = by_runtime(play(session, "再来"))["polyglot-hints"]
    assert result["status"] == "succeeded", result
    out = result["output"]
    assert out["locale"] == "zh-CN"
    assert out["title"] == "第 2 回合的提示"
    assert out["hint"] == "行动之前先四处看看。"
    assert out["label"] == {"en": "Hints", "zh": "提示"}
    assert out["greeting"] == "欢迎回来"
    assert notices(session)[0] == {
        "pluginId": "polyglot-hints",
        "runtimeId": "polyglot-hints",
        "title": "第 2 回合的提示",
        "body": "行动之前先四处看看。",
        "level": "info",
        "turnId": notices(session)[0]["turnId"],
    }


def test_a_traditional_chinese_session_does_not_take_the_simplified_catalogue(db, alice):
    session = in_locale(corpus_session(alice, "polyglot-hints"), "zh-TW")
    out = by_runtime(play(session, "哈囉"))["polyglot-hints"]["output"]
    # zh-TW is Hant, the zh catalogue Hans: Covel keeps the English text.
    assert (out["title"], out["hint"]) == ("Hint for turn 1", "Look around before you move.")
    assert out["greeting"] == "Welcome back"  # pickLocaleText: zh, zh-CN, zh-Hans only


# ------------------------------------------------------------------ ts-tactics


def test_a_typescript_handler_writes_through_effects_plugin_data_and_notifies(db, alice):
    session = corpus_session(alice, "ts-tactics")
    result = by_runtime(play(session, "we charge the gate"))["ts-tactics"]
    assert result["status"] == "succeeded", result
    assert result["output"] == {"stance": "press"}
    assert stored(session, "ts-tactics") == {
        "tactics/last": {"stance": "press", "reason": 'the move reads as "press"', "turn": 1},
        "tactics/turn-1": "press",
    }
    notice = notices(session)[0]
    assert (notice["title"], notice["body"], notice["level"]) == (
        "Tactic chosen",
        'press: the move reads as "press"',
        "success",
    )
    play(session, "look around")
    assert stored(session, "ts-tactics", "tactics")["tactics/last"]["stance"] == "scout"
    assert stored(session, "ts-tactics", "tactics")["tactics/turn-1"] == "press"


def test_an_agents_prompt_sees_the_session_lore_through_world_lorebook(db, alice, tmp_path):
    # Covel's context hands prompts the session lorebook ({{ config.worldEntries }}); here it is
    # {{ world.lorebook }}. The reader is a plain agent of ours next to the corpus package.
    reader = {
        "runtime": {
            "description": "Reads the lore.",
            "schedule": {"stage": "post-turn"},
            "agent": {"model": "utility", "loop": {"maxSteps": 1}},
        }
    }
    folder = write_plugin(tmp_path, "lore-reader", reader)
    (folder / "PLUGIN.md").write_text(
        (folder / "PLUGIN.md")
        .read_text(encoding="utf-8")
        .replace("Test package.", "Known lore: {{ world.lorebook }}"),
        encoding="utf-8",
    )
    index_folder(folder)
    with StandInModel([{"content": "noted"}, {"content": "noted"}]) as model:
        ModelSlot.objects.create(name="utility", base_url=model.base_url, model="stand-in")
        corpus_index("lore-weaver")
        world = make_world(owner=alice, plugins=["lore-weaver", "lore-reader"])
        session = session_create(owner=alice, world=world)
        play(session, "Lore: Old Lighthouse: Its lamp went dark in the storm.")
        result = by_runtime(play(session, "we walk on"))
        prompts = [json.dumps(r["messages"], ensure_ascii=False) for r in model.requests]
    assert result["lore-reader"]["status"] == "succeeded", result["lore-reader"]
    # The system prompt's lore is JSON: an entry shows by its id, which no message holds.
    assert "old-lighthouse" not in prompts[0]  # not committed before the turn began
    assert '\\"id\\": \\"old-lighthouse\\"' in prompts[1]
    assert '\\"content\\": \\"Its lamp went dark in the storm.\\"' in prompts[1]
