"""The host is supervised: hung or crashed hosts are replaced, plugin output stays out of the protocol."""

from __future__ import annotations

import logging
import os
import signal
import threading
import time

import pytest

from pluginhost.errors import HostCrashed, PluginTimeout
from pluginhost.services import plugin_tool_call

MISBEHAVING = """
export default function register(covel) {
  const { tool, z } = covel.toolkit;
  const make = (name, execute) => covel.registerTool(tool({ name, description: name, parameters: z.object({}).passthrough(), execute }));
  make("spin", async () => { for (;;) {} });
  make("wait", async () => new Promise((resolve) => setTimeout(() => resolve("late"), 10000)));
  make("exit", async () => {
    const refused = [];
    for (const name of ["exit", "abort", "kill", "reallyExit", "binding", "dlopen", "chdir"]) {
      try { process[name](3); refused.push(`${name}: allowed`); } catch (e) { refused.push(`${name}: ${e.code}`); }
    }
    return refused;
  });
  make("hog", async () => { const keep = []; for (;;) keep.push(new Array(1e6).fill(Math.random())); });
  make("noisy", async (args) => {
    // Bytes that look like a frame header, raw writes to both streams, and console output.
    process.stdout.write("\\x00\\x00\\x00\\x05hello not a frame\\n");
    process.stderr.write("raw stderr line\\n");
    console.log("console says %s", "hi", { deep: [1, 2] });
    console.error("console error line");
    return { echoed: args.big.length };
  });
  make("ok", async () => "fine");
}
"""


@pytest.fixture
def bad(make_package):
    return make_package(
        "contributes:\n  tools: [spin, wait, exit, hog, noisy, ok]\n",
        {"server/index.js": MISBEHAVING},
        name="bad",
    )


def test_a_hung_host_is_killed_and_restarted(bad, fresh_host, callbacks):
    pid = fresh_host.pid
    started = time.monotonic()
    with pytest.raises(PluginTimeout) as caught:
        plugin_tool_call(
            manifest=bad, tool="spin", args={}, callbacks=callbacks, host=fresh_host, timeout=0.3
        )
    assert time.monotonic() - started < 3
    assert caught.value.details == {"killed": True}
    assert "will restart" in caught.value.message
    # The next call starts a new process, reloads the package and works.
    assert (
        plugin_tool_call(
            manifest=bad, tool="ok", args={}, callbacks=callbacks, host=fresh_host
        ).content
        == "fine"
    )
    assert fresh_host.pid != pid
    assert fresh_host.restarts >= 1


def test_an_async_timeout_is_answered_by_the_host_without_a_restart(bad, fresh_host, callbacks):
    plugin_tool_call(manifest=bad, tool="ok", args={}, callbacks=callbacks, host=fresh_host)
    pid = fresh_host.pid
    with pytest.raises(PluginTimeout) as caught:
        plugin_tool_call(
            manifest=bad, tool="wait", args={}, callbacks=callbacks, host=fresh_host, timeout=0.2
        )
    assert caught.value.details is None
    assert fresh_host.pid == pid


def test_a_crashed_host_fails_the_call_in_flight_and_restarts(bad, fresh_host, callbacks):
    plugin_tool_call(manifest=bad, tool="ok", args={}, callbacks=callbacks, host=fresh_host)
    pid = fresh_host.pid
    threading.Timer(0.3, os.kill, (pid, signal.SIGKILL)).start()
    with pytest.raises(HostCrashed) as caught:
        plugin_tool_call(
            manifest=bad, tool="wait", args={}, callbacks=callbacks, host=fresh_host, timeout=10
        )
    assert caught.value.code == "host_crashed"
    assert "exited (code -9)" in caught.value.message
    assert (
        plugin_tool_call(
            manifest=bad, tool="ok", args={}, callbacks=callbacks, host=fresh_host
        ).content
        == "fine"
    )
    assert fresh_host.pid != pid


