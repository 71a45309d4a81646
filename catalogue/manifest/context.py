"""The state shared by the loader's rule passes: the package, its runtimes and the findings."""

from __future__ import annotations

import os
import posixpath
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from catalogue.manifest.types import Issue

PLUGIN_FILE = "PLUGIN.md"
RUNTIMES_DIR = "runtimes"
# A manifest or locale file larger than this is refused before it is read (prompt body included).
MAX_FILE_BYTES = 1024 * 1024


def inside_package(rel_dir: str, text: str) -> str | None:
    """text read from rel_dir ("" for the package root), normalised package-relative
    ("schemas/x.json"); None when it leaves the package.

    Covel's rule (the spec is silent): `..` is allowed while the path stays inside the package
    after normalising, so runtimes/plot/ may name ../../schemas/x.json.
    """
    joined = posixpath.normpath(posixpath.join(rel_dir or ".", text.replace("\\", "/")))
    if joined == ".." or joined.startswith("../"):
        return None
    return joined


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

    def check_path(
        self, value: Any, *, file: str, path: str, rel_dir: str = "", also_from: str = ""
    ) -> str | None:
        """Check a package-relative path; return its normalised form ("schemas/x.json") or None.

        rel_dir is the folder the path is relative to ("" for the package root). also_from: a
        second folder to read it from when it leaves the package or names nothing from rel_dir
        (a RUNTIME.md's io schemas: package-relative, or relative to the runtime as Covel's
        packages write them).
        """
        if also_from and isinstance(value, str) and value.strip():
            text = value.strip()
            first = inside_package(rel_dir, text)
            if first is None or not os.path.isfile(os.path.join(self.root, *first.split("/"))):
                second = inside_package(also_from, text)
                if second is not None and os.path.isfile(
                    os.path.join(self.root, *second.split("/"))
                ):
                    rel_dir = also_from
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
        if not [p for p in text.replace("\\", "/").split("/") if p not in ("", ".")]:
            self.error(file, path, "path-invalid", f"{value!r} does not name a file")
            return None
        relative = inside_package(rel_dir, text)
        if relative is None:
            where = f"from {rel_dir}/" if rel_dir else "from the package root"
            self.error(
                file,
                path,
                "path-escapes",
                f"{value!r} leaves the package: read {where} it resolves to "
                f"{posixpath.normpath(posixpath.join(rel_dir or '.', text))!r}, outside the "
                "package folder ('..' is allowed only while the path stays inside)",
            )
            return None
        if relative == ".":
            self.error(file, path, "path-invalid", f"{value!r} does not name a file")
            return None
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
