"""ctx.recursiveCall: a function runtime runs another runtime of its own package, nested, within
the turn; the nested run's writes, notices and events are the caller's.

The `nest` package is written here and runs in the real Node host. Its `driver` runs on every
turn and picks what to do from the player's words; the other runtimes are manual, so they run
only when the driver (or one of them) calls them. `yonder` is a second package whose runtime
`worker` the driver must not reach. Alice owns the world and the session.
"""

from __future__ import annotations

import json

import pytest
from test_play_support import by_runtime, index_folder, make_world, play, write_plugin

from catalogue.manifest.loader import load_package
from eventlog.models import SessionEvent
from pluginhost.callbacks import InMemoryCallbacks
from pluginhost.errors import PluginCallError
from pluginhost.services import plugin_function_call
from sessions.models import PluginData
from sessions.services import session_create

DRIVER = """
const call = (runtimeId, extra = {}) => ({ ...extra, manualTrigger: { runtimeId, ...(extra.manualTrigger ?? {}) } });
const refusal = async (promise) => {
  try {
    return { resolved: await promise };
  } catch (error) {
    return { name: error.name, code: error.code, message: error.message };
  }
};

export default async function handler(ctx) {
  const said = ctx.playerMessage;
  if (said === "depth") {
    const probe = await ctx.recursiveCall(call("probe", { manualTrigger: { payload: { until: 2 } } }));
    return { outcome: "success", value: { top: ctx.recursionDepth, probe } };
  }
  if (said === "override") {
    const told = await ctx.recursiveCall({ playerMessage: "whispered", manualTrigger: { runtimeId: "echo", payload: { n: 2 } } });
    const plain = await ctx.recursiveCall(call("echo"));
    const relayed = await ctx.recursiveCall({ playerMessage: "passed on", manualTrigger: { runtimeId: "relay" } });
    return { outcome: "success", value: { told, plain, relayed } };
  }
  if (said === "limit") {
    return { outcome: "success", value: await ctx.recursiveCall(call("dive")) };
  }
  if (said === "unknown") {
    return {
      outcome: "success",
      value: {
        nowhere: await refusal(ctx.recursiveCall(call("nowhere"))),
        worker: await refusal(ctx.recursiveCall(call("worker"))),
        qualified: await refusal(ctx.recursiveCall(call("yonder/worker"))),
        agent: await refusal(ctx.recursiveCall(call("thinker"))),
        own: await ctx.recursiveCall(call("nest/echo")),
      },
    };
  }
  if (said === "invalid") {
    const tries = [
      undefined,
      {},
      { manualTrigger: "echo" },
      { manualTrigger: { runtimeId: 3 } },
      { manualTrigger: { runtimeId: "" } },
      { manualTrigger: { runtimeId: "echo" }, playerMessage: 5 },
    ];
    const out = [];
    for (const request of tries) out.push(await refusal(ctx.recursiveCall(request)));
    return { outcome: "success", value: out };
  }
  if (said === "random") {
    const first = await ctx.recursiveCall(call("dice"));
    const second = await ctx.recursiveCall(call("dice"));
    return { outcome: "success", value: { first: first.value, second: second.value } };
  }
  if (said.startsWith("writes")) {
    await ctx.pluginData.set("notes", "caller", "before");
    await ctx.pluginData.update("tally", "count", [{ op: "inc", by: 1 }]);
    const writer = await ctx.recursiveCall(call("writer"));
    const spoiler = await ctx.recursiveCall(call("spoiler"));
    const nested = await ctx.pluginData.get("notes", "nested");
    const spoiled = await ctx.pluginData.get("notes", "spoiled");
    await ctx.pluginData.update("tally", "count", [{ op: "inc", by: 1 }]);
    const count = await ctx.pluginData.get("tally", "count");
    const value = { writer, spoiler, nested, spoiled, count };
    if (said === "writes then fail") return { outcome: "failed", error: "changed my mind", value };
    return { outcome: "success", value };
  }
  return { outcome: "success", value: { idle: true } };
}
"""

PROBE = """export default async function handler(ctx) {
  const inner = ctx.recursionDepth < ctx.manualPayload.until
    ? await ctx.recursiveCall({ manualTrigger: { runtimeId: "probe", payload: ctx.manualPayload } })
    : null;
  return { outcome: "success", value: { depth: ctx.recursionDepth, inner } };
}
"""

ECHO = """export default async function handler(ctx) {
  return {
    outcome: "success",
    value: { playerMessage: ctx.playerMessage, manualPayload: ctx.manualPayload, depth: ctx.recursionDepth },
  };
}
"""

