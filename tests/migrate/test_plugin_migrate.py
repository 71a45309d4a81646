"""plugin_migrate: the older-format corpus against golden diffs, then the loader, then again.

Each corpus/<name>/before/<id>/ is a package in Covel's previous manifest format, written in the
style of Covel's real ones; corpus/<name>/expected.diff is the reviewed diff of its migration.
Set MIGRATE_UPDATE_GOLDEN=1 to rewrite the golden files (then read them before committing).
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
from io import StringIO
from pathlib import Path

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from catalogue.manifest import load_package
from catalogue.manifest.migrate import CONTRACT_MISSING, REFUSED, migrate_apply, migrate_plan
from catalogue.manifest.types import thaw
from pluginhost.codecheck import package_code_try_load
from pluginhost.pool import author_code_consent

CORPUS = Path(__file__).parent / "corpus"
NAMES = sorted(p.name for p in CORPUS.iterdir() if (p / "before").is_dir())
CODE_SUFFIXES = {".js", ".mjs", ".ts", ".json"}


def _copy(name: str, tmp_path: Path) -> Path:
    source = next((CORPUS / name / "before").iterdir())
    target = tmp_path / source.name
    shutil.copytree(source, target)
    return target


def _snapshot(root: Path) -> dict[str, str]:
    return {
        p.relative_to(root).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(root.rglob("*"))
        if p.is_file()
    }


def test_the_corpus_is_there():
    assert len(NAMES) >= 3


@pytest.mark.parametrize("name", NAMES)
def test_older_format_package_is_refused_by_the_loader_before(name, tmp_path):
    package = _copy(name, tmp_path)
    result = load_package(package)
    assert not result.ok
    older = [i for i in result.errors if i.code == "older-format"]
    assert older, result.errors
    assert "plugin_migrate" in older[0].message


@pytest.mark.parametrize("name", NAMES)
def test_corpus_migrates_to_the_golden_diff_then_validates_then_is_idempotent(name, tmp_path):
    package = _copy(name, tmp_path)
    code_before = {k: v for k, v in _snapshot(package).items() if Path(k).suffix in CODE_SUFFIXES}
    plan = migrate_plan(package)
    assert not plan.refusals, [str(i) for i in plan.refusals]
    assert plan.changed
    golden = CORPUS / name / "expected.diff"
    if os.environ.get("MIGRATE_UPDATE_GOLDEN") == "1":
        golden.write_text(plan.diff(), encoding="utf-8")
    assert plan.diff() == golden.read_text(encoding="utf-8")
    # The plan already judged the migrated package on a scratch copy.
    assert plan.verdict is not None and plan.verdict.ok, [str(i) for i in plan.verdict.errors]

    migrate_apply(plan)
    result = load_package(package)
    assert result.ok, [str(i) for i in result.errors]
    assert not list(package.rglob("runtimes/*/PLUGIN.md"))
    code_after = {k: v for k, v in _snapshot(package).items() if Path(k).suffix in CODE_SUFFIXES}
    assert code_after == code_before  # code files are never touched

    # The untouched code still loads in the real host against the migrated manifest (the
    # author's own folder: community code, run contained, with the author's consent).
    with author_code_consent("plugin_migrate test"):
        verdict = package_code_try_load(result.manifest)
    assert verdict.ok, verdict.message

    again = migrate_plan(package)
    assert not again.refusals
    assert not again.changed, again.diff()
    assert again.ok


def test_comments_are_kept(tmp_path):
    package = _copy("story-tracker", tmp_path)
    before = (package / "runtimes/character-tracker/PLUGIN.md").read_text()
    migrate_apply(migrate_plan(package))
    after = (package / "runtimes/character-tracker/RUNTIME.md").read_text()
    for line in before.splitlines():
        if line.strip().startswith("#"):
            assert line.strip() in after


def test_the_migrated_fields_mean_the_same(tmp_path):
    package = _copy("story-tracker", tmp_path)
    migrate_apply(migrate_plan(package))
    result = load_package(package)
    runtimes = {rt.id: thaw(rt.data) for rt in result.manifest.runtimes}
    tracker = runtimes["character-tracker"]
    assert tracker["agent"]["reasoning"] is False
    assert tracker["agent"]["toolChoice"] == "required"
    assert tracker["agent"]["completion"] == {"require": "explicit", "afterTools": ["sync-cast"]}
    assert tracker["schedule"]["trigger"]["cooldownTurns"] == 1
    chronicle = runtimes["chronicle"]["schedule"]["detached"]
    assert chronicle == {"settle": True, "maxSettleWaitMs": 5000, "maxExecutionMs": 60000}
    summary = runtimes["summary"]["schedule"]
    assert summary["every"] == 3 and summary["trigger"]["startTurn"] == 3
    # The Chinese texts moved to locales/zh.yaml, where the loader finds them.
    assert "zh" in result.manifest.locales


def test_contract_requirements_are_reported_never_rewritten(tmp_path):
    package = _copy("story-tracker", tmp_path)
    plan = migrate_plan(package, provided={"narrative-engine@2": {"storyteller"}})
    reports = {(i.file, i.path): i.message for i in plan.contracts}
    assert all(i.code == CONTRACT_MISSING for i in plan.contracts)
    message = reports[("PLUGIN.md", "/requires/0")]
    assert "narrative-engine@1" in message and "narrative-engine@2 (from storyteller)" in message
    assert "world-ir-provider@1" in reports[("PLUGIN.md", "/requires/1")]
    assert ("runtimes/character-tracker/RUNTIME.md", "/schedule/needs/0/contract") in reports
    migrate_apply(plan)
    assert "narrative-engine@1" in (package / "PLUGIN.md").read_text()


def _write(root: Path, relative: str, text: str) -> None:
    path = root / relative
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")


BAD = {
    "unmappable-llm": (
        "runtimes/a/PLUGIN.md",
        "---\ntype: agent\nschedule:\n  stage: post-turn\nagent:\n  llm:\n    temperature: 0.2\n---\nHi.\n",
        "/agent/llm/temperature",
        "no-current-equivalent",
    ),
    "unknown-field": (
        "runtimes/a/PLUGIN.md",
        "---\ntype: agent\nsummaryFocus: [narrative]\nschedule:\n  stage: post-turn\n---\nHi.\n",
        "/summaryFocus",
        "no-current-equivalent",
    ),
    "broken-yaml": (
        "runtimes/a/PLUGIN.md",
        "---\ntype: agent\nschedule: [stage: post-turn\n---\nHi.\n",
        "",
        "yaml",
    ),
    "source-kind-disagrees": (
        "PLUGIN.md",
        "---\nid: bad\ntype: plugin\ndescription: x\ncontributes:\n  data:\n    n:\n      schema: ./s.json\n"
        "      accepts: [x@1]\n      authoring:\n        title: T\n        source:\n          kind: json\n"
        "          path: data/n.yaml\n---\n",
        "/contributes/data/n/authoring/source/kind",
        "source-kind-disagrees",
    ),
    "no-english": (
        "PLUGIN.md",
        "---\nid: bad\ntype: plugin\ndescription:\n  zh: 只有中文\n---\n",
        "/description",
        "text-without-english",
    ),
}


@pytest.mark.parametrize("case", sorted(BAD))
def test_bad_input_is_refused_with_file_path_and_rule_and_nothing_changes(case, tmp_path):
    relative, text, pointer, rule = BAD[case]
    root = tmp_path / "bad"
    if relative != "PLUGIN.md":
        _write(root, "PLUGIN.md", "---\nid: bad\ntype: plugin\ndescription: A package.\n---\n")
    _write(root, relative, text)
    _write(root, "schemas/x.json", "{}")
    before = _snapshot(root)
    plan = migrate_plan(root)
    assert plan.refusals and not plan.changes
    issue = plan.refusals[0]
    assert issue.code == REFUSED
    assert issue.file == relative
    assert issue.path == pointer
    assert rule in issue.message
    out = StringIO()
    with pytest.raises(CommandError) as raised:
        call_command("plugin_migrate", str(root), stdout=out)
    assert raised.value.returncode == 1
    assert relative in out.getvalue() and "cannot migrate" in out.getvalue()
    assert _snapshot(root) == before  # the package is untouched


def test_a_failure_while_writing_leaves_the_package_as_it_was(tmp_path):
    package = _copy("story-tracker", tmp_path)
    before = _snapshot(package)
    plan = migrate_plan(package)
    calls = []

    def flaky_replace(src: str, dst: str) -> None:
        calls.append(dst)
        if len(calls) == 3:
            raise OSError(28, "No space left on device")
        os.replace(src, dst)

    with pytest.raises(OSError):
        migrate_apply(plan, _replace=flaky_replace)
    assert len(calls) == 3
    assert _snapshot(package) == before
    assert not [p for p in package.rglob("*.migrate")]


def test_command_check_writes_nothing_and_prints_the_diff(tmp_path):
    package = _copy("fate-dice", tmp_path)
    before = _snapshot(package)
    out = StringIO()
    # Files would change: --check exits 1 (after printing the diff), so CI notices.
    with pytest.raises(CommandError) as raised:
        call_command("plugin_migrate", str(package), "--check", stdout=out)
    assert raised.value.returncode == 1 and "would change" in str(raised.value)
    text = out.getvalue()
    assert "+++ b/runtimes/roll/RUNTIME.md" in text
    assert "-type: plugin" in text and "+kind: plugin" in text
    assert "would change (--check)" in text
    assert "narrative-engine@1" in text  # the bundled storyteller provides @2 only
    assert _snapshot(package) == before


def test_command_writes_then_second_run_changes_nothing(tmp_path):
    package = _copy("scene-mood", tmp_path)
    out = StringIO()
    call_command("plugin_migrate", str(package), stdout=out)
    assert "migrated (1 file(s))" in out.getvalue()
    out = StringIO()
    call_command("plugin_migrate", str(package), "--json", stdout=out)
    document = json.loads(out.getvalue())
    assert document["ok"] is True and document["changed"] is False and document["written"] is False
    assert document["diff"] == ""
    # Nothing would change any more: --check passes.
    call_command("plugin_migrate", str(package), "--check", stdout=StringIO())


def test_command_json_reports_contracts_and_changes(tmp_path):
    package = _copy("fate-dice", tmp_path)
    out = StringIO()
    with pytest.raises(CommandError) as raised:
        call_command("plugin_migrate", str(package), "--check", "--json", stdout=out)
    assert raised.value.returncode == 1
    document = json.loads(out.getvalue())
    assert document["ok"] and document["changed"] and not document["written"]
    actions = {(c["action"], c["from"], c["to"]) for c in document["changes"]}
    assert ("rename", "runtimes/roll/PLUGIN.md", "runtimes/roll/RUNTIME.md") in actions
    assert ("create", None, "locales/zh.yaml") in actions
    contracts = {c["path"]: c for c in document["contracts"]}
    # narrative-engine@1 is provided by the bundled hub-narrative-v1 now; tabletop-check@1 by none.
    assert "/requires/0" not in contracts
    ledger = contracts["/io/inputs/tabletop/from/contract"]
    assert ledger["file"] == "runtimes/ledger/RUNTIME.md"
    assert "tabletop-check@1 is provided by no installed package" in ledger["message"]


def test_command_bad_arguments_exit_2(tmp_path):
    with pytest.raises(CommandError) as raised:
        call_command("plugin_migrate", str(tmp_path / "missing"))
    assert raised.value.returncode == 2


def test_a_symlinked_manifest_is_refused_and_nothing_is_read_through_it(tmp_path):
    outside = tmp_path / "secret.md"
    outside.write_text("---\ntype: agent\nsecret: hunter2\n---\n")
    root = tmp_path / "linky"
    _write(root, "PLUGIN.md", "---\nid: linky\ntype: plugin\ndescription: A package.\n---\n")
    (root / "runtimes" / "a").mkdir(parents=True)
    (root / "runtimes" / "a" / "PLUGIN.md").symlink_to(outside)
    plan = migrate_plan(root)
    assert not plan.changes
    (issue,) = plan.refusals
    assert issue.file == "runtimes/a/PLUGIN.md" and "[symlink]" in issue.message
    assert "hunter2" not in plan.diff()


def test_a_package_still_invalid_after_migration_is_written_and_exits_1(tmp_path):
    root = tmp_path / "halfway"
    _write(
        root,
        "PLUGIN.md",
        "---\nid: halfway\ntype: plugin\ndescription: A package.\ncontributes:\n  events:\n"
        "    - topic: a.b\n      schema: ./missing.json\n      description: An event.\n---\n",
    )
    out = StringIO()
    with pytest.raises(CommandError) as raised:
        call_command("plugin_migrate", str(root), stdout=out)
    assert raised.value.returncode == 1
    assert "does not pass validation" in out.getvalue()
    assert "missing.json" in out.getvalue()
    assert "kind: plugin" in (root / "PLUGIN.md").read_text()  # the format part is done
