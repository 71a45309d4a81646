"""migrate_plan: what plugin_migrate would do to a package (reads only, never raises)."""

from __future__ import annotations

import os
import re
import shutil
import tempfile
from collections.abc import Mapping
from pathlib import Path

from ruamel.yaml.comments import CommentedMap

from catalogue.manifest.loader import HOST_VERSION, load_package
from catalogue.manifest.migrate import covel_plugins
from catalogue.manifest.migrate.contracts import _report_contracts
from catalogue.manifest.migrate.docs import _Ctx, _Doc, _read_doc
from catalogue.manifest.migrate.files import report_missing
from catalogue.manifest.migrate.locales import _fold_texts, _locale_changes
from catalogue.manifest.migrate.model import (
    _VARIANT,
    PLUGIN_FILE,
    REFUSED,
    RUNTIME_FILE,
    RUNTIMES_DIR,
    FileChange,
    Plan,
    _Refused,
)
from catalogue.manifest.migrate.previous import _migrate_root, _migrate_runtime
from catalogue.manifest.types import Issue, LoadResult

# ------------------------------------------------------------------ the plan


def migrate_plan(
    path: str | os.PathLike[str],
    *,
    provided: Mapping[str, set[str]] | None = None,
    host_version: str = HOST_VERSION,
) -> Plan:
    """What plugin_migrate would do to the package at path. Reads only; never raises.

    provided maps each contract the hub's installed packages provide to their ids; the
    package's requirements outside it are reported (None: no report).
    """
    root = Path(os.path.abspath(path))
    plan = Plan(root=root, package_id=root.name)
    if not (root / PLUGIN_FILE).is_file():
        plan.refusals.append(
            Issue(PLUGIN_FILE, "", REFUSED, "the package has no PLUGIN.md at its root")
        )
        return plan
    try:
        _build(plan, provided, host_version)
    except _Refused as exc:
        plan.refusals.append(Issue(PLUGIN_FILE, "", REFUSED, str(exc)))
    if plan.refusals:
        plan.changes = []
    return plan


def _manifest_files(root: Path, plan: Plan) -> list[tuple[str, str]]:
    """(current path, path after migration) of every manifest file."""
    files = [(PLUGIN_FILE, PLUGIN_FILE)]
    runtimes = root / RUNTIMES_DIR
    if runtimes.is_dir():
        for child in sorted(runtimes.iterdir()):
            if not child.is_dir() or child.name.startswith("."):
                continue
            rel = f"{RUNTIMES_DIR}/{child.name}"
            old, new = child / PLUGIN_FILE, child / RUNTIME_FILE
            if old.is_file() and new.exists():
                plan.refusals.append(
                    Issue(
                        f"{rel}/{PLUGIN_FILE}",
                        "",
                        REFUSED,
                        f"{rel} has both PLUGIN.md and RUNTIME.md; keep one [runtime-file-twice]",
                    )
                )
            elif old.is_file():
                files.append((f"{rel}/{PLUGIN_FILE}", f"{rel}/{RUNTIME_FILE}"))
            elif new.is_file():
                files.append((f"{rel}/{RUNTIME_FILE}", f"{rel}/{RUNTIME_FILE}"))
            for entry in sorted(child.iterdir()):
                match = _VARIANT.match(entry.name)
                if match:
                    target = f"{rel}/RUNTIME.{match.group(1)}.md"
                    if (root / target).exists():
                        plan.refusals.append(
                            Issue(
                                f"{rel}/{entry.name}",
                                "",
                                REFUSED,
                                f"{target} exists too; keep one [runtime-file-twice]",
                            )
                        )
                    else:
                        files.append((f"{rel}/{entry.name}", target))
    return files


def _build(plan: Plan, provided: Mapping[str, set[str]] | None, host_version: str) -> None:
    root = plan.root
    files = _manifest_files(root, plan)
    translations: dict[str, dict[str, CommentedMap]] = {}
    docs: list[_Doc] = []
    root_doc: _Doc | None = None
    for old_path, new_path in files:
        doc = _read_doc(root, old_path, new_path, plan)
        if doc is None:
            continue
        docs.append(doc)
        if old_path != new_path:
            plan.notes.append(Issue(new_path, "", "migrated", f"{old_path} is now {new_path}"))
        if re.search(r"\.[a-z]{2,3}(?:-[A-Za-z0-9]{2,8})*\.md$", new_path):
            continue  # a locale variant carries only text
        ctx = _Ctx(plan, doc, translations)
        if new_path == PLUGIN_FILE:
            root_doc = doc
            _migrate_root(ctx)
            covel_plugins.migrate_package(ctx)
            covel_plugins.declare_hooks(ctx, root)
            written = doc.data.get("id")
            if isinstance(written, str) and written:
                plan.package_id = written
        else:
            _migrate_runtime(ctx, doc.data, "")
            had_labels = "capabilities" in doc.data
            root_data = root_doc.data if root_doc is not None else None
            covel_plugins.migrate_runtime_file(ctx, new_path.split("/")[1], root_data)
            if had_labels and root_doc is not None:
                root_doc.changed = True  # the labels became tags of the package
        try:
            _fold_texts(ctx, doc.data, "", None)
        except _Refused as exc:
            ctx.refuse("", "text-unmappable", str(exc))
    if plan.refusals:
        return
    for doc in docs:
        report_missing(plan, doc.new_path, doc.data)
    for doc in docs:
        text = doc.text()
        if text != doc.raw or doc.old_path != doc.new_path:
            plan.changes.append(FileChange(doc.old_path, doc.new_path, doc.raw, text))
    _locale_changes(plan, translations, docs[0].yaml_text if docs else "")
    own = set()
    for doc in docs:
        for value in doc.data.get("provides") or []:
            own.add(value if isinstance(value, str) else str(value.get("contract", "")))
    _report_contracts(plan, docs, provided, own)
    if plan.refusals:
        return
    plan.verdict = _judge(plan, host_version)


def _judge(plan: Plan, host_version: str) -> LoadResult:
    """The loader's verdict on the package as migrated, from a scratch copy.

    A field the current format does not know becomes a refusal: the migration had no rule for
    it, so the author must decide.
    """
    with tempfile.TemporaryDirectory(prefix="covel-migrate-") as scratch:
        copy = Path(scratch) / plan.root.name
        shutil.copytree(
            plan.root, copy, symlinks=True, ignore=shutil.ignore_patterns(".git", "node_modules")
        )
        for change in plan.changes:
            if change.old_path and change.old_path != change.new_path:
                (copy / change.old_path).unlink()
            target = copy / change.new_path
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(change.new_text, encoding="utf-8")
        verdict = load_package(copy, host_version=host_version)
    verdict = LoadResult(
        path=str(plan.root),
        package_id=verdict.package_id,
        manifest=verdict.manifest,
        errors=verdict.errors,
        warnings=verdict.warnings,
    )
    renamed = {c.new_path: c.old_path for c in plan.changes if c.old_path}
    for issue in verdict.errors:
        if issue.code == "unknown-field":
            plan.refusals.append(
                Issue(
                    renamed.get(issue.file, issue.file),
                    issue.path,
                    REFUSED,
                    f"{issue.message}: Covel's previous format has no such field either, or it "
                    "has no current equivalent; rewrite or remove it by hand [no-current-equivalent]",
                )
            )
    if plan.refusals:
        plan.changes = []
    return verdict
