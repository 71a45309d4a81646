"""Tools, actions, function handlers and form validators run for real in Node."""

from __future__ import annotations

import logging
import re
import time

import pytest

from pluginhost.callbacks import InMemoryCallbacks
from pluginhost.errors import PluginCallError, PluginTimeout, ToolFailure
from pluginhost.services import (
    plugin_form_validate,
    plugin_function_call,
    plugin_rpc_call,
    plugin_tool_call,
)

NOTES = """
contributes:
  tools: [save-note, find-note]
  actions: [inspect-note, slow]
  forms: [point-buy, async-check]
  data:
    notes: { schema: ./schemas/note.schema.json }
runtime:
  schedule: { stage: post-turn }
  function:
    timeoutMs: 3000
    tools: { builtin: [get-character] }
"""

FILES = {
    "schemas/note.schema.json": '{"type": "object"}',
    "tools/save-note.js": """
        import { makeProposal } from "@covel/plugin-handlers-utils";
        import { z as directZ } from "zod";

        export default function makeSaveNote({ tool, z, withPendingProposals, withModelView }) {
          if (z !== directZ) throw new Error("toolkit z and imported zod differ");
          return tool({
            name: "save-note",
            description: "Save one fact.",
            annotations: { idempotent: true },
            parameters: z.object({ id: z.string().min(1), text: z.string().min(1).max(300) }),
            async execute(params, context) {
              const proposal = makeProposal(context, "2026-01-01T00:00:00.000Z", "plugin.data", {
                namespace: "notes", key: params.id, value: { id: params.id, text: params.text },
              });
              return withModelView(withPendingProposals({ id: params.id }, [proposal]), { summary: "Queued a note." });
            },
          });
        }
    """,
    "server/index.js": """
        import makeSaveNote from "../tools/save-note.js";

        export default function register(covel) {
          const { tool, z, ToolError, shortId } = covel.toolkit;
          covel.registerTool(makeSaveNote(covel.toolkit));
          covel.registerTool(tool({
            name: "find-note",
            description: "Read a note.",
            parameters: z.object({ id: z.string() }),
            async execute({ id }, context) {
              const row = await context.store.getPluginData("notes", id);
              if (!row) throw new ToolError("not-found", "The requested note was not found.", { hint: "Check the name." });
              return { ...row.value, ref: shortId("note", row.value.text, context.sessionId, context.random) };
            },
          }));
          covel.registerRpc("inspect-note", async (_payload, ctx) => {
            const rows = await ctx.store.listPluginData("notes");
            await ctx.store.setPluginData({ namespace: "notes", key: "seen", value: { count: rows.length } });
            return { ok: true, data: rows.map((row) => row.value) };
          });
          covel.registerRpc("slow", async (_payload, ctx) => {
            ctx.signal.addEventListener("abort", async () => {
              try {
                await ctx.store.getSession();
                console.log("store-after-abort: allowed");
              } catch (error) {
                console.log(`store-after-abort: refused ${error.code}`);
              }
            });
            await new Promise((resolve) => setTimeout(resolve, 5000));
            return { ok: true };
          });
          covel.registerFormValidator("point-buy", (values, _data, context) => {
            const text = "Strength is at most 15.";
            if (values.name === "") return "Name the character.";
            const issues = [];
            if (Number(values.strength) > 15) issues.push({ field: "strength", message: context.messages?.translations?.[text] ?? text });
            if (Number(values.dexterity) > 15) issues.push({ field: "dexterity", message: "Dexterity is at most 15." });
            return issues.length > 0 ? issues : undefined;
          });
          covel.registerFormValidator("async-check", async () => undefined);
        }
    """,
    "handler.js": """
        import { actingCharacterOf } from "@covel/plugin-handlers-utils";

        export default async function handler(ctx) {
          const mode = ctx.manualPayload?.mode;
          if (mode === "data") {
            const before = await ctx.pluginData.get("wallet", "gold");
            await ctx.pluginData.set("wallet", "gold", 10);
            await ctx.pluginData.update("wallet", "gold", [{ op: "inc", by: -3, min: 0 }]);
            const after = await ctx.pluginData.get("wallet", "gold");
            let refused = null;
            try {
              await ctx.pluginData.update("wallet", "gold", [{ op: "inc", by: -100, min: 0 }]);
            } catch (error) {
              refused = error.code;
            }
            await ctx.pluginData.set("notes", "fresh", { id: "fresh", text: "new" });
            const listed = await ctx.pluginData.list("notes");
            return { outcome: "success", value: { before, after, refused, listed: listed.map((r) => r.key).sort() } };
          }
          if (mode === "messages") {
            const seen = [];
            let after;
            let page;
            do {
              page = await ctx.store.readTurnMessages({ after, limit: 2 });
              for (const message of page.messages) seen.push(message.content);
              after = page.cursor ?? undefined;
            } while (page.hasMore);
            await ctx.store.readTurnMessages({ limit: 9999 });
            await ctx.logger.info("paged", { count: seen.length });
            return { outcome: "success", value: { seen, cursor: after } };
          }
          if (mode === "ops") {
            await ctx.pluginData.update("bag", "main", ctx.manualPayload.ops);
            return { outcome: "success", value: await ctx.pluginData.get("bag", "main") };
          }
          if (mode === "big") {
            try {
              await ctx.pluginData.set("bag", "big", "x".repeat(262145));
              return { outcome: "success" };
            } catch (error) {
              return { outcome: "failed", error: error.code };
            }
          }
          if (mode === "random") {
            return { outcome: "success", value: [ctx.random(), ctx.random.int(1, 20), ctx.random.int(1, 6)] };
          }
          if (mode === "tools") {
            const saved = await ctx.tools.call("save-note", { id: "k", text: "from a function" });
            const character = await ctx.tools.call("get-character", { id: "c1" });
            let failure = null;
            try {
              await ctx.tools.call("find-note", { id: "missing" });
            } catch (error) {
              failure = { name: error.name, code: error.code, hint: error.hint, message: error.message };
            }
            let unavailable = null;
            try {
              await ctx.tools.call("create-form", {});
            } catch (error) {
              unavailable = error.message;
            }
            return { outcome: "success", value: { saved, character, failure, unavailable } };
          }
          const player = actingCharacterOf(ctx.playerActions, ctx.world?.characters ?? [], ctx.world?.seats ?? []);
          const text = String(ctx.inputs?.narrative?.value ?? "");
          return {
            outcome: "success",
            value: {
              words: text.split(/\\s+/).filter(Boolean).length,
              player: player?.name ?? null,
              message: ctx.playerMessage,
              locale: ctx.locale,
              sourceTurnId: ctx.execution?.sourceTurnId ?? null,
              settings: ctx.userSettings,
              session: await ctx.store.getSession(),
            },
          };
        }
    """,
}


