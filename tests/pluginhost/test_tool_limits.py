"""A tool's own timeoutMs, and how ctx.tools.call fails (covel-plugins-with-local-code.md, step 3).

"use timeoutMs for a per-call limit": a tool that declares timeoutMs is cut off there, not at the
host's 30 s default. "ctx.tools.call ... rejects with ToolError on failure; its message is plain
text, and code and hint are separate fields": for the package's own tools and builtin tools alike.
"""

from __future__ import annotations

import time

import pytest

from pluginhost.callbacks import InMemoryCallbacks
from pluginhost.errors import CallbackRefused, PluginLoadError, PluginTimeout
from pluginhost.services import (
    DEFAULT_TOOL_TIMEOUT,
    plugin_function_call,
    plugin_load,
    plugin_tool_call,
)

SLEEPY = """
contributes:
  tools: [nap, doze]
runtime:
  schedule: { stage: post-turn }
  function:
    timeoutMs: 5000
    tools: { builtin: [get-character] }
"""

SLEEPY_FILES = {
    "server/index.js": """
        export default function register(covel) {
          const { tool, z } = covel.toolkit;
          const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));
          covel.registerTool(tool({
            name: "nap",
            description: "Sleep for a while.",
            timeoutMs: 300,
            parameters: z.object({ ms: z.number().int() }),
            async execute({ ms }) {
              await sleep(ms);
              return { slept: ms };
            },
          }));
          covel.registerTool(tool({
            name: "doze",
            description: "Sleep without a limit of its own.",
            parameters: z.object({ ms: z.number().int() }),
            async execute({ ms }) {
              await sleep(ms);
              return { slept: ms };
            },
          }));
        }
    """,
    "handler.js": """
        export default async function handler(ctx) {
          const { tool, args } = ctx.manualPayload;
          try {
            return { outcome: "success", value: await ctx.tools.call(tool, args) };
          } catch (error) {
            return {
              outcome: "failed",
              error: {
                name: error.name,
                isToolError: error.constructor?.name === "ToolError",
                code: error.code ?? null,
                hint: error.hint ?? null,
                message: error.message,
              },
            };
          }
        }
    """,
}


@pytest.fixture
def sleepy(make_package):
    return make_package(SLEEPY, SLEEPY_FILES, name="sleepy")


def test_a_tool_that_sleeps_past_its_timeout_ms_is_cut_off_there(sleepy, host, callbacks):
    started = time.monotonic()
    with pytest.raises(PluginTimeout) as caught:
        plugin_tool_call(
            manifest=sleepy, tool="nap", args={"ms": 5000}, callbacks=callbacks, host=host
        )
    elapsed = time.monotonic() - started
    # Well before the host's 30 s default (the 5 s sleep never ends on its own in time).
    assert elapsed < 3, elapsed
    assert "nap" in caught.value.message and "300 ms" in caught.value.message
    assert not (caught.value.details or {}).get("killed")  # the host answered; it was not killed
    # Within its limit the same tool answers.
    quick = plugin_tool_call(
        manifest=sleepy, tool="nap", args={"ms": 10}, callbacks=callbacks, host=host
    )
    assert quick.content == {"slept": 10}


def test_a_tool_without_timeout_ms_keeps_the_30_s_default(sleepy, host, callbacks):
    assert DEFAULT_TOOL_TIMEOUT == 30.0
    loaded = plugin_load(manifest=sleepy, host=host, force=True)
    assert loaded is not None
    limits = {t["name"]: t["timeoutMs"] for t in loaded.tools}
    assert limits == {"nap": 300, "doze": None}
    answer = plugin_tool_call(
        manifest=sleepy, tool="doze", args={"ms": 600}, callbacks=callbacks, host=host
    )
    assert answer.content == {"slept": 600}  # past nap's 300 ms: doze has no such limit


def test_ctx_tools_call_honours_the_tools_timeout_ms_and_rejects_with_a_tool_error(sleepy, host):
    result = plugin_function_call(
        manifest=sleepy,
        runtime="sleepy",
        callbacks=InMemoryCallbacks(),
        host=host,
        context={"manualPayload": {"tool": "nap", "args": {"ms": 4000}}},
    )
    error = result.result["error"]
    assert error["name"] == "ToolError" and error["isToolError"]
    assert error["code"] == "plugin_timeout"
    assert 'tool "nap"' in error["message"] and "300 ms" in error["message"]


def test_ctx_tools_call_on_a_builtin_tool_rejects_with_a_tool_error(sleepy, host):
    def refuse(args):
        raise CallbackRefused(
            "No character has that id.", code="not-found", hint="List the characters first."
        )

    callbacks = InMemoryCallbacks(tools={"get-character": refuse})
    result = plugin_function_call(
        manifest=sleepy,
        runtime="sleepy",
        callbacks=callbacks,
        host=host,
        context={"manualPayload": {"tool": "get-character", "args": {"id": "nobody"}}},
    )
    assert result.result["error"] == {
        "name": "ToolError",
        "isToolError": True,
        "code": "not-found",
        "hint": "List the characters first.",
        "message": "No character has that id.",
    }


def test_ctx_tools_call_on_a_builtin_the_hub_lacks_rejects_with_a_tool_error(sleepy, host):
    result = plugin_function_call(
        manifest=sleepy,
        runtime="sleepy",
        callbacks=InMemoryCallbacks(),
        host=host,
        context={"manualPayload": {"tool": "get-character", "args": {"id": "c1"}}},
    )
    error = result.result["error"]
    assert error["name"] == "ToolError" and error["isToolError"]
    assert error["code"] == "tool_unavailable"
    assert error["hint"] is None
    assert "get-character" in error["message"]


@pytest.mark.parametrize("written", ["0", "-5", "1.5", '"fast"', "120001"])
def test_it_refuses_a_timeout_ms_outside_its_bounds_naming_the_file_tool_and_rule(
    make_package, host, written
):
    files = {
        "server/index.js": f"""
            export default function register(covel) {{
              const {{ tool, z }} = covel.toolkit;
              covel.registerTool(tool({{
                name: "nap",
                description: "Sleep.",
                timeoutMs: {written},
                parameters: z.object({{}}),
                async execute() {{ return {{}}; }},
              }}));
            }}
        """
    }
    manifest = make_package("contributes:\n  tools: [nap]\n", files)
    with pytest.raises(PluginLoadError) as caught:
        plugin_load(manifest=manifest, host=host)
    message = caught.value.message
    assert "server/index.js" in message
    assert 'tool "nap"' in message and "timeoutMs" in message
    assert "an integer from 1 to 120000" in message
