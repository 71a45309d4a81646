"""The sync with the real loader (catalogue.manifest.loader): the contract between the two."""

from __future__ import annotations

import pytest

from catalogue.models import Package, Runtime
from catalogue.services import package_content_hash, packages_sync

pytestmark = pytest.mark.django_db

NOTEBOOK = """---
version: 0.1.0
displayName: Notebook
description: Saves a brief note after narration.
tags: [mode:story, ui:view]
author:
  name: Jane Doe
  links:
    - { label: Discord, url: "https://example.com/community" }
requires: [narrative-engine@2]
contributes:
  tools: [save-note]
  data:
    notes:
      schema: ./schemas/note.schema.json
runtime:
  schedule: { stage: post-turn, detached: { settle: true, maxSettleWaitMs: 5000 } }
  agent:
    history: { maxTurns: 2 }
    finishWith: save-note
---
Call `save-note` one time with one fact that the narrative states.
"""


def test_a_real_package_and_a_broken_one(real_plugin_dirs, approval_calls):
    notebook = real_plugin_dirs.user / "notebook"
    (notebook / "schemas").mkdir(parents=True)
    (notebook / "PLUGIN.md").write_text(NOTEBOOK)
    (notebook / "schemas" / "note.schema.json").write_text('{"type": "object"}')
    (notebook / "server").mkdir()
    (notebook / "server" / "index.js").write_text(
        "export default function register(covel) { covel.registerTool('save-note', {}); }\n"
    )
    broken = real_plugin_dirs.bundled / "broken"
    broken.mkdir()
    (broken / "PLUGIN.md").write_text("---\nid: other\nkind: nonsense\n---\n")

    summary = packages_sync()
    rows = {p.package_id: p for p in Package.objects.all()}
    assert set(rows) == {"notebook", summary.invalid[0][0]}
    package = rows["notebook"]
    assert package.state == "loaded", package.errors
    assert package.trust == "community" and approval_calls == ["notebook"]
    tags = set(package.tags.values_list("tag", flat=True))
    assert (
        "mode:story" in tags and "cost:llm" in tags and "ui:view" not in tags
    )  # written ui:view dropped
    runtime = Runtime.objects.get(package=package)
    assert (runtime.stage, runtime.detached, runtime.settle, runtime.max_settle_wait_ms) == (
        "post-turn",
        True,
        True,
        5000,
    )
    assert package.content_hash == package_content_hash(path=notebook)
    bad = rows[summary.invalid[0][0]]
    assert (
        bad.state == "error"
        and bad.errors
        and all({"file", "path", "code", "message"} <= set(e) for e in bad.errors)
    )
    assert packages_sync().line().startswith("indexed 0, unchanged 2")
