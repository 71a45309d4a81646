"""Issue #27 (in #29's scope): each runtime's handler loads on its own. A package whose one
runtime cannot load (its handler imports a helper that imports node:fs) keeps its other runtime
running in a session's calls; calling the broken one fails with the import's own code, naming
the runtime and the chain of imports that failed. A check of the package (codecheck) still
fails on it."""

from __future__ import annotations

import pytest

from pluginhost.errors import PluginHostError
from pluginhost.services import plugin_function_call, plugin_load

GOOD = "export default async function handler() { return { outcome: 'success', value: { ran: 'good' } }; }\n"
BAD = """import { helper } from "../../lib/helper.js";
export default async function handler() { return { outcome: 'success', value: helper() }; }
"""
HELPER = """import fs from "node:fs";
export const helper = () => fs.readFileSync("/etc/hostname", "utf8");
"""


@pytest.fixture
def two_runtimes(make_package):
    manifest = make_package(
        "",
        {
            "runtimes/good/RUNTIME.md": "---\nfunction: {}\nschedule: {stage: post-turn}\n---\nGood.\n",
            "runtimes/good/handler.js": GOOD,
            "runtimes/bad/RUNTIME.md": "---\nfunction: {}\nschedule: {stage: post-turn}\n---\nBad.\n",
            "runtimes/bad/handler.js": BAD,
            "lib/helper.js": HELPER,
        },
        name="pair",
    )
    assert sorted(r.id for r in manifest.runtimes) == ["bad", "good"], [
        r.id for r in manifest.runtimes
    ]
    return manifest


def test_the_other_runtime_keeps_running(fresh_host, two_runtimes, callbacks):
    good = plugin_function_call(
        manifest=two_runtimes, runtime="good", callbacks=callbacks, context={}, host=fresh_host
    )
    assert good.result["value"] == {"ran": "good"}
    with pytest.raises(PluginHostError) as caught:
        plugin_function_call(
            manifest=two_runtimes,
            runtime="bad",
            callbacks=callbacks,
            context={},
            host=fresh_host,
        )
    error = caught.value
    assert error.code == "plugin_import_refused"
    assert error.message.startswith("runtime bad cannot load: ")
    assert 'import "node:fs" from lib/helper.js is refused' in error.message
    assert "import chain: runtimes/bad/handler.js → lib/helper.js" in error.message
    assert error.details["chain"] == ["runtimes/bad/handler.js", "lib/helper.js"]
    # The good one still answers after the refusal.
    again = plugin_function_call(
        manifest=two_runtimes, runtime="good", callbacks=callbacks, context={}, host=fresh_host
    )
    assert again.result["value"] == {"ran": "good"}


def test_a_check_of_the_package_still_fails_on_the_broken_runtime(fresh_host, two_runtimes):
    with pytest.raises(PluginHostError) as caught:
        plugin_load(manifest=two_runtimes, host=fresh_host, force=True)
    assert caught.value.code == "plugin_import_refused"
    assert "runtime bad cannot load" in caught.value.message


def test_a_partial_load_reports_the_failed_runtime(fresh_host, two_runtimes):
    loaded = plugin_load(manifest=two_runtimes, host=fresh_host, partial_runtimes=True)
    assert loaded is not None
    assert loaded.runtimes == ["good"]
    assert [f["runtime"] for f in loaded.failed_runtimes] == ["bad"]
