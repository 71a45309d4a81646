"""manage.py plugin_extract: write-back with round-trip YAML, --check, --json and exit codes."""

from __future__ import annotations

import difflib
import io
import json
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

REPO = Path(__file__).resolve().parents[2]

MANIFEST = """---
# The notebook package. Keep this comment.
id: notebook
version: 0.1.0
description: Saves a brief note after narration.   # trailing comment stays
requires: [narrative-engine@2]
contributes:
  tools: [save-note, old-tool]  # tools comment
  commands:
    - name: note
      description: List the saved notes.
      action: inspect-note
  data:
    notes:
      schema: ./schemas/note.schema.json
runtime:
  schedule: { stage: post-turn }
---
Read `runtime-inputs.narrative.value`.

Call `save-note` one time.   
"""

ENTRY = """
export default function register(covel) {
  const { tool, z } = covel.toolkit;
  const t = (name) => tool({ name, description: name, parameters: z.object({}), async execute() { return 1; } });
  covel.registerTool(t("save-note"));
  covel.registerTool(t("list-notes"));
  covel.registerTool(t("save-note"));
  covel.registerRpc("inspect-note", async () => 1);
  covel.registerService({ name: "s1", contract: "notes-read@1", handler: async () => 1 });
  covel.registerService({ name: "s2", contract: "notes-tool@1", modelFacing: true, description: "d", input: z.object({}), handler: async () => 1 });
  covel.registerService({ name: "s3", contract: "notes-write@1", access: "write", handler: async () => 1 });
  covel.on("TurnStart", async () => ({ action: "continue" }));
  covel.on("PreStateCommit", async () => ({ action: "continue" }), { enforce: "pre" });
  covel.on("TurnStart", async () => ({ action: "continue" }));
  covel.registerFormValidator("point-buy", () => undefined);
  covel.provideExtension("prompt.segment@1", "notes", {});
}
"""


@dataclass
class Result:
    returncode: int
    stdout: str
    stderr: str


def run(*args: str) -> Result:
    """The command in-process (fast); see test_the_command_line_exit_codes for the real CLI."""
    out, err = io.StringIO(), io.StringIO()
    try:
        call_command("plugin_extract", *args, stdout=out, stderr=err)
        code = 0
    except CommandError as exc:
        code = exc.returncode
        err.write(str(exc))
    return Result(code, out.getvalue(), err.getvalue())


def cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "manage.py", "plugin_extract", *args],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=60,
    )


@pytest.fixture
def package(tmp_path: Path) -> Path:
    root = tmp_path / "notebook"
    (root / "server").mkdir(parents=True)
    (root / "PLUGIN.md").write_text(MANIFEST)
    (root / "server" / "index.js").write_text(ENTRY)
    return root


def test_it_writes_the_six_lists_and_keeps_comments_fields_and_body(package: Path):
    before = (package / "PLUGIN.md").read_text()
    result = run(str(package))
    assert result.returncode == 0, result.stderr
    after = (package / "PLUGIN.md").read_text()
    diff = [
        line
        for line in difflib.unified_diff(before.splitlines(), after.splitlines(), lineterm="", n=0)
        if line[:1] in "+-" and not line.startswith(("+++", "---"))
    ]
    assert diff == [
        "-  tools: [save-note, old-tool]  # tools comment",
        "+  tools: [save-note, list-notes]  # tools comment",
        "+  actions: [inspect-note]",
        "+  services:",
        "+    - notes-read@1",
        "+    - {contract: notes-tool@1, modelFacing: true}",
        "+    - {contract: notes-write@1, access: write}",
        "+  forms: [point-buy]",
        "+  hooks:",
        "+    - TurnStart",
        "+    - {event: PreStateCommit, enforce: pre}",
    ]
    assert after.endswith(
        "---\nRead `runtime-inputs.narrative.value`.\n\nCall `save-note` one time.   \n"
    )
    assert "Updated PLUGIN.md" in result.stdout
    assert "  - old-tool" in result.stdout and "  + list-notes" in result.stdout
    # Extensions and commands are reported, never rewritten.
    assert "contributes.extensions is not rewritten" in result.stdout
    assert "prompt.segment@1/notes" in result.stdout
    assert "contributes.commands (1) is maintained by hand" in result.stdout
    # A second run finds nothing to do.
    again = run(str(package))
    assert again.returncode == 0
    assert again.stdout.startswith("Declarations are in sync.")
    assert (package / "PLUGIN.md").read_text() == after


