"""Plugin data commits end to end: operations, refusals, size, datasets, failed runtimes."""

from __future__ import annotations

import json

from test_play_support import by_runtime, index_folder, make_world, play, write_plugin

from sessions.models import PluginData
from sessions.services import session_create

NOTE_SCHEMA = json.dumps(
    {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "type": "object",
        "required": ["id", "text"],
        "additionalProperties": False,
        "properties": {"id": {"type": "string"}, "text": {"type": "string", "maxLength": 20}},
    }
)


def runtime(stage: str, code: str, **extra):
    return ({"schedule": {"stage": stage}, "function": {}, **extra}, code)


def session_with(tmp_path, alice, package_id, frontmatter, runtimes, files=None):
    index_folder(write_plugin(tmp_path, package_id, frontmatter, runtimes=runtimes, files=files))
    return session_create(owner=alice, world=make_world(owner=alice, plugins=[package_id]))


def value(session, plugin, namespace, key):
    row = PluginData.objects.filter(
        session=session, plugin_id=plugin, namespace=namespace, key=key
    ).first()
    return None if row is None else row.value


def test_operations_apply_to_the_latest_value_across_turns(db, alice, tmp_path):
    code = """export default async function handler(ctx) {
      await ctx.pluginData.update("wallet", "gold", [{ op: "inc", by: 5 }]);
      await ctx.pluginData.update("bag", "items", [{ op: "upsertItem", value: { id: "rope", n: ctx.logicalTurn } }]);
      await ctx.pluginData.update("bag", "seen", [{ op: "merge", value: { ["t" + ctx.logicalTurn]: true } }]);
      return { outcome: "success", value: {} };
    }"""
    session = session_with(tmp_path, alice, "bank", {}, {"earn": runtime("pre-turn", code)})
    play(session, "one")
    play(session, "two")
    assert value(session, "bank", "wallet", "gold") == 10
    assert value(session, "bank", "bag", "items") == [{"id": "rope", "n": 2}]
    assert value(session, "bank", "bag", "seen") == {"t1": True, "t2": True}


def test_inc_below_min_is_refused_and_nothing_of_that_runtime_is_written(db, alice, tmp_path):
    code = """export default async function handler(ctx) {
      await ctx.pluginData.set("log", "tried", true);
      await ctx.pluginData.update("wallet", "gold", [{ op: "inc", by: -3, min: 0 }]);
      return { outcome: "success", value: {} };
    }"""
    session = session_with(tmp_path, alice, "bank", {}, {"spend": runtime("pre-turn", code)})
    PluginData.objects.create(
        session=session, plugin_id="bank", namespace="wallet", key="gold", value=2
    )
    result = by_runtime(play(session, "buy"))["bank/spend"]
    assert result["status"] == "failed"
    assert "below min 0" in result["reason"] or "min" in result["reason"]
    assert value(session, "bank", "wallet", "gold") == 2
    assert value(session, "bank", "log", "tried") is None  # all or nothing per runtime


def test_a_value_over_the_size_limit_is_refused_naming_plugin_namespace_key_and_size(
    db, alice, tmp_path
):
    code = """export default async function handler(ctx) {
      await ctx.pluginData.set("notes", "big", "x".repeat(262150));
      return { outcome: "success", value: {} };
    }"""
    session = session_with(tmp_path, alice, "hoard", {}, {"fill": runtime("post-turn", code)})
    result = by_runtime(play(session, "hoard"))["hoard/fill"]
    assert result["status"] == "failed"
    assert "hoard" in result["reason"] and "notes/big" in result["reason"]
    assert "262152 bytes" in result["reason"] and "262144" in result["reason"]
    assert value(session, "hoard", "notes", "big") is None


def test_a_dataset_write_that_breaks_the_schema_drops_the_runtime_and_keeps_the_others(
    db, alice, tmp_path
):
    bad = """export default async function handler(ctx) {
      await ctx.pluginData.set("notes", "gate", { id: "gate", text: "far too long for the schema" });
      return { outcome: "success", value: {} };
    }"""
    good = """export default async function handler(ctx) {
      await ctx.pluginData.set("notes", "door", { id: "door", text: "open" });
      return { outcome: "success", value: {} };
    }"""
    session = session_with(
        tmp_path,
        alice,
        "notes",
        {
            "contributes": {
                "datasets": {"notes": {"schema": "./schemas/note.schema.json", "key": "id"}}
            }
        },
        {"bad": runtime("pre-turn", bad), "good": runtime("post-turn", good)},
        files={"schemas/note.schema.json": NOTE_SCHEMA},
    )
    result = by_runtime(play(session, "write"))
    assert result["notes/bad"]["status"] == "dropped"
    assert result["notes/bad"]["code"] == "write-refused"
    assert "notes/notes/gate" in result["notes/bad"]["reason"]
    assert "/text" in result["notes/bad"]["reason"]
    assert result["notes/good"]["status"] == "succeeded"
    assert value(session, "notes", "notes", "gate") is None
    assert value(session, "notes", "notes", "door") == {"id": "door", "text": "open"}


def test_a_failed_runtimes_writes_are_never_saved(db, alice, tmp_path):
    code = """export default async function handler(ctx) {
      await ctx.pluginData.set("log", "half", "written");
      return { outcome: "failed", error: "changed my mind" };
    }"""
    session = session_with(tmp_path, alice, "flaky", {}, {"try": runtime("pre-turn", code)})
    result = by_runtime(play(session, "go"))["flaky/try"]
    assert result["status"] == "failed" and result["reason"] == "changed my mind"
    assert value(session, "flaky", "log", "half") is None


def test_an_output_that_breaks_its_schema_fails_naming_the_file_and_field(db, alice, tmp_path):
    code = 'export default async () => ({ outcome: "success", value: { count: "three" } });\n'
    schema = json.dumps({"type": "object", "properties": {"count": {"type": "integer"}}})
    session = session_with(
        tmp_path,
        alice,
        "shaped",
        {},
        {"emit": runtime("pre-turn", code, io={"output": {"schema": "./schemas/out.json"}})},
        files={"schemas/out.json": schema},
    )
    result = by_runtime(play(session, "go"))["shaped/emit"]
    assert result["status"] == "failed"
    assert result["code"] == "output-invalid"
    assert (
        "schemas/out.json" in result["reason"]
        and "/count" in result["reason"]
        and "[type]" in result["reason"]
    )