@pytest.fixture
def notes(make_package):
    return make_package(NOTES, FILES, name="notes")


def test_a_tool_returns_the_envelope_with_model_view_and_proposals(notes, host, callbacks):
    envelope = plugin_tool_call(
        manifest=notes,
        tool="save-note",
        args={"id": "gate", "text": "The gate is locked."},
        callbacks=callbacks,
        host=host,
        context={"sessionId": "s1", "turnId": "t1", "runtimeId": "notes"},
    )
    assert envelope.content == {"id": "gate"}
    assert envelope.model_view == {"summary": "Queued a note."}
    [proposal] = envelope.pending_proposals
    assert proposal["type"] == "plugin.data"
    assert proposal["payload"] == {
        "namespace": "notes",
        "key": "gate",
        "value": {"id": "gate", "text": "The gate is locked."},
    }
    assert proposal["source"] == {"pluginId": "notes", "runtimeId": "notes"}
    assert (proposal["sessionId"], proposal["turnId"]) == ("s1", "t1")
    # Covel's makeProposal gives a plain UUID.
    assert re.fullmatch(
        r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}", proposal["id"]
    )
    # The tool only proposes: nothing was saved.
    assert callbacks.data == {}


def test_it_refuses_tool_arguments_that_fail_the_zod_schema(notes, host, callbacks):
    with pytest.raises(ToolFailure) as caught:
        plugin_tool_call(
            manifest=notes,
            tool="save-note",
            args={"id": "", "text": 5},
            callbacks=callbacks,
            host=host,
        )
    assert caught.value.code == "invalid_tool_arguments"
    paths = {detail["path"] for detail in caught.value.details}
    assert paths == {"id", "text"}
    assert "save-note" in caught.value.message