RELAY = """export default async function handler(ctx) {
  return { outcome: "success", value: await ctx.recursiveCall({ manualTrigger: { runtimeId: "echo" } }) };
}
"""

DIVE = """export default async function handler(ctx) {
  try {
    const deeper = await ctx.recursiveCall({ manualTrigger: { runtimeId: "dive" } });
    return { outcome: "success", value: deeper.value };
  } catch (error) {
    return {
      outcome: "success",
      value: { deepest: ctx.recursionDepth, refused: { name: error.name, code: error.code, message: error.message } },
    };
  }
}
"""

DICE = """export default async function handler(ctx) {
  return { outcome: "success", value: [ctx.random.int(1, 1000000), ctx.random.int(1, 1000000)] };
}
"""

WRITER = """export default async function handler(ctx) {
  const saw = await ctx.pluginData.get("notes", "caller");
  await ctx.pluginData.set("notes", "nested", { saw });
  await ctx.pluginData.update("tally", "count", [{ op: "inc", by: 1 }]);
  return {
    outcome: "success",
    value: { saw, count: await ctx.pluginData.get("tally", "count") },
    effects: {
      notifications: [{ title: "Written from below" }],
      events: [{ topic: "nest.written", payload: { saw } }],
    },
  };
}
"""

SPOILER = """export default async function handler(ctx) {
  await ctx.pluginData.set("notes", "spoiled", true);
  return { outcome: "failed", error: "spoiled on purpose", effects: { notifications: [{ title: "Spoiled" }] } };
}
"""

WORKER = """export default async function handler(ctx) {
  await ctx.pluginData.set("yonder", "ran", true);
  return { outcome: "success", value: { ran: true } };
}
"""

MANUAL = {"schedule": {"trigger": {"type": "manual"}}, "function": {}}


def nest_package(root):
    return write_plugin(
        root,
        "nest",
        {},
        runtimes={
            "driver": ({"schedule": {"stage": "post-turn"}, "function": {}}, DRIVER),
            "probe": (MANUAL, PROBE),
            "echo": (MANUAL, ECHO),
            "relay": (MANUAL, RELAY),
            "dive": (MANUAL, DIVE),
            "dice": (MANUAL, DICE),
            "writer": (MANUAL, WRITER),
            "spoiler": (MANUAL, SPOILER),
            "thinker": ({"schedule": {"trigger": {"type": "manual"}}, "agent": {}}, ""),
        },
    )


@pytest.fixture
def nest_session(db, alice, tmp_path):
    index_folder(nest_package(tmp_path))
    yonder = write_plugin(tmp_path, "yonder", {}, runtimes={"worker": (MANUAL, WORKER)})
    index_folder(yonder)
    world = make_world(owner=alice, plugins=["nest", "yonder"])
    return session_create(owner=alice, world=world)


def driven(session, message: str) -> tuple[dict, dict]:
    """The turn's result and the driver's runtime result."""
    result = play(session, message)
    return result, by_runtime(result)["nest/driver"]


def brief(nested: list[dict]) -> list[tuple[str, int, str]]:
    return [(n["runtimeId"], n["depth"], n["outcome"]) for n in nested]


def test_a_nested_call_returns_the_nested_value_and_counts_its_depth(nest_session):
    _, driver = driven(nest_session, "depth")
    assert driver["status"] == "succeeded"
    assert driver["output"] == {
        "top": 0,
        "probe": {
            "outcome": "success",
            "value": {
                "depth": 1,
                "inner": {"outcome": "success", "value": {"depth": 2, "inner": None}},
            },
        },
    }
    # The trace lists both nested runs on the caller, in start order.
    assert brief(driver["nested"]) == [("probe", 1, "success"), ("probe", 2, "success")]
    assert all(n["durationMs"] >= 0 for n in driver["nested"])


def test_the_player_message_override_and_the_payload_reach_the_nested_ctx(nest_session):
    _, driver = driven(nest_session, "override")
    told, plain, relayed = (driver["output"][k] for k in ("told", "plain", "relayed"))
    assert told["value"] == {"playerMessage": "whispered", "manualPayload": {"n": 2}, "depth": 1}
    # Without an override the caller's message; without a payload null.
    assert plain["value"] == {"playerMessage": "override", "manualPayload": None, "depth": 1}
    # A nested-nested run inherits the message its own caller was given.
    assert relayed["value"]["value"] == {
        "playerMessage": "passed on",
        "manualPayload": None,
        "depth": 2,
    }


