"""The supervisor's own walls, which hold even if plugin code got past the host's: a community
host that is not contained is refused, its frames never name another package, an oversized frame
stops it unread, and code that burns CPU after its call returned is stopped."""

from __future__ import annotations

import logging
import sys
import time
from collections.abc import Iterator

import pytest

from pluginhost.errors import HostCrashed
from pluginhost.host import SOCKWALL, NodeHost, host_read_paths, one_line
from pluginhost.pool import author_code_consent
from pluginhost.services import plugin_rpc_call, plugin_tool_call

ENTRY = """
export default function register(covel) {
  covel.registerRpc("blob", async (payload) => "y".repeat(payload.bytes));
  covel.registerRpc("leave-a-burner", async () => {
    setInterval(() => { const until = Date.now() + 90; while (Date.now() < until) {} }, 0);
    return "returned";
  });
  covel.registerRpc("where", async () => ({ env: { ...process.env }, globals: typeof fetch }));
}
"""


@pytest.fixture
def walled(make_package):
    return make_package(
        "contributes:\n  actions: [blob, leave-a-burner, where]\n",
        {"server/index.js": ENTRY},
        name="walled",
    )


@pytest.fixture
def community_host(walled) -> Iterator[NodeHost]:
    host = NodeHost(grace=1.0, trust="community", label="walled", read_paths=[walled.path])
    yield host
    host.stop()


def test_a_community_host_without_the_permission_model_is_refused(monkeypatch, walled):
    host = NodeHost(trust="community", label="walled", read_paths=[walled.path])
    plain = [a for a in host.command() if a != "--permission" and "--allow-fs-read" not in a]
    monkeypatch.setattr(host, "command", lambda: plain)
    with pytest.raises(HostCrashed) as caught:
        host.start()
    assert "not contained: Node's permission model is off" in caught.value.message
    assert not host.running


def test_a_community_host_reads_only_the_host_and_its_package(walled, community_host):
    argv = community_host.command()
    reads = [a.split("=", 1)[1] for a in argv if a.startswith("--allow-fs-read=")]
    assert reads == [*host_read_paths(), str(walled.path)]
    assert not any(
        a.startswith(("--allow-fs-write", "--allow-child", "--allow-worker")) for a in argv
    )
    assert "--permission" in argv


def test_log_frames_of_a_community_host_are_its_own_one_liners(community_host, caplog):
    caplog.set_level(logging.INFO, logger="covel.plugins")
    community_host.start()
    # What a plugin that got hold of the channel could send: another package's name, a runtime
    # that smuggles a line break, and a message of several lines.
    community_host._process._route(
        {
            "type": "log",
            "level": "error",
            "package": "dice",
            "runtime": "x\n[dice] forged",
            "message": "one\n[dice] two\r\x1b[2Kthree",
        }
    )
    lines = [r.getMessage() for r in caplog.records if r.name == "covel.plugins"]
    assert lines == ["[walled] one\\n[dice] two\\r\\u001b[2Kthree"]


def test_one_line_escapes_every_line_break():
    assert one_line("a\nb\rc\u2028d\x85e\tf") == "a\\nb\\rc\\u2028d\\u0085e\tf"
    assert len(one_line("z" * 20000)) < 8300


def test_a_frame_over_the_cap_stops_the_host_unread(walled, community_host):
    with author_code_consent("test"):
        pid = community_host.pid
        assert (
            plugin_rpc_call(
                manifest=walled,
                action="blob",
                payload={"bytes": 10},
                callbacks=None,
                host=community_host,
                timeout=5,
            )
            == "y" * 10
        )
        pid = community_host.pid
        # Python's own cap, lower than the host's: the host sends, Python refuses to read.
        community_host.max_frame_bytes = 1000
        with pytest.raises(HostCrashed) as caught:
            plugin_rpc_call(
                manifest=walled,
                action="blob",
                payload={"bytes": 200_000},
                callbacks=None,
                host=community_host,
                timeout=5,
            )
    assert caught.value.code == "host_output_exceeded"
    assert "over the 1000 byte limit" in caught.value.message
    assert community_host.pid != pid or not community_host.running


def test_code_left_burning_cpu_after_its_call_is_stopped(walled, community_host):
    with author_code_consent("test"):
        assert (
            plugin_rpc_call(
                manifest=walled,
                action="leave-a-burner",
                payload=None,
                callbacks=None,
                host=community_host,
                timeout=5,
            )
            == "returned"
        )
    process = community_host._process
    deadline = time.monotonic() + 15
    while not process.dead and time.monotonic() < deadline:
        time.sleep(0.1)
    assert process.dead
    assert process.death_code == "host_cpu_exceeded"
    assert "no call in flight" in process.death_reason


def test_a_bundled_host_also_starts_with_nothing_of_the_hubs(monkeypatch, walled):
    monkeypatch.setenv("COVEL_TEST_PLANTED", "bundled-secret")
    bundled = NodeHost()
    try:
        seen = plugin_rpc_call(
            manifest=walled, action="where", payload=None, callbacks=None, host=bundled, timeout=5
        )
    finally:
        bundled.stop()
    assert "bundled-secret" not in str(seen["env"])
    assert sorted(seen["env"]) == ["LANG", "LC_ALL", "NODE_OPTIONS", "TMPDIR", "TZ"]
    assert seen["globals"] == "undefined"
    assert bundled.info == {} or bundled.info["trust"] == "bundled"


def test_tool_calls_still_work_in_a_community_host(make_package, community_host):
    manifest = make_package(
        "contributes:\n  tools: [add]\n",
        {
            "server/index.js": """
            export default function register(covel) {
              const { tool, z } = covel.toolkit;
              covel.registerTool(tool({ name: "add", description: "Add.",
                parameters: z.object({ a: z.number(), b: z.number() }),
                async execute({ a, b }) { return { sum: a + b }; } }));
            }
            """
        },
        name="adder",
    )
    host = NodeHost(trust="community", label="adder", read_paths=[manifest.path])
    try:
        with author_code_consent("test"):
            envelope = plugin_tool_call(
                manifest=manifest, tool="add", args={"a": 2, "b": 3}, callbacks=None, host=host
            )
        assert envelope.content == {"sum": 5}
        assert host.info["permission"]["enabled"] is True
    finally:
        host.stop()


def test_where_no_network_namespace_exists_require_refuses_and_auto_goes_without(
    monkeypatch, walled
):
    import pluginhost.host as host_module

    monkeypatch.setattr(host_module, "network_namespace_prefix", lambda: None)
    required = NodeHost(trust="community", label="walled", require_network_namespace=True)
    with pytest.raises(HostCrashed) as caught:
        required.start()
    assert "a network namespace was required" in caught.value.message
    assert not required.running
    auto = NodeHost(trust="community", label="walled", read_paths=[walled.path])
    # Without a namespace, the socket filter's launcher comes first, then Node.
    assert auto.command()[:5] == [sys.executable, "-I", "-S", str(SOCKWALL), auto.node]
    assert "--permission" in auto.command()
    off = NodeHost(trust="community", label="walled", network_namespace=False)
    monkeypatch.undo()
    assert off.command()[0] == sys.executable  # never wrapped, even where unshare works
