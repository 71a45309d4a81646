"""`manage.py validate_plugin PATH [PATH ...] [--json]`: static validation of package folders.

Like Covel's `validate:plugin`: it reads manifests and files, and never runs plugin code.
A folder with plugin.toml and no PLUGIN.md is a source plugin and goes to the source loader.
Exit status: 0 when every package passes, 1 when any fails, 2 for bad arguments.
"""

from __future__ import annotations

import json
import os
import unicodedata
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError, CommandParser

from catalogue import callouts
from catalogue.manifest import load_package
from catalogue.manifest.types import Issue


@dataclass(frozen=True)
class Verdict:
    path: str
    package_id: str
    ok: bool
    errors: tuple[Issue, ...]
    warnings: tuple[Issue, ...]
    kind: str  # "covel" or "source"
    languages: dict[str, list[str]] | None = None

    def as_dict(self) -> dict[str, Any]:
        return {
            "path": self.path,
            "id": self.package_id,
            "ok": self.ok,
            "kind": self.kind,
            "languages": self.languages,
            "errors": [issue.as_dict() for issue in self.errors],
            "warnings": [issue.as_dict() for issue in self.warnings],
        }


def is_source_plugin(folder: Path) -> bool:
    return (folder / "plugin.toml").is_file() and not (folder / "PLUGIN.md").exists()


def validate_folder(folder: Path) -> Verdict:
    path = str(folder)
    if is_source_plugin(folder):
        # The sources app sits above the catalogue (its loader reuses the catalogue's): it
        # registers its loader in a slot (catalogue/callouts.py).
        source = callouts.source_plugin_loader.get()(folder)
        return Verdict(
            path=path,
            package_id=str(source.plugin_id),
            ok=bool(source.ok),
            errors=tuple(source.errors),
            warnings=tuple(source.warnings),
            kind="source",
        )
    result = load_package(folder, host_version=settings.COVEL_HOST_VERSION)
    languages = None
    if result.manifest is not None:
        languages = {key: list(value) for key, value in result.manifest.languages.items()}
    return Verdict(
        path=path,
        package_id=result.package_id,
        ok=result.ok,
        errors=result.errors,
        warnings=result.warnings,
        kind="covel",
        languages=languages,
    )


# Control, format (bidi overrides), surrogate, private-use and line/paragraph separator characters.
_UNPRINTABLE = frozenset({"Cc", "Cf", "Cs", "Co", "Zl", "Zp"})


def printable(text: str) -> str:
    """Escape characters a terminal would obey or display misleadingly.

    Manifests are untrusted: an ESC sequence in a key could rewrite the screen, a bidi override
    could make a line read differently from what it says. Such characters print as escapes.
    """
    if text.isprintable():
        return text
    out = []
    for char in text:
        if unicodedata.category(char) in _UNPRINTABLE:
            code = ord(char)
            out.append(f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}")
        else:
            out.append(char)
    return "".join(out)


def json_printable(document: str) -> str:
    """printable() for a JSON document: \\uXXXX escapes, which keep it valid and equal.

    json.dumps escapes C0 controls itself; the other unprintable characters can only occur
    inside strings, so escaping them changes no value. The newlines of the indentation stay.
    """
    if document.isprintable():
        return document
    out = []
    for char in document:
        if char != "\n" and unicodedata.category(char) in _UNPRINTABLE:
            data = char.encode("utf-16-be", "surrogatepass")
            for i in range(0, len(data), 2):
                out.append(f"\\u{int.from_bytes(data[i : i + 2], 'big'):04x}")
        else:
            out.append(char)
    return "".join(out)


def _languages_line(languages: dict[str, list[str]] | None) -> str:
    languages = languages or {}
    text = ", ".join(languages.get("text", [])) or "none"
    instructions = ", ".join(languages.get("instructions", [])) or "none"
    return f"  languages: text {text}; instructions {instructions}"


class Command(BaseCommand):
    help = "Validate Covel package folders (and source plugins) without running their code."
    # Package validation must not depend on the state of unrelated apps (and starts faster).
    requires_system_checks: list[str] = []

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("paths", nargs="+", metavar="PATH", help="package folders to validate")
        parser.add_argument(
            "--json", action="store_true", help="print one JSON document instead of text"
        )

    def handle(self, *args: Any, **options: Any) -> None:
        folders = []
        for raw in options["paths"]:
            folder = Path(os.path.abspath(os.path.expanduser(raw)))
            if not folder.is_dir():
                raise CommandError(f"{raw} is not a directory", returncode=2)
            folders.append(folder)
        verdicts = [validate_folder(folder) for folder in folders]
        if options["json"]:
            document = json.dumps(
                {"packages": [v.as_dict() for v in verdicts]}, ensure_ascii=False, indent=2
            )
            self.stdout.write(json_printable(document))
        else:
            for verdict in verdicts:
                self.write_verdict(verdict)
        failed = [v for v in verdicts if not v.ok]
        if failed:
            raise CommandError(
                f"{len(failed)} of {len(verdicts)} package(s) failed validation", returncode=1
            )

    def write_verdict(self, verdict: Verdict) -> None:
        if verdict.ok:
            self.stdout.write(f"✓ Static package validation: {printable(verdict.path)}")
            if verdict.kind == "source":
                self.stdout.write(f"  source plugin: {printable(verdict.package_id)}")
            else:
                self.stdout.write(_languages_line(verdict.languages))
        else:
            self.stdout.write(f"✗ {printable(verdict.path)}")
            for issue in verdict.errors:
                self.stdout.write(f"  {printable(str(issue))}")
        for issue in verdict.warnings:
            self.stdout.write(f"  warning: {printable(str(issue))}")