def test_exactly_ten_nested_levels_run_and_the_eleventh_is_refused(nest_session):
    _, driver = driven(nest_session, "limit")
    assert driver["status"] == "succeeded"
    value = driver["output"]["value"]
    assert value["deepest"] == 10
    refused = value["refused"]
    assert (refused["name"], refused["code"]) == ("ToolError", "recursion_too_deep")
    assert "depth 11" in refused["message"] and "limit of 10" in refused["message"]
    assert brief(driver["nested"]) == [("dive", depth, "success") for depth in range(1, 11)]


def test_only_runtimes_of_the_callers_own_package_can_be_called(nest_session):
    _, driver = driven(nest_session, "unknown")
    value = driver["output"]
    for name in ("nowhere", "worker", "qualified"):
        assert value[name]["name"] == "ToolError"
        assert value[name]["code"] == "runtime_not_found", name
    assert "use services or events across packages" in value["worker"]["message"]
    assert value["agent"]["code"] == "recursive_call_invalid"
    assert "agent runtime" in value["agent"]["message"]
    # A qualified ID of the own package is fine.
    assert value["own"]["outcome"] == "success"
    assert not PluginData.objects.filter(session=nest_session, plugin_id="yonder").exists()
    assert brief(driver["nested"]) == [("echo", 1, "success")]  # refusals run nothing


def test_a_badly_shaped_call_is_refused_naming_the_field(nest_session):
    _, driver = driven(nest_session, "invalid")
    tries = driver["output"]
    assert {t["code"] for t in tries} == {"recursive_call_invalid"}
    assert {t["name"] for t in tries} == {"ToolError"}
    messages = [t["message"] for t in tries]
    assert "the argument must be an object" in messages[0]
    assert "manualTrigger must be an object" in messages[1]
    assert "manualTrigger must be an object" in messages[2] and "got string" in messages[2]
    assert "manualTrigger.runtimeId must be a non-empty string, got number" in messages[3]
    assert "manualTrigger.runtimeId must be a non-empty string, got an empty string" in messages[4]
    assert "playerMessage must be a string, got number" in messages[5]
    assert driver["nested"] == []


def test_nested_writes_notices_and_events_commit_with_the_caller(nest_session):
    result, driver = driven(nest_session, "writes")
    assert driver["status"] == "succeeded"
    value = driver["output"]
    # The nested run saw the caller's write made just before the call, in the same handler.
    assert value["writer"] == {"outcome": "success", "value": {"saw": "before", "count": 2}}
    # A nested run that fails is not part of the caller's execution: its write is gone.
    assert value["spoiler"]["outcome"] == "failed"
    assert value["spoiler"]["error"] == "spoiled on purpose"
    assert value["spoiled"] is None
    # After the call the caller reads the nested writes; its own later update builds on them.
    assert value["nested"] == {"saw": "before"}
    assert value["count"] == 3
    assert brief(driver["nested"]) == [("writer", 1, "success"), ("spoiler", 1, "failed")]

    rows = {
        (r.namespace, r.key): r.value
        for r in PluginData.objects.filter(session=nest_session, plugin_id="nest")
    }
    assert rows == {
        ("notes", "caller"): "before",
        ("notes", "nested"): {"saw": "before"},
        ("tally", "count"): 3,
    }
    events = SessionEvent.objects.filter(session=nest_session).order_by("seq")
    notices = [e.payload for e in events if e.type == "notification.created"]
    assert [(n["title"], n["runtimeId"]) for n in notices] == [
        ("Written from below", "nest/driver")
    ]
    emitted = [e.payload for e in events if e.type == "plugin.event"]
    assert [(e["topic"], e["runtime"], e["payload"]) for e in emitted] == [
        ("nest.written", "nest/driver", {"saw": "before"})
    ]
    assert result["status"] == "committed"


def test_nested_writes_are_thrown_away_when_the_caller_then_fails(nest_session):
    result, driver = driven(nest_session, "writes then fail")
    assert driver["status"] == "failed"
    assert driver["reason"] == "changed my mind"
    assert brief(driver["nested"]) == [("writer", 1, "success"), ("spoiler", 1, "failed")]
    assert not PluginData.objects.filter(session=nest_session, plugin_id="nest").exists()
    events = SessionEvent.objects.filter(session=nest_session)
    assert not events.filter(type="notification.created").exists()
    assert not events.filter(type="plugin.event").exists()
    assert result["status"] == "committed"  # the turn goes on without the failed runtime


