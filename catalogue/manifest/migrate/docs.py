"""One manifest file being migrated: read through the loader's safe parser, then round-trip."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from ruamel.yaml import YAML
from ruamel.yaml.comments import CommentedMap
from ruamel.yaml.error import YAMLError

from catalogue.manifest.frontmatter import split_markdown
from catalogue.manifest.migrate.model import REFUSED, Plan
from catalogue.manifest.migrate.yamledit import _dump, _yaml
from catalogue.manifest.types import Issue

# ------------------------------------------------------------------ one manifest file


@dataclass
class _Doc:
    """One manifest file being migrated."""

    old_path: str
    new_path: str
    raw: str
    head: str  # the text before the YAML ("---\n")
    yaml_text: str
    tail: str  # the closing "---" line and the body, byte for byte
    y: YAML
    data: CommentedMap
    changed: bool = False

    def text(self) -> str:
        if not self.changed:
            return self.raw
        return self.head + _dump(self.y, self.data) + self.tail


def _is_link(root: Path, relative: str) -> bool:
    """Whether the file or a folder between it and the package root is a symbolic link."""
    current = root
    for part in relative.split("/"):
        current = current / part
        if current.is_symlink():
            return True
    return False


def _read_doc(root: Path, old_path: str, new_path: str, plan: Plan) -> _Doc | None:
    full = root / old_path
    if _is_link(root, old_path):
        plan.refusals.append(
            Issue(
                old_path,
                "",
                REFUSED,
                f"{old_path} is (or lies under) a symbolic link; the migration never reads or "
                "writes through links [symlink]",
            )
        )
        return None
    try:
        raw_bytes = full.read_bytes()
    except OSError as exc:
        plan.refusals.append(
            Issue(old_path, "", REFUSED, f"{old_path} cannot be read: {exc.strerror or exc}")
        )
        return None
    parsed = split_markdown(raw_bytes, old_path)
    if parsed.issues:
        for issue in parsed.issues:
            plan.refusals.append(
                Issue(
                    issue.file,
                    issue.path,
                    REFUSED,
                    f"{issue.message} [{issue.code}]; the file is left as it is",
                )
            )
        return None
    raw = raw_bytes.decode("utf-8")
    match = re.match(
        r"\A(\ufeff?---[ \t]*\r?\n)(.*?)(^---[ \t]*(?:\r?\n|\Z).*)\Z", raw, re.S | re.M
    )
    if match is None:
        plan.refusals.append(
            Issue(old_path, "", REFUSED, "the YAML frontmatter could not be located")
        )
        return None
    head, yaml_text, tail = match.groups()
    if "\r\n" in yaml_text:
        plan.refusals.append(
            Issue(
                old_path,
                "",
                REFUSED,
                "the frontmatter has Windows line endings; save it with \\n line endings first",
            )
        )
        return None
    y = _yaml(yaml_text)
    try:
        data = y.load(yaml_text) if yaml_text.strip() else CommentedMap()
    except YAMLError as exc:
        plan.refusals.append(Issue(old_path, "", REFUSED, f"the YAML cannot be read: {exc}"))
        return None
    if not isinstance(data, CommentedMap):
        plan.refusals.append(
            Issue(old_path, "", REFUSED, "the frontmatter is not a mapping of fields")
        )
        return None
    return _Doc(old_path, new_path, raw, head, yaml_text, tail, y, data)


@dataclass
class _Ctx:
    plan: Plan
    doc: _Doc
    translations: dict[str, dict[str, CommentedMap]]  # locale -> manifest file -> texts

    def note(self, path: str, message: str) -> None:
        self.doc.changed = True
        self.plan.notes.append(Issue(self.doc.new_path, path, "migrated", message))

    def refuse(self, path: str, rule: str, message: str) -> None:
        self.plan.refusals.append(Issue(self.doc.old_path, path, REFUSED, f"{message} [{rule}]"))