def test_plugins_cannot_end_the_shared_process_or_reach_native_code(bad, host, callbacks):
    refused = plugin_tool_call(
        manifest=bad, tool="exit", args={}, callbacks=callbacks, host=host
    ).content
    assert refused == [
        "exit: host_capability_refused",
        "abort: host_capability_refused",
        "kill: host_capability_refused",
        "reallyExit: host_capability_refused",
        "binding: plugin_import_refused",
        "dlopen: plugin_import_refused",
        "chdir: host_capability_refused",
    ]
    assert host.echo("still here") == "still here"


@pytest.mark.slow
def test_a_host_over_its_memory_cap_dies_and_restarts(bad, fresh_host, callbacks):
    assert fresh_host.memory_mb == 64
    with pytest.raises(HostCrashed) as caught:
        plugin_tool_call(
            manifest=bad, tool="hog", args={}, callbacks=callbacks, host=fresh_host, timeout=20
        )
    assert "the Node plugin host exited" in caught.value.message
    assert (
        plugin_tool_call(
            manifest=bad, tool="ok", args={}, callbacks=callbacks, host=fresh_host
        ).content
        == "fine"
    )


def test_plugin_output_goes_to_the_plugin_log_never_into_the_protocol(bad, host, callbacks, caplog):
    caplog.set_level(logging.INFO, logger="covel.plugins")
    big = "x" * 300_000  # several pipe buffers, both ways
    for _ in range(3):
        envelope = plugin_tool_call(
            manifest=bad, tool="noisy", args={"big": big}, callbacks=callbacks, host=host
        )
        assert envelope.content == {"echoed": 300_000}
    deadline = time.monotonic() + 3
    while "raw stderr line" not in caplog.text and time.monotonic() < deadline:
        time.sleep(0.02)
    assert "[bad] console says hi { deep: [ 1, 2 ] }" in caplog.text
    assert "[bad] console error line" in caplog.text
    assert "hello not a frame" in caplog.text
    assert "raw stderr line" in caplog.text
    assert host.echo({"still": "framed"}) == {"still": "framed"}


def test_concurrent_calls_from_threads_each_get_their_own_answer(host):
    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(8) as pool:
        answers = list(pool.map(lambda n: host.echo({"n": n}), range(200)))
    assert answers == [{"n": n} for n in range(200)]


SHUTDOWN = """
import logging, sys, threading
import django
django.setup()
logging.basicConfig(stream=sys.stderr, level=logging.INFO)
from pluginhost.pool import get_host
host = get_host()
assert host.echo({"hello": 1}) == {"hello": 1}
assert any(t.name == "pluginhost-watch" for t in threading.enumerate())
print("host ran", flush=True)
"""


def test_the_watch_stops_with_the_pool_so_interpreter_exit_is_quiet():
    """At exit the pool stops its hosts (atexit) and the watch thread with them: a watch left
    sampling hosts while they and logging shut down logged "plugin host watch failed"."""
    import subprocess
    import sys
    from pathlib import Path

    repo = Path(__file__).resolve().parents[2]
    env = {**os.environ, "DJANGO_SETTINGS_MODULE": "config.settings"}
    done = subprocess.run(
        [sys.executable, "-c", SHUTDOWN],
        cwd=repo,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert "host ran" in done.stdout
    assert "plugin host watch failed" not in done.stderr, done.stderr[-3000:]
    assert "Traceback" not in done.stderr, done.stderr[-3000:]


def test_stopping_the_pool_ends_the_watch_thread_and_a_new_host_restarts_it():
    from pluginhost import supervision
    from pluginhost.pool import host_pool

    pool = host_pool()
    assert pool.bundled().echo("one") == "one"
    watch = supervision._watch.thread
    assert watch is not None and watch.is_alive()
    pool.stop_all()
    watch.join(2)
    assert not watch.is_alive()
    assert supervision._watch.thread is None
    # The next host started (the pool's bundled one again) starts a new watch.
    assert host_pool().bundled().echo("two") == "two"
    assert supervision._watch.thread is not None and supervision._watch.thread.is_alive()