def test_a_tool_error_becomes_a_coded_failure_with_its_hint(notes, host, callbacks):
    with pytest.raises(ToolFailure) as caught:
        plugin_tool_call(
            manifest=notes, tool="find-note", args={"id": "nope"}, callbacks=callbacks, host=host
        )
    assert caught.value.code == "tool_error"
    assert caught.value.tool_code == "not-found"
    assert caught.value.hint == "Check the name."
    assert caught.value.message == "The requested note was not found."


def test_a_tool_reads_through_the_store_callback(notes, host, callbacks):
    callbacks.data[("notes", "notes")] = {"gate": {"id": "gate", "text": "Locked at dusk"}}
    envelope = plugin_tool_call(
        manifest=notes,
        tool="find-note",
        args={"id": "gate"},
        callbacks=callbacks,
        host=host,
        context={"seed": "s"},
    )
    assert envelope.content["text"] == "Locked at dusk"
    assert envelope.content["ref"].startswith("note-locked-at-dusk-")
    again = plugin_tool_call(
        manifest=notes,
        tool="find-note",
        args={"id": "gate"},
        callbacks=callbacks,
        host=host,
        context={"seed": "s"},
    )
    assert (
        again.content["ref"] == envelope.content["ref"]
    )  # shortId with context.random is reproducible
    assert (
        "plugin_data_get",
        {"package": "notes", "namespace": "notes", "key": "gate"},
    ) in callbacks.calls


def test_an_rpc_action_reads_and_writes_at_once(notes, host, callbacks):
    callbacks.data[("notes", "notes")] = {"a": {"id": "a"}, "b": {"id": "b"}}
    value = plugin_rpc_call(
        manifest=notes, action="inspect-note", payload={}, callbacks=callbacks, host=host
    )
    assert value == {"ok": True, "data": [{"id": "a"}, {"id": "b"}]}
    assert callbacks.data[("notes", "notes")]["seen"] == {"count": 2}


def test_an_rpc_action_past_its_limit_is_aborted_and_later_store_calls_are_refused(
    notes, host, callbacks, caplog
):
    caplog.set_level(logging.INFO, logger="covel.plugins")
    started = time.monotonic()
    with pytest.raises(PluginTimeout) as caught:
        plugin_rpc_call(
            manifest=notes, action="slow", payload=None, callbacks=callbacks, host=host, timeout=0.3
        )
    assert time.monotonic() - started < 2.0
    assert caught.value.code == "plugin_timeout"
    deadline = time.monotonic() + 3
    while "store-after-abort" not in caplog.text and time.monotonic() < deadline:
        time.sleep(0.02)
    assert "store-after-abort: refused call_closed" in caplog.text
    assert not any(name == "store_get_session" for name, _ in callbacks.calls)
    # The host answered by itself: it is still the same process, and still works.
    assert host.echo("alive") == "alive"


def test_the_rpc_limit_defaults_to_the_setting(notes, host, callbacks, settings):
    settings.COVEL_PLUGIN_RPC_TIMEOUT_MS = 200
    with pytest.raises(PluginTimeout):
        plugin_rpc_call(manifest=notes, action="slow", payload=None, callbacks=callbacks, host=host)


def test_a_function_handler_gets_the_specs_ctx(notes, host, callbacks):
    world = {
        "characters": [
            {"id": "c1", "name": "Ana", "type": "player"},
            {"id": "c2", "name": "Bo", "type": "player"},
        ],
        "seats": [{"id": "seat-1", "primary": True, "currentCharacterId": "c1"}],
    }
    result = plugin_function_call(
        manifest=notes,
        runtime="notes",
        callbacks=callbacks,
        host=host,
        context={
            "inputs": {"narrative": {"value": "The north gate is locked at dusk."}},
            "playerMessage": "I knock.",
            "playerActions": [{"seat": "seat-1", "actorId": "c2", "text": "knock"}],
            "world": world,
            "locale": "en",
            "sourceTurnId": "turn-7",
            "userSettings": {"sides": 6},
        },
    )
    assert result.outcome == "success"
    value = result.result["value"]
    assert value["words"] == 7
    assert value["player"] == "Bo"  # the action's actor wins over the seat's current character
    assert value["message"] == "I knock."
    assert (value["locale"], value["sourceTurnId"], value["settings"]) == (
        "en",
        "turn-7",
        {"sides": 6},
    )
    assert value["session"]["phase"] == "play"
    # Without an actor, the primary seat's current character is the one the player acts as.
    alone = plugin_function_call(
        manifest=notes,
        runtime="notes",
        callbacks=callbacks,
        host=host,
        context={"world": world, "playerActions": []},
    )
    assert alone.result["value"]["player"] == "Ana"


