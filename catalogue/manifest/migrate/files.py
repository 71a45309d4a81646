"""Files a migrated manifest names that are not in the package: the migration's own findings.

Before, a missing schema or handler showed only in the final validation, after the rewrite was
planned; now each one is reported with its file and field path as the migration reads the
manifests. A path is looked for beside the manifest that names it, then at the package root
(Covel's packages write both). `contract:...` references and URLs are not files.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

from catalogue.manifest.migrate.model import FILE_MISSING, Plan
from catalogue.manifest.types import Issue

SUFFIXES = (".js", ".mjs", ".cjs", ".ts", ".mts", ".json", ".md", ".yaml", ".yml")


def _paths(node: Any, where: str) -> Iterator[tuple[str, str]]:
    if isinstance(node, dict):
        for key, value in node.items():
            yield from _paths(value, f"{where}/{key}")
    elif isinstance(node, list):
        for i, item in enumerate(node):
            yield from _paths(item, f"{where}/{i}")
    elif isinstance(node, str) and node.startswith(("./", "../")) and node.endswith(SUFFIXES):
        yield where, node


def report_missing(plan: Plan, manifest_path: str, data: Any) -> None:
    """A finding for each package-relative file path in data that exists nowhere."""
    root = plan.root.resolve()
    folder = (root / manifest_path).parent
    for where, written in _paths(data, ""):
        candidates = [(folder / written).resolve(), (root / written).resolve()]
        if any(c.is_relative_to(root) and c.exists() for c in candidates):
            continue
        plan.findings.append(
            Issue(
                manifest_path,
                where,
                FILE_MISSING,
                f"{written} is not in the package (looked beside {manifest_path} and at the "
                "package root); add the file or fix the path",
            )
        )


def manifest_exists(root: Path, relative: str) -> bool:
    return (root / relative).is_file()
