"""The state shared by the loader's rule passes: the package, its runtimes and the findings."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from catalogue.manifest.types import Issue

PLUGIN_FILE = "PLUGIN.md"


@dataclass
class RuntimeDoc:
    """One runtime as read from disk, before normalisation.

    base is the JSON pointer of the runtime object inside its file: "/runtime" for the
    inline runtime of PLUGIN.md, "" for runtimes/<id>/RUNTIME.md.
    rel_dir is the manifest's folder relative to the package root ("" or "runtimes/<id>").
    """

    id: str
    qualified_id: str
    file: str
    base: str
    data: dict[str, Any]
    body: str
    rel_dir: str


@dataclass
class Context:
    root: Path  # absolute, not resolved (the folder the caller named)
    real_root: str  # os.path.realpath of root, for containment checks
    package_id: str
    data: dict[str, Any]  # PLUGIN.md frontmatter (a dict even when it was not one)
    runtimes: list[RuntimeDoc] = field(default_factory=list)
    errors: list[Issue] = field(default_factory=list)
    warnings: list[Issue] = field(default_factory=list)

    def error(self, file: str, path: str, code: str, message: str) -> None:
        self.errors.append(Issue(file, path, code, message))

    def warn(self, file: str, path: str, code: str, message: str) -> None:
        self.warnings.append(Issue(file, path, code, message))

    def check_path(self, value: Any, *, file: str, path: str, rel_dir: str = "") -> str | None:
        """Check a package-relative path; return its normalised form ("schemas/x.json") or None.

        rel_dir is the folder the path is relative to ("" for the package root).
        """
        if not isinstance(value, str):
            return None  # the schema reports the type
        text = value.strip()
        if not text:
            self.error(file, path, "path-invalid", "the path is empty")
            return None
        if text.startswith(("/", "\\", "~")) or (len(text) > 1 and text[1] == ":") or "://" in text:
            self.error(
                file,
                path,
                "path-absolute",
                f"{value!r} must be a path relative to the package, like ./schemas/x.json",
            )
            return None
        parts = [p for p in text.replace("\\", "/").split("/") if p not in ("", ".")]
        if ".." in parts:
            self.error(
                file,
                path,
                "path-escapes",
                f"{value!r} may not use '..': paths stay inside the package",
            )
            return None
        if not parts:
            self.error(file, path, "path-invalid", f"{value!r} does not name a file")
            return None
        relative = "/".join([*(p for p in rel_dir.split("/") if p), *parts])
        candidate = os.path.join(self.root, *relative.split("/"))
        real = os.path.realpath(candidate)
        if os.path.lexists(candidate) and not (
            real == self.real_root or real.startswith(self.real_root + os.sep)
        ):
            self.error(
                file,
                path,
                "path-escapes",
                f"{value!r} leads outside the package through a symbolic link",
            )
            return None
        if not os.path.isfile(candidate):
            what = (
                "is a folder, not a file"
                if os.path.isdir(candidate)
                else "does not exist in the package"
            )
            self.error(file, path, "path-missing", f"{value!r} {what}")
            return None
        return relative