def test_plugin_data_reads_see_earlier_writes_and_writes_come_back_as_operations(
    notes, host, callbacks
):
    callbacks.data[("notes", "wallet")] = {"gold": 2}
    callbacks.data[("notes", "notes")] = {"old": {"id": "old"}}
    result = plugin_function_call(
        manifest=notes,
        runtime="notes",
        callbacks=callbacks,
        host=host,
        context={"manualPayload": {"mode": "data"}},
    )
    value = result.result["value"]
    assert value["before"] == 2
    assert value["after"] == 7  # set 10, then inc -3: the read sees both writes of this call
    assert value["refused"] == "operation_failed"  # below min: thrown, nothing recorded
    assert value["listed"] == ["fresh", "old"]
    assert result.operations == [
        {"kind": "set", "namespace": "wallet", "key": "gold", "value": 10},
        {
            "kind": "update",
            "namespace": "wallet",
            "key": "gold",
            "ops": [{"op": "inc", "by": -3, "min": 0}],
        },
        {
            "kind": "set",
            "namespace": "notes",
            "key": "fresh",
            "value": {"id": "fresh", "text": "new"},
        },
    ]
    # Python, not the host, saves: the stored data is untouched.
    assert callbacks.data[("notes", "wallet")] == {"gold": 2}


def test_ctx_random_is_reproducible_for_a_seed(notes, host, callbacks):
    def draw(seed: str) -> list:
        return plugin_function_call(
            manifest=notes,
            runtime="notes",
            callbacks=callbacks,
            host=host,
            context={"manualPayload": {"mode": "random"}, "seed": seed},
        ).result["value"]

    first = draw("session-1:turn-3")
    assert draw("session-1:turn-3") == first
    assert draw("session-1:turn-4") != first
    assert 0 <= first[0] < 1 and 1 <= first[1] <= 20 and 1 <= first[2] <= 6


def test_ctx_tools_call_is_limited_to_the_runtimes_tools(notes, host):
    callbacks = InMemoryCallbacks(
        tools={"get-character": lambda args: {"id": args["id"], "name": "Ana"}}
    )
    result = plugin_function_call(
        manifest=notes,
        runtime="notes",
        callbacks=callbacks,
        host=host,
        context={"manualPayload": {"mode": "tools"}, "sessionId": "s", "turnId": "t"},
    )
    value = result.result["value"]
    assert value["saved"] == {"id": "k"}  # full content, not the model view
    assert value["character"] == {"id": "c1", "name": "Ana"}
    assert value["failure"] == {
        "name": "ToolError",
        "code": "not-found",
        "hint": "Check the name.",
        "message": "The requested note was not found.",
    }
    assert "not listed in function.tools" in value["unavailable"]
    # The nested tool's write request travels with the function's result.
    assert [p["payload"]["key"] for p in result.proposals] == ["k"]


def test_a_form_validator_answers_synchronously(notes, host):
    ok = plugin_form_validate(manifest=notes, name="point-buy", values={"strength": 12}, host=host)
    assert ok.ok and ok.field_errors == []
    bad = plugin_form_validate(
        manifest=notes,
        name="point-buy",
        values={"strength": 18, "dexterity": 16},
        host=host,
        context={
            "locale": "fr",
            "messages": {"translations": {"Strength is at most 15.": "La force est au plus 15."}},
        },
    )
    assert not bad.ok
    assert bad.field_errors == [
        {"field": "strength", "message": "La force est au plus 15."},
        {"field": "dexterity", "message": "Dexterity is at most 15."},
    ]
    whole = plugin_form_validate(manifest=notes, name="point-buy", values={"name": ""}, host=host)
    assert (whole.ok, whole.form_error) == (False, "Name the character.")


