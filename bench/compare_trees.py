"""Two checkouts, the same measurement, alternated: did a refactoring change the speed?

    .venv/bin/python bench/compare_trees.py --old /work/wt/old [--new .] [--rounds 5]
        [--turns 160] [--parallel 8] [--calls 8000]

Each round runs, for each tree in turn (the order flips every round, so a drift in the
machine's load hits both alike), one child process per measurement with that tree's code first
on sys.path, a throw-away COVEL_VAR_DIR and SQLite database, and no Redis:

- turns: the in-process turn of bench/turns.py as it was before the turn split (turn_run with a
  TurnRequest, the bundled storyteller, the Node host, the commit; no HTTP): `--turns` turns of
  one session, then `--turns` turns spread over `--parallel` sessions on as many threads;
- jshost: warm tool calls of bench/jshost.py's package through plugin_tool_call.

Only API both trees share is used. CPU is that of the child and its Node host(s) together
(/proc utime + stime over the measured window), the figure to read on a shared machine; wall
time is printed beside it. The medians over the rounds, and new/old, end the output.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import textwrap
import threading
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
TICK = os.sysconf("SC_CLK_TCK")


def tree_cpu() -> float:
    """CPU seconds of this process and every live descendant (the Node hosts)."""
    children: dict[int, list[int]] = {}
    times: dict[int, float] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as handle:
                # The command name may hold spaces; the fields after it are fixed.
                fields = handle.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        pid = int(entry)
        children.setdefault(int(fields[1]), []).append(pid)
        times[pid] = (int(fields[11]) + int(fields[12])) / TICK
    total, todo = 0.0, [os.getpid()]
    while todo:
        pid = todo.pop()
        total += times.get(pid, 0.0)
        todo.extend(children.get(pid, []))
    return total


def window(run) -> tuple[float, float]:
    wall, cpu = time.perf_counter(), tree_cpu()
    run()
    return time.perf_counter() - wall, tree_cpu() - cpu


# ------------------------------------------------------------------ in the child


def measure_turns(turns: int, parallel: int) -> dict[str, float]:
    import django

    django.setup()
    from django.contrib.auth import get_user_model
    from django.core.management import call_command
    from django.db import connection

    from catalogue.manifest.loader import load_package
    from catalogue.services import package_content_hash, package_index
    from sessions.models import Turn
    from sessions.services import session_create
    from sessions.turns import TurnRequest, turn_run
    from worlds.models import World

    call_command("migrate", verbosity=0)
    folder = Path.cwd() / "plugins" / "storyteller"
    package_index(
        result=load_package(folder, host_version="0.1.0"),
        source="bundled",
        content_hash=package_content_hash(path=folder),
        host_version="0.1.0",
    )
    user = get_user_model().objects.create(username="bench-compare")
    world = World.objects.create(
        world_id="bench-compare", name="Bench", description="", owner=user, plugins=[]
    )
    sessions = [session_create(owner=user, world=world) for _ in range(parallel)]

    def play(session, count: int) -> None:
        for i in range(count):
            turn_run(session=session, request=TurnRequest(message=f"I walk on ({i})."))
        connection.close()

    play(sessions[0], 3)  # warm: the Node host starts, the package loads
    one_wall, one_cpu = window(lambda: play(sessions[0], turns))

    per = max(1, turns // parallel)

    def many() -> None:
        threads = [threading.Thread(target=play, args=(s, per)) for s in sessions]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()

    many_wall, many_cpu = window(many)
    done = per * len(sessions)
    # A turn that failed fast would flatter its tree: each must have committed a narrative.
    told = Turn.objects.filter(status=Turn.Status.COMMITTED).exclude(narrative_text="").count()
    if told != 3 + turns + done:
        raise SystemExit(f"{3 + turns + done} turns ran, {told} committed a narrative")
    return {
        "one wall ms/turn": one_wall * 1000 / turns,
        "one cpu ms/turn": one_cpu * 1000 / turns,
        f"{parallel} threads wall ms/turn": many_wall * 1000 / done,
        f"{parallel} threads cpu ms/turn": many_cpu * 1000 / done,
    }


def measure_jshost(calls: int, package: Path) -> dict[str, float]:
    import django

    django.setup()
    from catalogue.manifest import load_package
    from pluginhost.callbacks import InMemoryCallbacks
    from pluginhost.host import NodeHost
    from pluginhost.services import plugin_tool_call

    result = load_package(str(package))
    assert result.ok, [str(issue) for issue in result.errors]
    tool = {
        "manifest": result.manifest,
        "tool": "add",
        "args": {"a": 1, "b": 2},
        "callbacks": InMemoryCallbacks(),
    }
    host = NodeHost()
    host.start()
    try:
        for _ in range(300):  # warm
            plugin_tool_call(**tool, host=host)
        wall, cpu = window(lambda: [plugin_tool_call(**tool, host=host) for _ in range(calls)])
    finally:
        host.stop()
    return {"tool call wall us": wall * 1e6 / calls, "tool call cpu us": cpu * 1e6 / calls}


# ------------------------------------------------------------------ the driver


def bench_package(folder: Path) -> Path:
    """bench/jshost.py's package, written once from this tree so both trees run the same one."""
    sys.path.insert(0, str(HERE))
    import jshost

    root = folder / "bench"
    (root / "server").mkdir(parents=True)
    (root / "PLUGIN.md").write_text(jshost.MANIFEST)
    (root / "server" / "index.js").write_text(textwrap.dedent(jshost.ENTRY))
    (root / "handler.js").write_text(textwrap.dedent(jshost.HANDLER))
    return root


