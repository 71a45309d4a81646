"""manage.py test_runtime gives an agent the prompt.segment@1 segments a real turn would."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from agent_helpers import run_command

from agents.standin import StandInModel

MANIFEST = """\
---
id: hinter
version: 1.0.0
covel: ">=0.0.45"
description: An agent with prompt segments of its own.
entry: ./server/index.js
contributes:
  extensions:
    - point: prompt.segment@1
      id: hint
    - point: prompt.segment@1
      id: broken
runtime:
  schedule: { stage: post-turn }
  agent: {}
---
Write one line about the turn.
"""

ENTRY = """\
export default function (covel) {
  covel.provideExtension("prompt.segment@1", "hint", {
    handler: (input) => [{ id: "hint", content: `<hint>${input.playerMessage.length}</hint>`,
      position: "system", audience: "self", volatility: "turn" }],
  });
  covel.provideExtension("prompt.segment@1", "broken", {
    handler: () => { throw new Error("no hint today"); },
  });
}
"""


def test_an_offline_agent_reads_its_segments_and_a_failing_one_is_noted(
    tmp_path: Path, monkeypatch
):
    package = tmp_path / "hinter"
    (package / "server").mkdir(parents=True)
    (package / "PLUGIN.md").write_text(MANIFEST, encoding="utf-8")
    (package / "server" / "index.js").write_text(ENTRY, encoding="utf-8")
    (package / "tests").mkdir()
    case = {
        "name": "hints",
        "runtimeId": "hinter",
        "message": "I wait.",
        "llmResponses": [{"content": "A quiet turn.", "finishReason": "stop", "toolCalls": []}],
        "expect": {"runtimeResults": [{"runtimeId": "hinter", "status": "success"}]},
    }
    (package / "tests" / "runtime-cases.json").write_text(json.dumps({"cases": [case]}))
    models: list[Any] = []

    class Recording(StandInModel):
        def __enter__(self):
            models.append(self)
            return super().__enter__()

    monkeypatch.setattr("sessions.cases.StandInModel", Recording)
    code, report, _ = run_command(str(package))
    assert code == 0, json.dumps(report, indent=2)
    [request] = models[0].requests
    assert "<hint>7</hint>" in request["messages"][0]["content"]  # audience self: its own agent
    notes = report["cases"][0]["result"]["notes"]
    assert any(
        "prompt.segment@1 hinter/broken was skipped" in n and "no hint today" in n for n in notes
    ), notes
