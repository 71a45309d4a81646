"""Offline runtime cases dispatch lifecycle hooks as a live turn does (sessions.turns.turn_steps
over sessions/memory_store.py). The `warden` package is written here and runs in the real Node
host: its hooks veto a shouted turn (TurnStart), skip `hum` (PreRuntime), rewrite `sing`'s
output (PostRuntime), and, when the case's userSettings say `strict`, veto `sing`'s writes
(PreStateCommit); the offline case shows each of those outcomes."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from agent_helpers import run_command

HOOKS = """export default function register(covel) {
  covel.on("TurnStart", async (_ctx, p) =>
    String(p.playerMessage).includes("shout") ? { action: "abort", reason: "no shouting" } : { action: "continue" });
  covel.on("PreRuntime", async (_ctx, p) =>
    p.manifest.runtimeId === "warden/hum" ? { action: "abort", reason: "no humming" } : { action: "continue" });
  covel.on("PostRuntime", async (_ctx, p) =>
    p.result.runtime === "warden/sing"
      ? { action: "continue", replace: { result: { ...p.result, output: { sung: `(hooked) ${p.result.output.sung}` } } } }
      : { action: "continue" });
  covel.on("PreStateCommit", async (ctx) =>
    ctx.getOwnSettings().strict ? { action: "abort", reason: "strict: nothing is written" } : { action: "continue" });
}
"""
SING = """export default async function handler(ctx) {
  await ctx.pluginData.set("songs", "last", ctx.playerMessage);
  return { outcome: "success", value: { sung: ctx.playerMessage } };
}
"""
HUM = """export default async function handler(ctx) {
  await ctx.pluginData.set("songs", "hum", true);
  return { outcome: "success", value: { hummed: true } };
}
"""
CASES: list[dict[str, Any]] = [
    {
        "name": "hooks-shape-the-turn",
        "message": "We sing.",
        "expect": {
            "runtimeResults": [
                {"runtimeId": "sing", "status": "success"},
                {"runtimeId": "hum", "status": "skipped", "errorIncludes": "no humming"},
            ],
            "pluginData": [
                {"namespace": "songs", "key": "last", "equals": "We sing."},
                {"namespace": "songs", "key": "hum", "status": "absent"},
            ],
        },
    },
    {
        "name": "strict-vetoes-the-writes",
        "message": "We sing.",
        "userSettings": {"strict": True},
        "expect": {
            "runtimeResults": [
                {"runtimeId": "sing", "status": "failed", "errorIncludes": "hook-vetoed"}
            ],
            "pluginData": [{"namespace": "songs", "key": "last", "status": "absent"}],
        },
    },
    {
        "name": "a-shout-stops-the-turn",
        "message": "I shout.",
        "expect": {"pluginData": [{"namespace": "songs", "key": "last", "status": "absent"}]},
    },
]


def _write(root: Path, cases: list[dict[str, Any]]) -> Path:
    folder = root / "warden"
    data = {
        "id": "warden",
        "version": "1.0.0",
        "description": "The warden test package.",
        "contributes": {
            "hooks": ["TurnStart", "PreRuntime", "PostRuntime", "PreStateCommit"],
            "settings": [{"key": "strict", "type": "toggle", "label": "Strict", "default": False}],
        },
    }
    (folder / "server").mkdir(parents=True)
    (folder / "PLUGIN.md").write_text(f"---\n{json.dumps(data)}\n---\nTest.\n", encoding="utf-8")
    (folder / "server" / "index.js").write_text(HOOKS, encoding="utf-8")
    stage = {"schedule": {"stage": "post-turn"}, "function": {}}
    for name, code in (("sing", SING), ("hum", HUM)):
        sub = folder / "runtimes" / name
        sub.mkdir(parents=True)
        (sub / "RUNTIME.md").write_text(f"---\n{json.dumps(stage)}\n---\nRuntime {name}.\n")
        (sub / "handler.js").write_text(code, encoding="utf-8")
    (folder / "tests").mkdir()
    (folder / "tests" / "runtime-cases.json").write_text(json.dumps({"cases": cases}))
    return folder


def test_an_offline_case_runs_the_packages_lifecycle_hooks(tmp_path: Path):
    code, report, _ = run_command(str(_write(tmp_path, CASES)))
    assert code == 0, json.dumps(report, indent=2)
    shaped, strict, shout = (c["result"] for c in report["cases"])
    results = {r["runtimeId"]: r for r in shaped["runtimeResults"]}
    # PostRuntime rewrote the succeeded runtime's output; PreRuntime skipped the other.
    assert results["warden/sing"]["output"] == {"sung": "(hooked) We sing."}
    assert (results["warden/hum"]["status"], results["warden/hum"]["code"]) == (
        "skipped",
        "hook-aborted",
    )
    assert "The PreRuntime hook of warden aborted: no humming" in shaped["notes"]
    # The case's userSettings reach the hooks' ctx; PreStateCommit's veto drops the writer.
    vetoed = next(r for r in strict["runtimeResults"] if r["runtimeId"] == "warden/sing")
    assert (vetoed["status"], vetoed["code"]) == ("failed", "hook-vetoed")
    assert "strict: nothing is written" in vetoed["error"]
    assert strict["pluginData"] == {}
    # TurnStart's abort: no runtime ran, and the case says why.
    assert shout["runtimeResults"] == []
    assert (
        "no runtime ran: TurnStart hook of warden aborted the turn: no shouting" in shout["notes"]
    )


def test_a_case_that_ignores_a_hooks_veto_fails(tmp_path: Path):
    cases = json.loads(json.dumps(CASES))
    cases[0]["expect"]["runtimeResults"][1] = {"runtimeId": "hum", "status": "success"}
    cases[2]["expect"] = {"runtimeResults": [{"runtimeId": "sing", "status": "success"}]}
    code, report, _ = run_command(str(_write(tmp_path, cases)))
    assert code == 1
    failures = {c["name"]: c["result"].get("failures", []) for c in report["cases"]}
    assert any(
        "runtime hum ended skipped, expected success" in f for f in failures[cases[0]["name"]]
    )
    assert failures[cases[1]["name"]] == []
    assert any("runtime sing did not run" in f for f in failures[cases[2]["name"]])
