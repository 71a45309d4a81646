"""Benchmark the JavaScript plugin host: echo floor, tool calls/s, one ctx.pluginData.get round
trip, and the cost of isolation (a community package's own contained host next to the shared
bundled host: cold start, first call, warm calls/s).

    .venv/bin/python bench/jshost.py [--seconds 2] [--gets 2000] [--starts 7] [--rounds 3]
    .venv/bin/python bench/jshost.py --walls-only   # the cost of the realm and socket walls

Everything runs through a real Node child over the same framed channel the hub uses.
"""

from __future__ import annotations

import argparse
import os
import secrets
import statistics
import sys
import tempfile
import textwrap
import time
from pathlib import Path

import django

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from catalogue.manifest import load_package  # noqa: E402
from pluginhost.callbacks import InMemoryCallbacks  # noqa: E402
from pluginhost.host import NodeHost, network_namespace_prefix  # noqa: E402
from pluginhost.pool import author_code_consent  # noqa: E402
from pluginhost.services import plugin_function_call, plugin_load, plugin_tool_call  # noqa: E402

MANIFEST = """---
id: bench
version: 0.1.0
description: Benchmark package.
contributes:
  tools: [add]
runtime:
  schedule: { trigger: { type: manual } }
  function:
    timeoutMs: 60000
---
Bench.
"""
ENTRY = """
export default function register(covel) {
  const { tool, z } = covel.toolkit;
  covel.registerTool(tool({ name: "add", description: "Add two numbers.",
    parameters: z.object({ a: z.number(), b: z.number() }),
    async execute({ a, b }) { return { sum: a + b }; } }));
}
"""
HANDLER = """
export default async function handler(ctx) {
  const n = ctx.manualPayload?.gets ?? 0;
  let found = 0;
  for (let i = 0; i < n; i++) if ((await ctx.pluginData.get("bench", "k")) !== null) found++;
  return { outcome: "success", value: { found } };
}
"""


def rate(fn, seconds: float) -> tuple[float, int]:
    count = 0
    started = time.perf_counter()
    deadline = started + seconds
    while time.perf_counter() < deadline:
        fn()
        count += 1
    elapsed = time.perf_counter() - started
    return count / elapsed, count


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--seconds", type=float, default=2.0)
    parser.add_argument("--gets", type=int, default=2000)
    parser.add_argument("--starts", type=int, default=7, help="cold starts to time")
    parser.add_argument("--rounds", type=int, default=3, help="alternating warm rounds per host")
    parser.add_argument("--walls-only", action="store_true", help="only the walls' cost")
    args = parser.parse_args()
    # Loading a package asks the approved-code store where bundled folders are (settings).
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    # A bench is not a deployment: a throw-away key, unless one is set.
    os.environ.setdefault("SECRET_KEY", "bench-jshost-" + secrets.token_hex(24))
    django.setup()
    if args.walls_only:
        with tempfile.TemporaryDirectory() as tmp:
            print_walls(measure_walls(bench_package(Path(tmp)), args))
        return

    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "bench"
        (root / "server").mkdir(parents=True)
        (root / "PLUGIN.md").write_text(MANIFEST)
        (root / "server" / "index.js").write_text(textwrap.dedent(ENTRY))
        (root / "handler.js").write_text(textwrap.dedent(HANDLER))
        result = load_package(str(root))
        assert result.ok, [str(issue) for issue in result.errors]
        manifest = result.manifest

        host = NodeHost()
        started = time.perf_counter()
        host.start()
        start_ms = (time.perf_counter() - started) * 1000
        callbacks = InMemoryCallbacks(data={("bench", "bench"): {"k": {"v": 1}}})
        started = time.perf_counter()
        plugin_load(manifest=manifest, host=host)
        load_ms = (time.perf_counter() - started) * 1000

        payload = {"a": 1, "b": [1, 2, 3], "c": "text"}
        for _ in range(200):  # warm up both sides
            host.echo(payload)
            plugin_tool_call(
                manifest=manifest, tool="add", args={"a": 1, "b": 2}, callbacks=callbacks, host=host
            )

        echo_rate, echo_n = rate(lambda: host.echo(payload), args.seconds)
        tool_rate, tool_n = rate(
            lambda: plugin_tool_call(
                manifest=manifest, tool="add", args={"a": 1, "b": 2}, callbacks=callbacks, host=host
            ),
            args.seconds,
        )

        def handler(gets: int) -> float:
            t0 = time.perf_counter()
            out = plugin_function_call(
                manifest=manifest,
                runtime="bench",
                callbacks=callbacks,
                host=host,
                context={"manualPayload": {"gets": gets}},
            )
            assert out.result["value"]["found"] == gets
            return time.perf_counter() - t0

        handler(10)
        base = min(handler(0) for _ in range(20))
        with_gets = min(handler(args.gets) for _ in range(3))
        per_get_us = (with_gets - base) / args.gets * 1e6
        host.stop()

        isolation = measure_isolation(manifest, callbacks, args)

    print(f"node host start:              {start_ms:8.1f} ms")
    print(f"package load (entry+handler): {load_ms:8.1f} ms")
    print(
        f"bare JSON echo (floor):       {echo_rate:8.0f} calls/s  ({1e6 / echo_rate:6.1f} us each, n={echo_n})"
    )
    print(
        f"tool call (zod + envelope):   {tool_rate:8.0f} calls/s  ({1e6 / tool_rate:6.1f} us each, n={tool_n})"
    )
    print(f"empty function handler call:  {base * 1e6:8.1f} us")
    print(
        f"one ctx.pluginData.get:       {per_get_us:8.1f} us  (handler doing {args.gets} gets: {with_gets * 1000:.1f} ms)"
    )

    print_isolation(isolation)