def test_check_writes_nothing_shows_drift_and_exits_1(package: Path):
    before = (package / "PLUGIN.md").read_text()
    result = run(str(package), "--check")
    assert result.returncode == 1
    assert (package / "PLUGIN.md").read_text() == before
    out = result.stdout
    assert "contributes.tools:\n  - old-tool\n  + list-notes" in out
    assert "contributes.hooks:\n  + TurnStart\n  + PreStateCommit (pre)" in out
    assert "out of sync" in out


def test_order_and_spelling_changes_are_described_separately(package: Path):
    text = (
        (package / "PLUGIN.md")
        .read_text()
        .replace(
            "  tools: [save-note, old-tool]  # tools comment",
            "  tools: [list-notes, save-note]\n  actions: [inspect-note]\n  forms: [point-buy]\n"
            "  services: [notes-read@1, {contract: notes-tool@1, modelFacing: true, access: read}, {contract: notes-write@1, access: write}]\n"
            "  hooks: [TurnStart, {event: PreStateCommit, enforce: pre}]",
        )
    )
    (package / "PLUGIN.md").write_text(text)
    result = run(str(package), "--check")
    assert result.returncode == 1
    assert "  - " not in result.stdout and "  + " not in result.stdout
    assert "contributes.tools: order differs from registration order" in result.stdout
    assert "contributes.services: spelling differs for notes-tool@1 (modelFacing)" in result.stdout


def test_json_emits_extracted_and_drift(package: Path):
    result = run(str(package), "--check", "--json")
    assert result.returncode == 1
    data = json.loads(result.stdout)
    assert data["extracted"]["tools"] == ["save-note", "list-notes"]
    assert data["extracted"]["hooks"] == [
        "TurnStart",
        {"event": "PreStateCommit", "enforce": "pre"},
    ]
    assert data["extracted"]["extensions"] == ["prompt.segment@1/notes"]
    assert data["drift"]["tools"] == {
        "removed": ["old-tool"],
        "added": ["list-notes"],
        "reordered": False,
        "respelled": [],
    }
    assert set(data["drift"]) == {"tools", "actions", "services", "forms", "hooks"}
    assert data["written"] is False


def test_empty_lists_are_removed(package: Path):
    (package / "server" / "index.js").write_text(
        "export default function register(covel) { covel.registerRpc('inspect-note', async () => 1); }\n"
    )
    assert run(str(package)).returncode == 0
    text = (package / "PLUGIN.md").read_text()
    assert "tools:" not in text
    assert "  actions: [inspect-note]" in text or "  actions:\n    - inspect-note" in text


def test_a_localized_manifest_with_these_lists_is_reported_and_left_alone(package: Path):
    localized = (
        "---\ndescription: Notes.\ncontributes:\n  tools: [save-note]\n---\nLocalized body.\n"
    )
    (package / "PLUGIN.zh-CN.md").write_text(localized)
    result = run(str(package))
    assert result.returncode == 0
    assert "PLUGIN.zh-CN.md declares contributes.tools" in result.stdout
    assert (package / "PLUGIN.zh-CN.md").read_text() == localized


@pytest.mark.parametrize(
    ("entry", "message"),
    [
        (
            "export default function register() { throw new Error('factory exploded'); }\n",
            "factory exploded",
        ),
        (
            "export default async function register(covel) { await covel.http.fetch('https://example.org/'); }\n",
            "covel.http",
        ),
        (
            "export default async function register(covel) { try { await covel.http.fetch('https://x.org'); } catch {} }\n",
            "covel.http",
        ),
        ("import fs from 'node:fs';\nexport default function register() {}\n", 'import "node:fs"'),
    ],
)
def test_extraction_errors_exit_1_and_write_nothing(package: Path, entry: str, message: str):
    before = (package / "PLUGIN.md").read_text()
    (package / "server" / "index.js").write_text(entry)
    result = run(str(package))
    assert result.returncode == 1
    assert message in result.stderr
    assert "Nothing was written." in result.stderr
    assert (package / "PLUGIN.md").read_text() == before


