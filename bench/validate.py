"""Benchmark of the package loader.

    .venv/bin/python bench/validate.py [-n 500] [--repeat 3] [--keep DIR]

Generates N realistic packages (several runtimes in runtimes/<id>/RUNTIME.md, tools, actions,
commands, settings, datasets, events, http permissions) in a temporary folder, validates all of
them with load_package, and prints packages/s next to the floor: parsing the same frontmatter
with ruamel.yaml's safe loader alone, without reading files, schemas or rules.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from ruamel.yaml import YAML  # noqa: E402

from catalogue.manifest import load_package  # noqa: E402
from catalogue.manifest.frontmatter import split_markdown  # noqa: E402

PLUGIN_MD = """---
id: {id}
version: 1.{n}.0
covel: ">=0.1.0 <1.0.0"
displayName: Bench package {n}
description: A generated package that keeps a ledger of items, moods and places.
tags: [mode:adventure, data:items]
author:
  name: Bench Author
  url: https://example.com/authors/bench
  links:
    - label: Community
      url: https://example.com/community
homepage: https://example.com/packages/{id}
license: MIT
requires: [narrative-engine@2]
contracts:
  ledger.view@1:
    schema: ./schemas/item.schema.json
permissions:
  http:
    - origin: https://api.example.com
      methods: [GET, POST]
contributes:
  tools: [add-item, drop-item, list-items]
  actions: [inspect, reset]
  commands:
    - name: items
      description: List the items.
      action: inspect
      arguments:
        - name: filter
          description: Only items whose name contains this.
        - name: words
          variadic: true
    - name: reset-items
      aliases: [wipe]
      description: Forget every item.
      action: reset
  events:
    - topic: item.added
      schema: ./schemas/item.schema.json
      description: An item was added to the ledger.
  settings:
    - key: verbosity
      type: select
      label: Verbosity
      default: short
      options:
        - {{value: short, label: Short}}
        - {{value: long, label: Long}}
    - key: limit
      type: integer
      label: Limit
      default: 20
      min: 1
      max: 100
    - key: enabled
      type: toggle
      label: Enabled
      default: true
  datasets:
    items:
      schema: ./schemas/item.schema.json
      key: id
      ops: [set, merge, inc]
  ui:
    right: [./ui/panel.json]
---
Shared notes of package {n}.
"""

RUNTIMES = {
    "collect": """---
description: Records the items the story hands out.
schedule:
  stage: post-turn
  detached: {{settle: true, maxSettleWaitMs: 30000}}
io:
  inputs:
    narrative:
      from: {{contract: narrative-engine@2}}
      select: /narrativeOutput
  output:
    schema: ./schemas/item.schema.json
    recordAs: last-items
agent:
  history: {{maxTurns: 2}}
  finishWith: add-item
  tools:
    plugin: [add-item, drop-item]
    datasets: [{{dataset: items, tools: [get, upsert, update]}}]
---
Read the narrative of this turn and record every item the player receives ({n}).
""",
    "audit": """---
schedule:
  stage: audit
  needs: [{{runtime: "{id}/collect"}}]
io:
  inputs:
    last:
      from: {{runtime: "{id}/collect"}}
      scope: committed
      recordAs: last-items
function:
  timeoutMs: 30000
  tools: {{plugin: [list-items]}}
---
""",
    "inspect": """---
schedule:
  trigger: {{type: manual}}
  background: true
io:
  payloadSchema: ./schemas/item.schema.json
agent:
  tools: {{plugin: [list-items]}}
---
Describe the items on request.
""",
}

SCHEMA = '{"type": "object", "required": ["id"], "properties": {"id": {"type": "string"}}}'


def generate(root: Path, count: int) -> list[Path]:
    folders = []
    for n in range(count):
        package_id = f"bench-{n:04d}"
        folder = root / package_id
        (folder / "schemas").mkdir(parents=True)
        (folder / "server").mkdir()
        (folder / "ui").mkdir()
        (folder / "PLUGIN.md").write_text(PLUGIN_MD.format(id=package_id, n=n), encoding="utf-8")
        (folder / "schemas" / "item.schema.json").write_text(SCHEMA, encoding="utf-8")
        (folder / "server" / "index.js").write_text(
            "export default function register() {}\n", encoding="utf-8"
        )
        (folder / "ui" / "panel.json").write_text("{}", encoding="utf-8")
        for runtime_id, text in RUNTIMES.items():
            runtime_dir = folder / "runtimes" / runtime_id
            runtime_dir.mkdir(parents=True)
            (runtime_dir / "RUNTIME.md").write_text(
                text.format(id=package_id, n=n), encoding="utf-8"
            )
        (folder / "runtimes" / "audit" / "handler.js").write_text(
            "export default () => ({})\n", encoding="utf-8"
        )
        folders.append(folder)
    return folders


def frontmatter_texts(folders: list[Path]) -> list[str]:
    texts = []
    for folder in folders:
        for path in [folder / "PLUGIN.md", *sorted((folder / "runtimes").glob("*/RUNTIME.md"))]:
            text = path.read_text(encoding="utf-8")
            texts.append(text.split("---\n", 2)[1])
    return texts


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "-n", "--count", type=int, default=500, help="number of packages (default 500)"
    )
    parser.add_argument(
        "--repeat", type=int, default=3, help="rounds; the best is kept (default 3)"
    )
    parser.add_argument("--keep", type=Path, help="generate into this folder and keep it")
    args = parser.parse_args()

    with tempfile.TemporaryDirectory(prefix="covel-bench-") as temporary:
        root = args.keep or Path(temporary)
        root.mkdir(parents=True, exist_ok=True)
        folders = generate(root, args.count)
        # Warm-up: compile the validators once, as a long-running process would have.
        first = load_package(folders[0])
        if not first.ok:
            print("the generated package is invalid:", *first.errors, sep="\n  ")
            return 1

        texts = frontmatter_texts(folders)
        yaml = YAML(typ="safe", pure=True)
        # Best of several rounds, interleaved: the machine is shared, and the minimum is the
        # figure least disturbed by other processes.
        elapsed = floor = ours = float("inf")
        failed: list[object] = []
        for _ in range(args.repeat):
            started = time.perf_counter()
            results = [load_package(folder) for folder in folders]
            elapsed = min(elapsed, time.perf_counter() - started)
            failed = [r for r in results if not r.ok]

            started = time.perf_counter()
            for text in texts:
                yaml.load(text)
            floor = min(floor, time.perf_counter() - started)

            started = time.perf_counter()
            for text in texts:
                split_markdown(f"---\n{text}---\n".encode(), "PLUGIN.md")
            ours = min(ours, time.perf_counter() - started)

    count = len(folders)
    print(
        f"packages:               {count} ({len(texts)} manifest files, {len(RUNTIMES)} runtimes"
        f" each), best of {args.repeat} rounds"
    )
    print(f"invalid:                {len(failed)}")
    print(
        f"load_package:           {elapsed:.3f} s  = {count / elapsed:,.0f} packages/s ({elapsed / count * 1000:.2f} ms each)"
    )
    print(f"YAML parse alone:       {floor:.3f} s  = {count / floor:,.0f} packages/s (the floor)")
    print(f"our safe YAML reader:   {ours:.3f} s  (compose + own construction, alias/tag checks)")
    print(f"ratio load/YAML floor:  {elapsed / floor:.2f}x")
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