def community_host(root: Path) -> NodeHost:
    return NodeHost(trust="community", label="bench", read_paths=[str(root)])


def measure_isolation(manifest, callbacks, args) -> dict[str, object]:
    """A community package's own host (permission model, network namespace where available,
    minimal environment) against the shared bundled host."""
    root = Path(manifest.path)
    tool = {"manifest": manifest, "tool": "add", "args": {"a": 1, "b": 2}, "callbacks": callbacks}
    starts, firsts = [], []
    with author_code_consent("bench"):
        for _ in range(args.starts):
            host = community_host(root)
            t0 = time.perf_counter()
            host.start()
            t1 = time.perf_counter()
            plugin_tool_call(**tool, host=host)  # loads the package, then calls
            t2 = time.perf_counter()
            starts.append((t1 - t0) * 1000)
            firsts.append((t2 - t1) * 1000)
            host.stop()

        bundled, community = NodeHost(), community_host(root)
        for host in (bundled, community):
            host.start()
            for _ in range(200):
                plugin_tool_call(**tool, host=host)
        rates: dict[str, list[float]] = {"bundled": [], "community": []}
        echo: dict[str, list[float]] = {"bundled": [], "community": []}
        payload = {"a": 1, "b": [1, 2, 3], "c": "text"}
        for _ in range(args.rounds):  # alternate, so the machine's load hits both alike
            for name, host in (("bundled", bundled), ("community", community)):
                rates[name].append(
                    rate(lambda h=host: plugin_tool_call(**tool, host=h), args.seconds)[0]
                )
                echo[name].append(rate(lambda h=host: h.echo(payload), args.seconds / 2)[0])
        netns = "--net" in community.command()
        for host in (bundled, community):
            host.stop()
    return {
        "starts": starts,
        "firsts": firsts,
        "rates": {k: statistics.median(v) for k, v in rates.items()},
        "echo": {k: statistics.median(v) for k, v in echo.items()},
        "netns": netns,
    }


