"""Issue #29: a host must never leave a call hanging for its whole limit.

- A result nested ~1,200 deep is valid for V8 but beyond Python's json (RecursionError): the host
  refuses it with result_too_deep; and where a frame does get through undecodable, the reader
  fails every call in flight at once (host_frame_unreadable) and the host restarts.
- A host blocked at 0 % CPU (Atomics.wait started from a timer after its call returned) does not
  answer a heartbeat: it is restarted before it is handed the next call, and while idle.
"""

from __future__ import annotations

import time

import pytest

from pluginhost.errors import HostCrashed, PluginCallError
from pluginhost.host import HEARTBEAT_TIMEOUT, NodeHost
from pluginhost.services import plugin_rpc_call

ENTRY = """
export default function register(covel) {
  covel.registerRpc("deep", async ({ depth }) => {
    let value = "bottom";
    for (let i = 0; i < depth; i += 1) value = [value];
    return value;
  });
  covel.registerRpc("pid", async () => process.pid);
  covel.registerRpc("block-later", async () => {
    // Returns at once; 50 ms later the thread blocks without using any CPU.
    setTimeout(() => Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 60000), 50);
    return "returned";
  });
}
"""


@pytest.fixture
def lively(make_package):
    return make_package(
        "contributes:\n  actions: [deep, pid, block-later]\n",
        {"server/index.js": ENTRY},
        name="lively",
    )


def call(host, manifest, callbacks, action, payload=None, timeout=30):
    return plugin_rpc_call(
        manifest=manifest,
        action=action,
        payload=payload,
        callbacks=callbacks,
        host=host,
        timeout=timeout,
    )


def test_a_result_nested_1200_deep_fails_at_once_with_its_code(fresh_host, lively, callbacks):
    assert call(fresh_host, lively, callbacks, "deep", {"depth": 150}) is not None
    pid = fresh_host.pid
    started = time.monotonic()
    with pytest.raises(PluginCallError) as caught:
        call(fresh_host, lively, callbacks, "deep", {"depth": 1200})
    assert caught.value.code == "result_too_deep"
    assert "more than 200 levels" in caught.value.message
    assert time.monotonic() - started < 5
    # The host refused it itself: it stays up and answers.
    assert call(fresh_host, lively, callbacks, "pid") == pid


def test_an_undecodable_frame_fails_the_call_at_once_and_restarts_the_host(lively, callbacks):
    # A host without the depth cap stands in for one that no longer follows the protocol.
    host = NodeHost(grace=0.5, max_depth=100_000)
    try:
        host.start()
        pid = call(host, lively, callbacks, "pid")
        started = time.monotonic()
        with pytest.raises(HostCrashed) as caught:
            call(host, lively, callbacks, "deep", {"depth": 1200}, timeout=30)
        assert caught.value.code == "host_frame_unreadable"
        assert "could not be read (RecursionError)" in caught.value.message
        assert time.monotonic() - started < 5, "the call waited for its timeout"
        # The next call gets a new host.
        assert call(host, lively, callbacks, "pid") != pid
    finally:
        host.stop()


def test_a_host_blocked_after_its_call_is_restarted_before_the_next(fresh_host, lively, callbacks):
    pid = call(fresh_host, lively, callbacks, "pid")
    assert call(fresh_host, lively, callbacks, "block-later") == "returned"
    time.sleep(0.3)  # the thread is blocked now, at 0 % CPU
    started = time.monotonic()
    assert call(fresh_host, lively, callbacks, "pid", timeout=30) != pid
    # The heartbeat's limit (plus a restart and a reload on a busy machine), not the call's 30 s.
    assert time.monotonic() - started < HEARTBEAT_TIMEOUT + 8


def test_a_blocked_idle_host_is_stopped_by_the_watch(fresh_host, lively, callbacks):
    call(fresh_host, lively, callbacks, "pid")
    call(fresh_host, lively, callbacks, "block-later")
    process = fresh_host._process
    deadline = time.monotonic() + 8
    while not process.dead and time.monotonic() < deadline:
        time.sleep(0.1)
    assert process.dead and process.death_code == "host_unresponsive"
    assert "did not answer a heartbeat" in process.death_reason


def test_a_healthy_idle_host_answers_its_heartbeats(fresh_host, lively, callbacks):
    pid = call(fresh_host, lively, callbacks, "pid")
    time.sleep(3.5)  # several heartbeat intervals
    assert fresh_host.running
    assert call(fresh_host, lively, callbacks, "pid") == pid
