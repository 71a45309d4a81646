"""plugin_migrate on the covel-plugins repository's format (covel-ai/covel-plugins): name,
pluginType, {zh, en} texts, outputKind, capabilities, undeclared hooks, contract ids with "/",
translations merged with what locales/ already holds, and missing files reported by the
migration itself. The golden diffs of the margin-note and tts-relay corpus packages are in
test_plugin_migrate.py; these tests check what the migrated fields mean and the refusals."""

from __future__ import annotations

import shutil
from io import StringIO
from pathlib import Path

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from catalogue.manifest import load_package
from catalogue.manifest.migrate import FILE_MISSING, REFUSED, migrate_apply, migrate_plan
from catalogue.manifest.migrate.hooks import registered_hooks
from catalogue.manifest.types import thaw

CORPUS = Path(__file__).parent / "corpus"


def copy(name: str, tmp_path: Path) -> Path:
    source = CORPUS / name / "before" / name
    target = tmp_path / name
    shutil.copytree(source, target)
    return target


def write(root: Path, relative: str, text: str) -> None:
    path = root / relative
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")


def test_a_hook_only_package_means_the_same_after(tmp_path):
    package = copy("margin-note", tmp_path)
    plan = migrate_plan(package)
    notes = [str(n) for n in plan.notes]
    assert any("server/index.js registers covel.on('PostContextAssembly')" in n for n in notes)
    assert any("pluginType: plugin is now kind: plugin" in n for n in notes)
    migrate_apply(plan)
    result = load_package(package)
    assert result.ok, [str(e) for e in result.errors]
    manifest = result.manifest
    assert manifest.id == "margin-note" and manifest.kind == "plugin"
    assert thaw(manifest.contributes["hooks"]) == ["PostContextAssembly"]
    assert "margin-note" in manifest.tags
    # The hand-written zh displayName is kept; the description's zh text joins it.
    zh = (package / "locales/zh.yaml").read_text(encoding="utf-8")
    assert zh.startswith("# Already translated by hand")
    assert "displayName: 页边便签" in zh and "description: 为叙事提示词" in zh
    assert "zh" in manifest.locales


def test_runtime_files_lose_name_and_pluginType_and_gain_visibility(tmp_path):
    package = copy("tts-relay", tmp_path)
    migrate_apply(migrate_plan(package))
    result = load_package(package)
    assert result.ok, [str(e) for e in result.errors]
    assert result.manifest.id == "tts-relay"  # from the folder: the root's name was a text map
    assert result.manifest.display_name == "TTS Relay"
    [narrate] = result.manifest.runtimes
    data = thaw(narrate.data)
    assert data["io"]["visibility"] == "system"
    assert data["io"]["output"]["contract"] == "tts-relay.audio@1"
    assert "tts-relay.audio@1" in thaw(result.manifest.data["contracts"])
    assert "speech-audio" in result.manifest.tags
    assert (package / "locales/zh-CN.yaml").is_file()


def test_a_translation_that_differs_is_refused_alone_and_nothing_is_written(tmp_path):
    package = copy("margin-note", tmp_path)
    write(package, "locales/zh.yaml", "PLUGIN.md:\n  displayName: 别的名字\n")
    plan = migrate_plan(package)
    [refusal] = plan.refusals
    assert refusal.file == "locales/zh.yaml" and refusal.path == "/PLUGIN.md/displayName"
    assert "'别的名字'" in refusal.message and "'页边便签'" in refusal.message
    assert "[locale-text-differs]" in refusal.message and refusal.code == REFUSED
    assert plan.changes == []


