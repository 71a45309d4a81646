"""Helpers for agent runtime tests (imported by the test modules as agent_helpers): real packages, the real plugin host, the stand-in model.

`toolbox` is a small package written for these tests: one plugin tool (ring), two datasets
with different ops (cards: set/delete with a key field; counters: inc only), one event topic and
an agent runtime that names every kind of tool, deferring some.
"""

from __future__ import annotations

import json
import textwrap
from io import StringIO
from pathlib import Path
from typing import Any

from django.core.management import call_command

from agents.gateway import Endpoint
from agents.runtime import AgentRuntimeContext, OverlayCallbacks, OverlayData, run_agent_runtime
from agents.standin import StandInModel
from agents.tools import event_directory, service_providers
from catalogue.manifest.loader import load_package
from catalogue.manifest.types import Manifest
from sessions.operations import MISSING, TurnOverlay, datasets_of, proposal_ops

REPO = Path(__file__).resolve().parents[2]
PLUGINS = REPO / "plugins"

TOOLBOX_MANIFEST = """\
---
id: toolbox
version: 1.0.0
covel: ">=0.0.45"
description: A package for agent tool tests.
contributes:
  tools: [ring]
  events:
    - topic: toolbox.rang
      schema: ./schemas/rang.schema.json
      description: The bell was rung.
  datasets:
    cards:
      schema: ./schemas/card.schema.json
      key: id
      ops: [set, delete]
      description: Index cards.
    counters:
      schema: ./schemas/counter.schema.json
      ops: [inc]
runtime:
  schedule: {{ stage: post-turn }}
  agent:
    tools:
      builtin: [emit-event, create-notification, create-form, get-character]
      plugin: [ring]
      datasets:
        - cards
        - dataset: counters
          tools: [get, update]
      defer: {defer}
    loop: {{ maxSteps: 6 }}
---
Use the tools.
"""

RING_JS = """\
import { makeProposal } from "@covel/plugin-handlers-utils";

export default function makeRing({ tool, z, withPendingProposals, withModelView, ToolError }) {
  return tool({
    name: "ring",
    description: "Ring the bell a number of times and count the rings.",
    parameters: z.object({ times: z.number().int().min(1).max(3) }),
    async execute(params, context) {
      const row = await context.store?.getPluginData("counters", "rings");
      if (params.times === 3) throw new ToolError("too-loud", "Three rings wake the town.", { hint: "Ring once." });
      const proposal = makeProposal(context, new Date().toISOString(), "plugin.data",
        { namespace: "counters", key: "rings", ops: [{ op: "inc", by: params.times }] });
      return withModelView(withPendingProposals({ before: row?.value ?? 0 }, [proposal]),
        { summary: `Rang ${params.times}.` });
    },
  });
}
"""


def write_toolbox(root: Path, *, defer: str = "[cards-upsert]") -> Path:
    package = root / "toolbox"
    (package / "schemas").mkdir(parents=True)
    (package / "server").mkdir()
    (package / "tools").mkdir()
    (package / "PLUGIN.md").write_text(TOOLBOX_MANIFEST.format(defer=defer), encoding="utf-8")
    (package / "tools" / "ring.js").write_text(RING_JS, encoding="utf-8")
    (package / "server" / "index.js").write_text(
        'import makeRing from "../tools/ring.js";\n'
        "export default function register(covel) { covel.registerTool(makeRing(covel.toolkit)); }\n",
        encoding="utf-8",
    )
    schemas = {
        "card.schema.json": {
            "type": "object",
            "required": ["id", "text"],
            "additionalProperties": False,
            "properties": {
                "id": {"type": "string", "pattern": "^[a-z-]+$"},
                "text": {"type": "string", "maxLength": 40},
            },
        },
        "counter.schema.json": {"type": "integer", "minimum": 0},
        "rang.schema.json": {
            "type": "object",
            "required": ["times"],
            "properties": {"times": {"type": "integer", "minimum": 1}},
        },
    }
    for name, schema in schemas.items():
        (package / "schemas" / name).write_text(json.dumps(schema), encoding="utf-8")
    return package


def load(path: Path | str) -> Manifest:
    result = load_package(path, host_version="0.1.0")
    assert result.ok, [str(e) for e in result.errors]
    assert result.manifest is not None
    return result.manifest


class Session:
    """An in-memory session around one package: store, overlay, and the run's context."""

    def __init__(self, manifest: Manifest, *others: Manifest, store: dict | None = None) -> None:
        self.manifest = manifest
        self.active = [manifest, *others]
        self.store: dict[tuple[str, str, str], Any] = dict(store or {})
        self.overlay = TurnOverlay(
            load=lambda p, n, k: self.store.get((p, n, k), MISSING),
            lister=lambda p, n: {
                k: v for (pp, nn, k), v in self.store.items() if (pp, nn) == (p, n)
            },
            datasets={m.id: datasets_of(m) for m in self.active},
        )
        self.emitted: list[tuple[str, dict]] = []
        self.notices: list[dict] = []
        self.forms: list[dict] = []

    def context(self, runtime: str, **extra: Any) -> AgentRuntimeContext:
        fields: dict[str, Any] = dict(
            data=OverlayData(overlay=self.overlay, runtime=runtime),
            callbacks_for=lambda plugin: OverlayCallbacks(
                overlay=self.overlay, package=plugin, runtime=runtime
            ),
            player_message="I ring the bell.",
            events=event_directory(self.active),
            services=service_providers(self.active),
            emit=lambda topic, payload: self.emitted.append((topic, payload)),
            notify=self.notices.append,
            form=self.forms.append,
            tool_context={"turnNumber": 1},
            proposal_ops=proposal_ops,
        )
        fields.update(extra)
        return AgentRuntimeContext(**fields)

    def run(self, replies: list[dict], runtime_id: str | None = None, **extra: Any):
        runtime = self.manifest.runtime(runtime_id or self.manifest.id) or self.manifest.runtimes[0]
        with StandInModel(replies, exhausted_status=400) as model:
            endpoint = Endpoint(slot="plugin", base_url=model.base_url, model="stand-in")
            run = run_agent_runtime(
                manifest=self.manifest,
                runtime=runtime,
                context=self.context(runtime.qualified_id, **extra),
                endpoint=endpoint,
            )
        return run, model

    def commit(self) -> None:
        for runtime in {w.runtime for w in self.overlay.writes}:
            self.overlay.complete(runtime, succeeded=True)
        result = self.overlay.commit()
        assert result.ok, result.refusals
        for where, value in result.values.items():
            if value is MISSING:
                self.store.pop(where, None)
            else:
                self.store[where] = value


def call(name: str, args: dict | str, id: str = "tc") -> dict:
    return {
        "id": id,
        "name": name,
        "arguments": args if isinstance(args, str) else json.dumps(args),
    }


def tool_messages(request: dict) -> list[str]:
    return [m["content"] for m in request["messages"] if m["role"] == "tool"]


def offered(request: dict) -> list[str]:
    return [t["function"]["name"] for t in request.get("tools") or []]


def dedent(text: str) -> str:
    return textwrap.dedent(text)


def run_command(*args: str) -> tuple[int, dict | None, str]:
    """manage.py test_runtime in this process: (exit code, the JSON report or None, stderr)."""
    out, err = StringIO(), StringIO()
    code = 0
    try:
        call_command("test_runtime", *args, stdout=out, stderr=err)
    except SystemExit as exc:
        code = int(exc.code or 0)
    text = out.getvalue()
    return code, (json.loads(text) if text.strip() else None), err.getvalue()
