"""A plugin tool's own timeoutMs in an agent run (covel-plugins-with-local-code.md, step 3:
"use timeoutMs for a per-call limit"): the call is cut off at that limit, not at the host's 30 s
default; the model reads why and the run goes on."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

from agent_helpers import Session, call, dedent, load, tool_messages

MANIFEST = """\
---
id: sluggard
version: 1.0.0
description: A package whose tool is slower than its own limit.
contributes:
  tools: [ponder]
runtime:
  schedule: { stage: post-turn }
  agent:
    loop: { maxSteps: 3 }
---
Ponder, then answer.
"""

ENTRY = """\
export default function register(covel) {
  const { tool, z } = covel.toolkit;
  covel.registerTool(tool({
    name: "ponder",
    description: "Think for a number of milliseconds.",
    timeoutMs: 250,
    parameters: z.object({ ms: z.number().int() }),
    async execute({ ms }) {
      await new Promise((resolve) => setTimeout(resolve, ms));
      return { pondered: ms };
    },
  }));
}
"""


def test_a_plugin_tool_past_its_timeout_ms_fails_that_call_and_the_model_reads_why(
    tmp_path: Path, settings: Any
):
    settings.COVEL_BUNDLED_PLUGINS_DIR = tmp_path  # a bundled package: this is not about approval
    root = tmp_path / "sluggard"
    (root / "server").mkdir(parents=True)
    (root / "PLUGIN.md").write_text(MANIFEST, encoding="utf-8")
    (root / "server" / "index.js").write_text(dedent(ENTRY), encoding="utf-8")
    session = Session(load(root))
    started = time.monotonic()
    run, model = session.run(
        [
            {"toolCalls": [call("ponder", {"ms": 5000}, "slow")]},
            {"toolCalls": [call("ponder", {"ms": 10}, "quick")]},
            {"content": "Done pondering."},
        ]
    )
    assert time.monotonic() - started < 4  # not the 5 s sleep, nor the 30 s default
    assert run.status == "success", run.error
    assert [c["ok"] for c in run.tool_calls] == [False, True]
    error = json.loads(tool_messages(model.requests[1])[0])["error"]
    assert "ponder" in error and "250 ms" in error and "plugin_timeout" in error
