"""Guard modules run in the host before their runtime and may skip it."""

from __future__ import annotations

from pathlib import Path

import pytest

from catalogue.manifest import load_package
from pluginhost.errors import PluginCallError
from pluginhost.services import plugin_function_call, plugin_guard_call

PLUGINS = Path(__file__).resolve().parents[2] / "plugins"


def test_the_bundled_chronicle_guard_skips_a_turn_without_story_text(host, callbacks):
    chronicle = load_package(str(PLUGINS / "chronicle")).manifest
    empty = {"inputs": {"digest": {"value": {"narrativeText": "  "}}}}
    told = {"inputs": {"digest": {"value": {"narrativeText": "The lamps go out."}}}}
    skipped = plugin_guard_call(
        manifest=chronicle, runtime="summarize", callbacks=callbacks, context=empty, host=host
    )
    runs = plugin_guard_call(
        manifest=chronicle, runtime="summarize", callbacks=callbacks, context=told, host=host
    )
    assert skipped.skip and "no story text" in skipped.reason
    assert not runs.skip and runs.reason is None


GUARDED = """
runtime:
  schedule: { stage: post-turn }
  guard: ./guard.js
  function: {}
"""


def test_a_guard_reads_data_and_settings_but_cannot_write(host, callbacks, make_package):
    manifest = make_package(
        GUARDED,
        {
            "handler.js": "export default async function handler() { return { outcome: 'success', value: {} }; }\n",
            "guard.js": """
                export default async function guard(ctx) {
                  if (ctx.pluginData !== undefined || ctx.store.setPluginData !== undefined) {
                    return { skip: true, reason: "guard was given a writer" };
                  }
                  const seen = await ctx.store.getPluginData("marks", "last");
                  if (seen && ctx.userSettings.once) return { skip: true, reason: "already marked" };
                  return { skip: false };
                }
            """,
        },
    )
    callbacks.data[(manifest.id, "marks")] = {"last": {"turn": 3}}
    once = plugin_guard_call(
        manifest=manifest,
        runtime=manifest.id,
        callbacks=callbacks,
        context={"userSettings": {"once": True}},
        host=host,
    )
    again = plugin_guard_call(
        manifest=manifest,
        runtime=manifest.id,
        callbacks=callbacks,
        context={"userSettings": {}},
        host=host,
    )
    assert (once.skip, once.reason) == (True, "already marked")
    assert not again.skip
    # The handler beside the guard still runs as a function runtime.
    assert (
        plugin_function_call(
            manifest=manifest, runtime=manifest.id, callbacks=callbacks, host=host
        ).outcome
        == "success"
    )


def test_a_runtime_without_a_guard_is_refused_clearly(host, callbacks):
    storyteller = load_package(str(PLUGINS / "storyteller")).manifest
    with pytest.raises(PluginCallError) as error:
        plugin_guard_call(
            manifest=storyteller, runtime="storyteller", callbacks=callbacks, host=host
        )
    assert error.value.code == "guard_not_found"
