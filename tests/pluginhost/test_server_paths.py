"""Issue #29: plugin code learns no absolute server path from what describes its process
(process.execArgv with the permission model's --allow-fs-read list, argv, execPath, cwd) or from
the host's errors (a refused or missing import, a dynamic import). What remains is named in
docs/plugin-host.md ("Threat model"): a module's own import.meta.url names the folder it was
loaded from (the approved copy under var/approved/).
"""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest

from pluginhost.host import HOST_SCRIPT, NodeHost, node_binary
from pluginhost.pool import author_code_consent
from pluginhost.services import plugin_rpc_call

ENTRY = """
export default function register(covel) {
  covel.registerRpc("describe", async () => {
    const failures = {};
    for (const spec of ["node:fs", "./nowhere.js", "../../outside.js", "/etc/passwd", "left-pad"]) {
      try {
        await import(spec);
        failures[spec] = "imported";
      } catch (error) {
        failures[spec] = `${error.code}: ${error.message}`;
      }
    }
    return {
      execArgv: process.execArgv,
      argv: process.argv,
      argv0: process.argv0,
      execPath: process.execPath,
      cwd: process.cwd(),
      failures,
    };
  });
}
"""


@pytest.fixture
def package(make_package):
    return make_package(
        "contributes:\n  actions: [describe]\n", {"server/index.js": ENTRY}, name="nosy"
    )


@pytest.fixture
def community_host(package) -> Iterator[NodeHost]:
    host = NodeHost(grace=1.0, trust="community", label="nosy", read_paths=[package.path])
    yield host
    host.stop()


def test_no_server_path_in_what_plugin_code_reads(community_host, package, callbacks):
    with author_code_consent("test"):  # the approval path is tested elsewhere
        out = plugin_rpc_call(
            manifest=package,
            action="describe",
            payload=None,
            callbacks=callbacks,
            host=community_host,
        )
    seen = json.dumps(out)
    for secret in (str(HOST_SCRIPT.parent), str(package.path), node_binary(), "/work", "/tmp"):
        assert secret not in seen, (secret, out)
    assert "--permission" in out["execArgv"]
    assert any(a == "--allow-fs-read=<path>" for a in out["execArgv"]), out["execArgv"]
    assert out["argv"] == ["node", "host.mjs"]
    assert out["argv0"] == "node" and out["execPath"] == "node" and out["cwd"] == "/"
    failures = out["failures"]
    assert failures["node:fs"].startswith("plugin_import_refused")
    assert failures["./nowhere.js"].startswith("module_not_found")
    assert failures["../../outside.js"].startswith("plugin_import_refused")
    assert "server/index.js" in failures["./nowhere.js"]