def test_an_entry_path_escaping_the_package_is_not_run(package: Path, tmp_path: Path):
    marker = tmp_path / "ran.txt"
    (tmp_path / "evil.js").write_text(
        f"import fs from 'node:fs'; fs.writeFileSync({str(marker)!r}, 'x');\nexport default () => {{}};\n"
    )
    text = (package / "PLUGIN.md").read_text().replace("requires:", "entry: ../evil.js\nrequires:")
    (package / "PLUGIN.md").write_text(text)
    result = run(str(package))
    assert result.returncode == 1
    assert "escapes the package folder" in result.stderr
    assert not marker.exists()
    assert (package / "PLUGIN.md").read_text() == text


def test_executable_frontmatter_prevents_write_back(package: Path):
    text = (
        (package / "PLUGIN.md")
        .read_text()
        .replace("version: 0.1.0", "version: !!python/object/apply:os.system ['true']")
    )
    (package / "PLUGIN.md").write_text(text)
    result = run(str(package))
    assert result.returncode == 1
    assert "PLUGIN.md" in result.stderr
    assert (package / "PLUGIN.md").read_text() == text


@pytest.mark.parametrize("args", [["/no/such/folder"], [], ["--bogus"]])
def test_invalid_arguments_exit_2(args: list[str]):
    result = cli(*args)
    assert result.returncode == 2


def test_the_command_line_exit_codes(package: Path):
    drift = cli(str(package), "--check")
    assert drift.returncode == 1
    assert "+ list-notes" in drift.stdout
    assert cli(str(package)).returncode == 0
    in_sync = cli(str(package), "--check")
    assert (in_sync.returncode, in_sync.stdout.splitlines()[0]) == (0, "Declarations are in sync.")


def test_an_empty_list_already_written_is_removed_too(package: Path):
    # "Empty list keys are removed": also the ones the author wrote, not only those emptied now.
    text = (
        (package / "PLUGIN.md")
        .read_text()
        .replace(
            "  tools: [save-note, old-tool]  # tools comment",
            "  tools: [save-note, old-tool]  # tools comment\n  wires: []\n  forms:",
        )
    )
    (package / "PLUGIN.md").write_text(text)
    check = run(str(package), "--check", "--json")
    assert check.returncode == 1
    drift = json.loads(check.stdout)["drift"]
    assert drift["wires"] == {
        "removed": [],
        "added": [],
        "reordered": False,
        "respelled": ["(empty list removed)"],
    }
    assert run(str(package)).returncode == 0
    after = (package / "PLUGIN.md").read_text()
    assert "wires" not in after
    assert "  forms: [point-buy]" in after
    again = run(str(package), "--check")
    assert (again.returncode, again.stdout.splitlines()[0]) == (0, "Declarations are in sync.")


def test_an_empty_list_is_removed_even_when_nothing_else_drifts(package: Path):
    assert run(str(package)).returncode == 0  # in sync first
    synced = (package / "PLUGIN.md").read_text()
    (package / "PLUGIN.md").write_text(
        synced.replace("  actions: [inspect-note]\n", "  actions: [inspect-note]\n  wires: []\n")
    )
    check = run(str(package), "--check")
    assert check.returncode == 1
    assert "contributes.wires: empty list removed" in check.stdout
    assert run(str(package)).returncode == 0
    assert (package / "PLUGIN.md").read_text() == synced


def test_a_spelling_or_order_change_next_to_additions_is_still_described(package: Path):
    text = (
        (package / "PLUGIN.md")
        .read_text()
        .replace(
            "  tools: [save-note, old-tool]  # tools comment",
            "  tools: [list-notes, save-note, old-tool]\n"
            "  services: [{contract: notes-read@1, access: read}]",
        )
    )
    (package / "PLUGIN.md").write_text(text)
    result = run(str(package), "--check")
    assert result.returncode == 1
    out = result.stdout
    assert (
        "contributes.services:\n  + notes-tool@1 (modelFacing)\n  + notes-write@1 (access: write)"
        in out
    )
    assert "contributes.tools:\n  - old-tool" in out
    assert "Order or spelling only:" in out
    assert "contributes.services: spelling differs for notes-read@1" in out
    assert "contributes.tools: order differs from registration order" in out
    data = json.loads(run(str(package), "--check", "--json").stdout)
    assert data["drift"]["services"]["respelled"] == ["notes-read@1"]
    assert data["drift"]["services"]["added"] == [
        "notes-tool@1 (modelFacing)",
        "notes-write@1 (access: write)",
    ]
    assert data["drift"]["tools"] == {
        "removed": ["old-tool"],
        "added": [],
        "reordered": True,
        "respelled": [],
    }