def test_it_refuses_an_asynchronous_form_validator(notes, host):
    with pytest.raises(PluginCallError) as caught:
        plugin_form_validate(manifest=notes, name="async-check", values={}, host=host)
    assert caught.value.code == "validator_not_synchronous"


def test_read_turn_messages_pages_with_a_cursor_and_caps_the_limit(notes, host, caplog):
    caplog.set_level(logging.INFO, logger="covel.plugins")
    messages = [
        {
            "id": f"m{i}",
            "turnId": f"t{i}",
            "role": "player",
            "content": f"line {i}",
            "compacted": i < 2,
        }
        for i in range(5)
    ]
    callbacks = InMemoryCallbacks(messages=messages)
    result = plugin_function_call(
        manifest=notes,
        runtime="notes",
        callbacks=callbacks,
        host=host,
        context={"manualPayload": {"mode": "messages"}},
    )
    assert result.result["value"] == {"seen": [f"line {i}" for i in range(5)], "cursor": "m4"}
    limits = [
        kwargs["limit"] for name, kwargs in callbacks.calls if name == "store_read_turn_messages"
    ]
    assert limits == [2, 2, 2, 500]
    assert '[notes/notes] paged {"count":5}' in caplog.text


def test_update_operations_apply_in_order(notes, host):
    callbacks = InMemoryCallbacks(
        data={
            ("notes", "bag"): {
                "main": {"items": [{"id": "a", "n": 1}], "tags": ["x"], "gold": 5, "old": 1}
            }
        }
    )
    ops = [
        {"op": "upsertItem", "path": "/items", "value": {"id": "a", "n": 2}},
        {"op": "upsertItem", "path": "/items", "value": {"id": "b", "n": 1}},
        {"op": "append", "path": "/tags", "value": "y"},
        {"op": "insert", "path": "/tags", "index": 0, "value": "w"},
        {"op": "remove", "path": "/tags", "match": "x"},
        {"op": "remove", "path": "/items", "match": {"id": "b"}},
        {"op": "inc", "path": "/gold", "by": 2, "max": 10},
        {"op": "merge", "value": {"name": "Pack"}},
        {"op": "set", "path": "/meta", "value": {}},  # a path's parents must exist
        {"op": "set", "path": "/meta/owner", "value": "Ana"},
        {"op": "delete", "path": "/old"},
    ]
    result = plugin_function_call(
        manifest=notes,
        runtime="notes",
        callbacks=callbacks,
        host=host,
        context={"manualPayload": {"mode": "ops", "ops": ops}},
    )
    assert result.result["value"] == {
        "items": [{"id": "a", "n": 2}],
        "tags": ["w", "y"],
        "gold": 7,
        "name": "Pack",
        "meta": {"owner": "Ana"},
    }
    assert result.operations == [{"kind": "update", "namespace": "bag", "key": "main", "ops": ops}]


@pytest.mark.parametrize(
    "ops",
    [
        [{"op": "inc", "path": "/gold", "by": 1, "max": 5}],
        [{"op": "append", "path": "/gold", "value": 1}],
        [{"op": "frobnicate"}],
        [],
    ],
)
def test_failing_update_operations_throw_and_record_nothing(notes, host, ops):
    callbacks = InMemoryCallbacks(data={("notes", "bag"): {"main": {"gold": 5}}})
    with pytest.raises(PluginCallError) as caught:
        plugin_function_call(
            manifest=notes,
            runtime="notes",
            callbacks=callbacks,
            host=host,
            context={"manualPayload": {"mode": "ops", "ops": ops}},
        )
    assert caught.value.code == "operation_failed"


def test_a_plugin_data_value_over_256_kib_is_refused(notes, host, callbacks):
    result = plugin_function_call(
        manifest=notes,
        runtime="notes",
        callbacks=callbacks,
        host=host,
        context={"manualPayload": {"mode": "big"}},
    )
    assert result.result == {"outcome": "failed", "error": "plugin_data_too_large"}
    assert result.operations == []