@pytest.mark.parametrize(
    "frontmatter, path, rule",
    [
        ("name: a/b\ndescription: x\n", "/name", "name-names-a-runtime"),
        ("name: a\nid: b\ndescription: x\n", "/name", "name-and-id"),
        ("id: a\npluginType: widget\ndescription: x\n", "/pluginType", "pluginType-unknown"),
        ("id: a\ndescription: x\noutputKind: loud\n", "/outputKind", "outputKind-unknown"),
        (
            "id: a\ndescription: x\ncapabilities: [narrative-engine]\n",
            "/capabilities/0",
            "capability-is-a-contract",
        ),
    ],
)
def test_what_has_no_current_equivalent_is_refused_with_the_fix(tmp_path, frontmatter, path, rule):
    root = tmp_path / "a"
    write(root, "PLUGIN.md", f"---\n{frontmatter}---\nBody.\n")
    plan = migrate_plan(root)
    assert plan.changes == []
    [refusal] = plan.refusals
    assert (refusal.file, refusal.path) == ("PLUGIN.md", path)
    assert f"[{rule}]" in refusal.message
    if rule == "capability-is-a-contract":
        assert "io.output.contract: narrative-engine@1" in refusal.message


def test_a_runtime_name_must_name_its_folder(tmp_path):
    root = tmp_path / "pkg"
    write(root, "PLUGIN.md", "---\nid: pkg\ndescription: x\n---\n")
    write(
        root,
        "runtimes/roll/PLUGIN.md",
        "---\nname: pkg/other\ndescription: x\nschedule:\n  stage: post-turn\n"
        "function:\n  handler: ./h.js\n---\n",
    )
    write(root, "runtimes/roll/h.js", "export default async () => ({ outcome: 'success' });\n")
    [refusal] = migrate_plan(root).refusals
    assert refusal.file == "runtimes/roll/PLUGIN.md" and refusal.path == "/name"
    assert "[name-disagrees-with-folder]" in refusal.message


def test_missing_files_are_the_migrations_own_findings(tmp_path):
    root = tmp_path / "pkg"
    write(
        root,
        "PLUGIN.md",
        "---\nname: pkg\ndescription: x\ncontributes:\n  events:\n    - topic: a.b\n"
        "      schema: ./schemas/gone.json\n      description: x\n---\n",
    )
    write(
        root,
        "runtimes/roll/PLUGIN.md",
        "---\nname: pkg/roll\ndescription: x\nschedule:\n  stage: post-turn\n"
        "function:\n  handler: ./handler.js\n---\n",
    )
    plan = migrate_plan(root)
    assert not plan.refusals
    found = {(f.file, f.path): f for f in plan.findings}
    assert set(found) == {
        ("PLUGIN.md", "/contributes/events/0/schema"),
        ("runtimes/roll/RUNTIME.md", "/function/handler"),
    }
    assert all(f.code == FILE_MISSING for f in plan.findings)
    assert (
        "./schemas/gone.json is not in the package"
        in found[("PLUGIN.md", "/contributes/events/0/schema")].message
    )
    out = StringIO()
    with pytest.raises(CommandError):
        call_command("plugin_migrate", str(root), "--check", stdout=out)
    assert "missing: runtimes/roll/RUNTIME.md:/function/handler" in out.getvalue()


def test_hooks_are_found_statically_through_imports_and_never_from_comments(tmp_path):
    root = tmp_path / "pkg"
    write(
        root,
        "server/index.js",
        'import { wire } from "../lib/wire.js";\n'
        "// covel.on('TurnStop', x) in a comment is not a registration\n"
        "export default function register(covel) { wire(covel); }\n",
    )
    write(
        root,
        "lib/wire.ts",
        "export function wire(covel: any) {\n"
        "  covel.on('PreToolUse', async () => ({ action: 'continue' }), { enforce: 'pre' });\n"
        '  covel.registerHook("SessionEnd", async () => ({}));\n'
        '  covel.on("not-an-event", () => {});\n'
        '  const url = "https://example.com/x"; covel.on("TurnStart", () => ({}));\n'
        "}\n",
    )
    write(root, "../outside.js", 'covel.on("SessionStart", () => {})\n')
    found = registered_hooks(root, "./server/index.js")
    assert found == [
        ("PreToolUse", "pre", "lib/wire.ts"),
        ("SessionEnd", None, "lib/wire.ts"),
        ("TurnStart", None, "lib/wire.ts"),
    ]
