"""What a migration plans: its file changes, notes, refusals and reports (plugin_migrate)."""

from __future__ import annotations

import difflib
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from catalogue.manifest.types import Issue, LoadResult

PLUGIN_FILE = "PLUGIN.md"
RUNTIME_FILE = "RUNTIME.md"
RUNTIMES_DIR = "runtimes"
LOCALES_DIR = "locales"

# Codes of a refusal (the package is left as it is) and of a report.
REFUSED = "migrate-refused"
CONTRACT_MISSING = "contract-not-installed"
# A file a manifest names that is not in the package: the migration's own finding.
FILE_MISSING = "file-missing"

_LOCALE = re.compile(r"^[a-z]{2,3}(-[A-Za-z0-9]{2,8})*$")
_VARIANT = re.compile(r"^PLUGIN\.([a-z]{2,3}(?:-[A-Za-z0-9]{2,8})*)\.md$")
_CONTRACT = re.compile(r"^([a-z][a-z0-9.-]*)@([1-9][0-9]*)$")
# The text fields whose previous form could be a locale map ({en: ..., zh: ...}).
_TEXT_KEYS = frozenset(
    {"displayName", "description", "label", "title", "summary", "about", "placeholder"}
)
# How a translated list entry names the canonical entry (the loader's identity keys).
_IDENTITY_KEYS = ("name", "key", "value", "topic", "id", "url")
# Covel's previous reader kinds and the path forms the spec reads the same way.
_SOURCE_KINDS = {"yaml": (".yaml", ".yml"), "json": (".json",), "media": ("",)}


@dataclass(frozen=True)
class FileChange:
    """One file the migration writes: old_path None = a new file; old != new = a rename."""

    old_path: str | None
    new_path: str
    old_text: str
    new_text: str

    @property
    def action(self) -> str:
        if self.old_path is None:
            return "create"
        return "rename" if self.old_path != self.new_path else "rewrite"

    def diff(self) -> str:
        lines = difflib.unified_diff(
            self.old_text.splitlines(keepends=True),
            self.new_text.splitlines(keepends=True),
            fromfile="/dev/null" if self.old_path is None else f"a/{self.old_path}",
            tofile=f"b/{self.new_path}",
        )
        out = []
        for line in lines:
            out.append(line if line.endswith("\n") else line + "\n\\ No newline at end of file\n")
        if not out and self.action == "rename":  # a pure rename still shows in the diff
            out = [f"rename from {self.old_path}\n", f"rename to {self.new_path}\n"]
        return "".join(out)


@dataclass
class Plan:
    root: Path
    package_id: str
    changes: list[FileChange] = field(default_factory=list)
    notes: list[Issue] = field(default_factory=list)
    refusals: list[Issue] = field(default_factory=list)
    contracts: list[Issue] = field(default_factory=list)
    findings: list[Issue] = field(default_factory=list)  # files the manifests name, missing
    verdict: LoadResult | None = None  # the loader's verdict on the migrated package

    @property
    def changed(self) -> bool:
        return bool(self.changes)

    @property
    def ok(self) -> bool:
        """Nothing refused, and the package (as migrated) passes the loader."""
        return not self.refusals and (self.verdict is None or self.verdict.ok)

    def diff(self) -> str:
        return "".join(change.diff() for change in self.changes)

    def as_dict(self) -> dict[str, Any]:
        verdict = self.verdict
        return {
            "path": str(self.root),
            "id": self.package_id,
            "ok": self.ok,
            "changed": self.changed,
            "changes": [
                {"action": c.action, "from": c.old_path, "to": c.new_path} for c in self.changes
            ],
            "diff": self.diff(),
            "notes": [i.as_dict() for i in self.notes],
            "refusals": [i.as_dict() for i in self.refusals],
            "contracts": [i.as_dict() for i in self.contracts],
            "findings": [i.as_dict() for i in self.findings],
            "errors": [i.as_dict() for i in verdict.errors] if verdict else [],
            "warnings": [i.as_dict() for i in verdict.warnings] if verdict else [],
        }


class _Refused(Exception):
    pass
