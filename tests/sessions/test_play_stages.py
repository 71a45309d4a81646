"""Stage order in a real turn, setup only while the phase is setup, and setup again on a new version."""

from __future__ import annotations

import json

from test_play_support import by_runtime, index_folder, make_world, play, write_plugin

from sessions.models import PluginData
from sessions.services import session_create

# Each runtime appends its stage to one list; reads see earlier runtimes' uncommitted writes.
APPEND = """export default async function handler(ctx) {{
  await ctx.pluginData.update("log", "order", [{{ op: "append", value: "{name}" }}]);
  const order = await ctx.pluginData.get("log", "order");
  return {{ outcome: "success", value: {{ seen: order }} }};
}}
"""

STAGES = ["audit", "post-turn", "narrative", "pre-turn", "setup"]  # written in reverse on purpose


def staged_package(root, version: str = "1.0.0"):
    runtimes = {
        stage: ({"schedule": {"stage": stage}, "function": {}}, APPEND.format(name=stage))
        for stage in STAGES
    }
    return write_plugin(root, "stages", {"version": version}, runtimes=runtimes)


def test_runtimes_run_stage_by_stage_and_setup_only_while_setting_up(db, alice, tmp_path):
    index_folder(staged_package(tmp_path))
    world = make_world(owner=alice, plugins=["stages"])
    session = session_create(owner=alice, world=world)
    assert session.resolved_plugins == ["stages"]

    first = play(session, "hello")
    assert [r["stage"] for r in first["runtimes"]] == [
        "setup",
        "pre-turn",
        "narrative",
        "post-turn",
        "audit",
    ]
    assert by_runtime(first)["stages/audit"]["output"]["seen"] == [
        "setup",
        "pre-turn",
        "narrative",
        "post-turn",
        "audit",
    ]
    stored = PluginData.objects.get(
        session=session, plugin_id="stages", namespace="log", key="order"
    )
    assert stored.value == ["setup", "pre-turn", "narrative", "post-turn", "audit"]

    second = play(session, "again")  # the first turn ended the setup phase
    assert "stages/setup" not in by_runtime(second)
    stored.refresh_from_db()
    assert stored.value[5:] == ["pre-turn", "narrative", "post-turn", "audit"]


def test_setup_runs_again_when_the_package_version_changes(db, alice, tmp_path):
    folder = staged_package(tmp_path)
    index_folder(folder)
    world = make_world(owner=alice, plugins=["stages"])
    session = session_create(owner=alice, world=world)
    play(session, "one")
    assert "stages/setup" not in by_runtime(play(session, "two"))

    text = (folder / "PLUGIN.md").read_text().replace('"version": "1.0.0"', '"version": "1.1.0"')
    (folder / "PLUGIN.md").write_text(text)
    index_folder(folder)
    third = play(session, "three")
    assert by_runtime(third)["stages/setup"]["status"] == "succeeded"
    session.refresh_from_db()
    assert session.package_versions == {"stages": "1.1.0"}
    assert session.setup_versions == {"stages": "1.1.0"}


def test_a_required_input_from_a_failed_runtime_skips_the_reader_naming_it(db, alice, tmp_path):
    folder = write_plugin(
        tmp_path,
        "chain",
        {},
        runtimes={
            "first": (
                {"schedule": {"stage": "pre-turn"}, "function": {}},
                'export default async () => ({ outcome: "failed", error: "the well is dry" });\n',
            ),
            "second": (
                {
                    "schedule": {"stage": "post-turn"},
                    "io": {"inputs": {"water": {"from": {"runtime": "chain/first"}}}},
                    "function": {},
                },
                'export default async (ctx) => ({ outcome: "success", value: ctx.inputs.water.value });\n',
            ),
        },
    )
    index_folder(folder)
    session = session_create(owner=alice, world=make_world(owner=alice, plugins=["chain"]))
    result = by_runtime(play(session, "drink"))
    assert result["chain/first"]["status"] == "failed"
    assert result["chain/first"]["reason"] == "the well is dry"
    assert result["chain/second"]["status"] == "skipped"
    assert result["chain/second"]["code"] == "upstream-not-succeeded"
    assert "chain/first" in result["chain/second"]["reason"]
    assert json.dumps(result)  # the result is plain JSON


def test_an_event_emitted_earlier_in_the_turn_triggers_a_later_runtime(db, alice, tmp_path):
    ring = 'export default async () => ({ outcome: "success", value: {}, effects: { events: [{ topic: "bell.rang", payload: { times: 3 } }] } });\n'
    answer = 'export default async () => ({ outcome: "success", value: { answered: true } });\n'
    runtimes = {
        "ring": ({"schedule": {"stage": "pre-turn"}, "function": {}}, ring),
        "answer": (
            {
                "schedule": {
                    "stage": "post-turn",
                    "trigger": {"type": "event", "topic": "bell.rang"},
                },
                "function": {},
            },
            answer,
        ),
        "deaf": (
            {
                "schedule": {
                    "stage": "post-turn",
                    "trigger": {"type": "event", "topic": "horn.blew"},
                },
                "function": {},
            },
            answer,
        ),
    }
    index_folder(write_plugin(tmp_path, "bells", {}, runtimes=runtimes))
    session = session_create(owner=alice, world=make_world(owner=alice, plugins=["bells"]))
    result = by_runtime(play(session, "listen"))
    assert result["bells/ring"]["status"] == "succeeded"
    assert result["bells/answer"]["status"] == "succeeded"
    assert result["bells/answer"]["activation"] == "event"
    assert "bells/deaf" not in result  # its topic was never emitted
    session.refresh_from_db()
    assert session.trigger_ledger["runtimes"]["bells/answer"] == {"count": 1, "lastTurn": 1}


def test_a_guard_skips_its_runtime_with_its_reason_and_the_trigger_is_not_counted(
    db, alice, tmp_path
):
    guard = """export default async function guard(ctx) {
  const quiet = String(ctx.inputs?.turn?.value?.playerMessage ?? "").includes("quietly");
  return quiet ? { skip: true, reason: "the player moved quietly" } : { skip: false };
}
"""
    watch = 'export default async () => ({ outcome: "success", value: { noticed: true } });\n'
    runtime = {
        "schedule": {"stage": "post-turn"},
        "io": {"inputs": {"turn": {"from": {"kernel": "turn-digest@1"}}}},
        "guard": "./guard.js",
        "function": {},
    }
    folder = write_plugin(
        tmp_path,
        "guards",
        {},
        runtimes={"watch": (runtime, watch)},
        files={"runtimes/watch/guard.js": guard},
    )
    index_folder(folder)
    session = session_create(owner=alice, world=make_world(owner=alice, plugins=["guards"]))
    skipped = by_runtime(play(session, "I walk quietly"))["guards/watch"]
    assert skipped["status"] == "skipped" and skipped["code"] == "guard-skipped"
    assert skipped["reason"] == "guards/watch: the player moved quietly"
    session.refresh_from_db()
    assert "guards/watch" not in session.trigger_ledger.get("runtimes", {})
    ran = by_runtime(play(session, "I stomp"))["guards/watch"]
    assert ran["status"] == "succeeded" and ran["output"] == {"noticed": True}
