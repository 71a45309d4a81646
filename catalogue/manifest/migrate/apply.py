"""migrate_apply: write a plan all or nothing."""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Callable
from pathlib import Path

from catalogue.manifest.migrate.model import Plan

# ------------------------------------------------------------------ writing


def migrate_apply(plan: Plan, *, _replace: Callable[[str, str], None] = os.replace) -> None:
    """Write plan's changes all or nothing: new texts go to temporary files beside their
    targets first; only when every one is written are they moved into place, and a failure
    while moving puts every file back as it was."""
    if plan.refusals or not plan.changes:
        return
    root = plan.root
    temps: list[tuple[Path, Path]] = []  # (temporary file, target)
    created_dirs: list[Path] = []
    try:
        for change in plan.changes:
            target = root / change.new_path
            if not target.parent.exists():
                target.parent.mkdir(parents=True)
                created_dirs.append(target.parent)
            handle, temp = tempfile.mkstemp(
                prefix=f".{target.name}.", suffix=".migrate", dir=target.parent
            )
            with os.fdopen(handle, "w", encoding="utf-8", newline="") as out:
                out.write(change.new_text)
                out.flush()
                os.fsync(out.fileno())
            if target.exists():
                shutil.copymode(target, temp)
            elif change.old_path and (root / change.old_path).exists():
                shutil.copymode(root / change.old_path, temp)
            temps.append((Path(temp), target))
    except BaseException:
        for temp, _ in temps:
            temp.unlink(missing_ok=True)
        for folder in reversed(created_dirs):
            shutil.rmtree(folder, ignore_errors=True)
        raise
    # Keep the old texts to put back if a move fails half way.
    backups = {
        change.old_path: change.old_text for change in plan.changes if change.old_path is not None
    }
    done: list[Path] = []
    removed: list[str] = []
    try:
        for temp, target in temps:
            _replace(str(temp), str(target))
            done.append(target)
        for change in plan.changes:
            if change.old_path and change.old_path != change.new_path:
                (root / change.old_path).unlink()
                removed.append(change.old_path)
    except BaseException:
        for target in done:
            target.unlink(missing_ok=True)
        for temp, _ in temps:
            temp.unlink(missing_ok=True)
        for old_path, text in backups.items():
            (root / old_path).write_text(text, encoding="utf-8")
        for folder in reversed(created_dirs):
            shutil.rmtree(folder, ignore_errors=True)
        raise