def print_isolation(result: dict[str, object]) -> None:
    starts, firsts = result["starts"], result["firsts"]
    rates, echo = result["rates"], result["echo"]
    layer = "in an empty network namespace" if result["netns"] else "WITHOUT a network namespace"
    print(f"isolation (community host: --permission, {layer}):")
    print(
        f"  community host cold start:  {statistics.median(starts):8.1f} ms median "
        f"(min {min(starts):.1f}, max {max(starts):.1f}, n={len(starts)})"
    )
    print(
        f"  first call (load + call):   {statistics.median(firsts):8.1f} ms median "
        f"(min {min(firsts):.1f}, max {max(firsts):.1f})"
    )
    print(f"  echo floor, bundled host:   {echo['bundled']:8.0f} calls/s")
    print(f"  echo floor, community host: {echo['community']:8.0f} calls/s")
    print(f"  warm tool calls, bundled:   {rates['bundled']:8.0f} calls/s")
    print(
        f"  warm tool calls, community: {rates['community']:8.0f} calls/s "
        f"({rates['community'] / rates['bundled']:.2f} of the shared host's rate)"
    )
    print(f"  network namespace available here: {network_namespace_prefix() is not None}")


def bench_package(tmp: Path):
    root = tmp / "bench"
    (root / "server").mkdir(parents=True)
    (root / "PLUGIN.md").write_text(MANIFEST)
    (root / "server" / "index.js").write_text(textwrap.dedent(ENTRY))
    (root / "handler.js").write_text(textwrap.dedent(HANDLER))
    result = load_package(str(root))
    assert result.ok, [str(issue) for issue in result.errors]
    return result.manifest


def measure_walls(manifest, args) -> dict[str, object]:
    """The realm wall (freeze.mjs) and the socket filter (sockwall.py), each against the same
    host without it, alternated so the machine's load hits both alike."""
    callbacks = InMemoryCallbacks()
    tool = {"manifest": manifest, "tool": "add", "args": {"a": 1, "b": 2}, "callbacks": callbacks}
    payload = {"a": 1, "b": [1, 2, 3], "c": "text"}
    hosts = {"frozen": NodeHost(), "open": NodeHost(freeze_realm=False)}
    rates: dict[str, list[float]] = {name: [] for name in hosts}
    echo: dict[str, list[float]] = {name: [] for name in hosts}
    for host in hosts.values():
        host.start()
        for _ in range(300):
            plugin_tool_call(**tool, host=host)
    for _ in range(args.rounds):
        for name, host in hosts.items():
            rates[name].append(
                rate(lambda h=host: plugin_tool_call(**tool, host=h), args.seconds)[0]
            )
            echo[name].append(rate(lambda h=host: h.echo(payload), args.seconds / 2)[0])
    frozen = hosts["frozen"].info.get("frozen")
    for host in hosts.values():
        host.stop()
    root = Path(manifest.path)
    starts: dict[str, list[float]] = {"filter": [], "no filter": []}
    for _ in range(args.starts):
        for name, walls in (
            ("filter", {}),
            ("no filter", {"socket_filter": False, "require_os_layer": False}),
        ):
            host = NodeHost(trust="community", label="bench", read_paths=[str(root)], **walls)
            t0 = time.perf_counter()
            host.start()
            starts[name].append((time.perf_counter() - t0) * 1000)
            host.stop()
    return {
        "rates": {k: statistics.median(v) for k, v in rates.items()},
        "echo": {k: statistics.median(v) for k, v in echo.items()},
        "starts": {k: statistics.median(v) for k, v in starts.items()},
        "frozen": frozen,
        "n": args.starts,
    }


def print_walls(result: dict[str, object]) -> None:
    rates, echo, starts = result["rates"], result["echo"], result["starts"]
    print(f"walls (realm wall froze {result['frozen']} objects):")
    print(f"  warm tool calls, frozen realm: {rates['frozen']:8.0f} calls/s")
    print(
        f"  warm tool calls, open realm:   {rates['open']:8.0f} calls/s "
        f"(frozen/open {rates['frozen'] / rates['open']:.2f})"
    )
    print(f"  echo floor, frozen / open:     {echo['frozen']:8.0f} / {echo['open']:.0f} calls/s")
    print(
        f"  community host start, socket filter / none: {starts['filter']:.1f} / "
        f"{starts['no filter']:.1f} ms median of {result['n']}"
    )


if __name__ == "__main__":
    main()