def test_the_nested_seed_is_the_callers_seed_and_the_call_count(nest_session, tmp_path):
    result, driver = driven(nest_session, "random")
    first, second = driver["output"]["first"], driver["output"]["second"]
    assert first != second
    manifest = load_package(tmp_path / "nest", host_version="0.1.0").manifest
    caller_seed = f"{result['turnId']}:nest/driver"
    for count, draws in ((1, first), (2, second)):
        alone = plugin_function_call(
            manifest=manifest,
            runtime="dice",
            callbacks=InMemoryCallbacks(),
            context={"seed": f"{caller_seed}#{count}"},
        )
        assert alone.result["value"] == draws


def test_outside_a_turn_the_call_is_refused_as_unavailable(tmp_path):
    # An offline run (test_runtime's function cases, a benchmark) has no turn executor.
    from pluginhost.pool import author_code_consent

    manifest = load_package(nest_package(tmp_path), host_version="0.1.0").manifest
    # Offline runs of a community folder consent to running the author's code, as test_runtime does.
    with author_code_consent("test_runtime"), pytest.raises(PluginCallError) as refused:
        plugin_function_call(
            manifest=manifest, runtime="relay", callbacks=InMemoryCallbacks(), context={}
        )
    assert refused.value.code == "recursive_call_unavailable"
    assert "only inside a session's turn" in refused.value.message


NOTE_SCHEMA = json.dumps(
    {
        "type": "object",
        "required": ["id", "text"],
        "properties": {"id": {"type": "string"}, "text": {"type": "string", "maxLength": 20}},
    }
)

STRICT_CALLER = """export default async function handler(ctx) {
  if (ctx.playerMessage === "bad caller") {
    await ctx.pluginData.set("notes", "gate", { id: "gate", text: "far too long for the schema" });
    try {
      await ctx.recursiveCall({ manualTrigger: { runtimeId: "scribe", payload: { text: "fine" } } });
      return { outcome: "success", value: { refused: null } };
    } catch (error) {
      return { outcome: "success", value: { refused: error.code } };
    }
  }
  const nested = await ctx.recursiveCall({
    manualTrigger: { runtimeId: "scribe", payload: { text: "far too long for the schema" } },
  });
  await ctx.pluginData.set("notes", "door", { id: "door", text: "open" });
  return { outcome: "success", value: { nested } };
}
"""

SCRIBE = """export default async function handler(ctx) {
  await ctx.pluginData.set("notes", "scribbled", { id: "scribbled", text: ctx.manualPayload.text });
  return { outcome: "success", value: { wrote: true } };
}
"""


@pytest.fixture
def strict_session(db, alice, tmp_path):
    folder = write_plugin(
        tmp_path,
        "strict",
        {"contributes": {"datasets": {"notes": {"schema": "./note.schema.json", "key": "id"}}}},
        runtimes={
            "caller": ({"schedule": {"stage": "post-turn"}, "function": {}}, STRICT_CALLER),
            "scribe": (MANUAL, SCRIBE),
        },
        files={"note.schema.json": NOTE_SCHEMA},
    )
    index_folder(folder)
    return session_create(owner=alice, world=make_world(owner=alice, plugins=["strict"]))


def test_a_refused_write_of_the_caller_refuses_the_call_and_drops_the_caller(strict_session):
    caller = by_runtime(play(strict_session, "bad caller"))["strict/caller"]
    # Its writes so far were handed over with the call and refused there: nothing runs, and
    # the caller, which caught the refusal, is dropped as if it had returned that write.
    assert caller["output"] == {"refused": "write_refused"}
    assert (caller["status"], caller["code"]) == ("dropped", "write-refused")
    assert "strict/notes/gate" in caller["reason"]
    assert caller["nested"] == []
    assert not PluginData.objects.filter(session=strict_session).exists()


def test_a_refused_write_of_the_nested_run_fails_only_that_run(strict_session):
    caller = by_runtime(play(strict_session, "bad nested"))["strict/caller"]
    assert caller["status"] == "succeeded"
    nested = caller["output"]["nested"]
    assert (nested["outcome"], nested["code"]) == ("failed", "write-refused")
    assert "strict/notes/scribbled" in nested["error"]
    assert [(n["runtimeId"], n["outcome"], n["code"]) for n in caller["nested"]] == [
        ("scribe", "failed", "write-refused")
    ]
    rows = PluginData.objects.filter(session=strict_session)
    assert {r.key: r.value for r in rows} == {"door": {"id": "door", "text": "open"}}