def run_child(tree: Path, kind: str, args: argparse.Namespace, package: Path) -> dict[str, float]:
    with tempfile.TemporaryDirectory(prefix="covel-compare-") as var:
        env = {
            **os.environ,
            "DJANGO_SETTINGS_MODULE": "config.settings",
            "DB_CONN_MAX_AGE": "0",
            "COVEL_VAR_DIR": var,
            "DATABASE_URL": f"sqlite:///{var}/bench.sqlite3",
            "REDIS_URL": "",
            "PYTHONPATH": str(tree),
        }
        env.setdefault("SECRET_KEY", "bench-compare-" + "k" * 50)
        command = [
            str(tree / ".venv" / "bin" / "python"),
            str(Path(__file__).resolve()),
            f"--child={kind}",
            f"--turns={args.turns}",
            f"--parallel={args.parallel}",
            f"--calls={args.calls}",
            f"--package={package}",
        ]
        done = subprocess.run(command, cwd=tree, env=env, capture_output=True, text=True)
    if done.returncode != 0:
        raise SystemExit(f"{tree} {kind} failed:\n{done.stderr[-3000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--old", type=Path)
    parser.add_argument("--new", type=Path, default=HERE.parent)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--turns", type=int, default=160)
    parser.add_argument("--parallel", type=int, default=8)
    parser.add_argument("--calls", type=int, default=8000)
    parser.add_argument("--only", choices=("turns", "jshost"), action="append")
    parser.add_argument("--child", choices=("turns", "jshost"), help=argparse.SUPPRESS)
    parser.add_argument("--package", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        # The tree under test comes from PYTHONPATH; bench/ itself would shadow its catalogue.
        sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != HERE]
    if args.child == "turns":
        print(json.dumps(measure_turns(args.turns, args.parallel)))
        return
    if args.child == "jshost":
        print(json.dumps(measure_jshost(args.calls, args.package)))
        return
    if args.old is None:
        parser.error("--old is required")

    trees = {"old": args.old.resolve(), "new": args.new.resolve()}
    kinds = args.only or ["turns", "jshost"]
    figures: dict[str, dict[str, list[float]]] = {"old": {}, "new": {}}
    print(f"compare_trees: {os.cpu_count()} cores, {args.rounds} rounds; old {trees['old']}")
    with tempfile.TemporaryDirectory(prefix="covel-compare-pkg-") as folder:
        package = bench_package(Path(folder))
        for round_ in range(args.rounds):
            order = ["old", "new"] if round_ % 2 == 0 else ["new", "old"]
            for name in order:
                for kind in kinds:
                    got = run_child(trees[name], kind, args, package)
                    for key, value in got.items():
                        figures[name].setdefault(key, []).append(value)
                    line = ", ".join(f"{k} {v:.1f}" for k, v in got.items())
                    print(f"round {round_ + 1} {name} {kind}: {line}", flush=True)

    print(f"\nmedians of {args.rounds} rounds          old        new    new/old")
    for key in figures["old"]:
        old = statistics.median(figures["old"][key])
        new = statistics.median(figures["new"][key])
        ratio = f"{new / old:6.3f}" if old else "     -"  # a window under one clock tick
        print(f"  {key:28} {old:9.1f}  {new:9.1f}    {ratio}")


if __name__ == "__main__":
    main()
