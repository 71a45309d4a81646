"""test_runtime runs the session's own turn steps over memory (sessions/memory_store.py): what a
real turn does, an offline case does too. The `keeper` package is written here and runs in the
real Node host: `keeper` has a guard that skips it when the player says "hush", calls its
package's `scribe` through ctx.recursiveCall, and a detached `tally` runs after the commit."""

from __future__ import annotations

import json
from pathlib import Path

from agent_helpers import run_command

KEEPER = """export default async function handler(ctx) {
  await ctx.pluginData.set("notes", "keeper", ctx.playerMessage);
  const nested = await ctx.recursiveCall({ manualTrigger: { runtimeId: "scribe", payload: { tag: "kept" } } });
  return { outcome: "success", value: { nested } };
}
"""
GUARD = """export default async function guard(ctx) {
  if (String(ctx.playerMessage).includes("hush")) return { skip: true, reason: "the player asked for quiet" };
  return { skip: false };
}
"""
SCRIBE = """export default async function handler(ctx) {
  const seen = await ctx.pluginData.get("notes", "keeper");
  await ctx.pluginData.set("notes", "scribe", { seen, tag: ctx.manualPayload.tag, depth: ctx.recursionDepth });
  return { outcome: "success", value: { depth: ctx.recursionDepth } };
}
"""
TALLY = """export default async function handler(ctx) {
  const before = (await ctx.pluginData.get("tally", "runs")) ?? 0;
  await ctx.pluginData.set("tally", "runs", before + 1);
  return { outcome: "success", value: { heard: ctx.playerMessage } };
}
"""


def _write(root: Path) -> Path:
    folder = root / "keeper"
    data = {"id": "keeper", "version": "1.0.0", "description": "The keeper test package."}
    folder.mkdir()
    (folder / "PLUGIN.md").write_text(f"---\n{json.dumps(data)}\n---\nTest.\n", encoding="utf-8")
    runtimes = {
        "keeper": (
            {"schedule": {"stage": "pre-turn"}, "guard": "./guard.js", "function": {}},
            KEEPER,
        ),
        "scribe": ({"schedule": {"trigger": {"type": "manual"}}, "function": {}}, SCRIBE),
        "tally": (
            {
                "schedule": {"stage": "post-turn", "detached": {"maxExecutionMs": 20000}},
                "function": {},
            },
            TALLY,
        ),
    }
    for name, (runtime, code) in runtimes.items():
        sub = folder / "runtimes" / name
        sub.mkdir(parents=True)
        (sub / "RUNTIME.md").write_text(f"---\n{json.dumps(runtime)}\n---\nRuntime {name}.\n")
        (sub / "handler.js").write_text(code, encoding="utf-8")
    (folder / "runtimes" / "keeper" / "guard.js").write_text(GUARD, encoding="utf-8")
    cases = [
        {
            "name": "keeps-and-nests",
            "message": "keep this",
            "expect": {
                "runtimeResults": [
                    {"runtimeId": "keeper", "status": "success"},
                    {"runtimeId": "tally", "status": "success"},
                ],
                "pluginData": [
                    {"namespace": "notes", "key": "scribe", "field": "depth", "equals": 1},
                    {"namespace": "tally", "key": "runs", "equals": 1},
                ],
            },
        },
        {
            "name": "the-guard-says-no",
            "message": "hush now",
            "expect": {
                "runtimeResults": [
                    {
                        "runtimeId": "keeper",
                        "status": "skipped",
                        "errorIncludes": "the player asked for quiet",
                    }
                ],
                "pluginData": [{"namespace": "notes", "key": "keeper", "status": "absent"}],
            },
        },
    ]
    (folder / "tests").mkdir()
    (folder / "tests" / "runtime-cases.json").write_text(json.dumps({"cases": cases}))
    return folder


def test_an_offline_case_runs_guards_nested_calls_and_detached_jobs(tmp_path: Path):
    code, report, _ = run_command(str(_write(tmp_path)))
    assert code == 0, json.dumps(report, indent=2)
    kept, hushed = report["cases"]
    results = {r["runtimeId"]: r for r in kept["result"]["runtimeResults"]}
    # The detached runtime ran after the turn's commit (the core storyteller's included), as
    # a worker's background turn would.
    assert list(results)[0] == "keeper/keeper" and list(results)[-1] == "keeper/tally"
    assert results["keeper/keeper"]["output"] == {
        "nested": {"outcome": "success", "value": {"depth": 1}}
    }
    notes = {row["key"]: row["value"] for row in kept["result"]["pluginData"]["notes"]}
    assert notes == {
        "keeper": "keep this",
        "scribe": {"seen": "keep this", "tag": "kept", "depth": 1},
    }
    # The guard ran offline (the old mock turn ran none) and its reason is the skip's.
    [skipped, *_] = hushed["result"]["runtimeResults"]
    assert (skipped["status"], skipped["code"]) == ("skipped", "guard-skipped")
    assert "the player asked for quiet" in skipped["error"]


def test_a_case_expecting_the_guarded_runtime_to_run_fails(tmp_path: Path):
    folder = _write(tmp_path)
    cases_file = folder / "tests" / "runtime-cases.json"
    cases = json.loads(cases_file.read_text())["cases"]
    cases[1]["expect"]["runtimeResults"][0] = {"runtimeId": "keeper", "status": "success"}
    cases_file.write_text(json.dumps({"cases": cases}))
    code, report, _ = run_command(str(folder))
    assert code == 1
    failed = next(c for c in report["cases"] if c["name"] == "the-guard-says-no")
    assert failed["status"] == "failed"
    assert any("ended skipped, expected success" in f for f in failed["result"]["failures"])
