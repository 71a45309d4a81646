"""Write docs/reference/*.md from the manifest JSON Schemas, or check that they are fresh."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError, CommandParser

from catalogue.manifest.reference import render_reference
from catalogue.schemas import (
    PLUGIN_LOCALE,
    PLUGIN_MANIFEST,
    RUNTIME_MANIFEST,
    SCHEMA_BASE,
    SCHEMA_FILES,
    load_schema,
)

# Reference page name -> schema file it is generated from.
PAGES = {
    "plugin-manifest.md": PLUGIN_MANIFEST,
    "runtime-manifest.md": RUNTIME_MANIFEST,
    "plugin-locale.md": PLUGIN_LOCALE,
}


def render_pages() -> dict[str, str]:
    """Every reference page's Markdown, keyed by file name."""
    registry = {SCHEMA_BASE + name: load_schema(name) for name in SCHEMA_FILES}
    return {
        page: render_reference(
            registry[SCHEMA_BASE + schema],
            source=f"catalogue/schemas/{schema}",
            registry=registry,
        )
        for page, schema in PAGES.items()
    }


class Command(BaseCommand):
    help = (
        "Generate the manifest reference pages (docs/reference/*.md) from catalogue/schemas. "
        "With --check, write nothing and exit 1 when a page is stale."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument(
            "--check",
            action="store_true",
            help="Write nothing; exit 1 naming each stale or missing page, 0 when all are fresh.",
        )
        parser.add_argument(
            "--docs-dir",
            type=Path,
            default=None,
            help="Folder of the reference pages (default: docs/reference in the project).",
        )

    def handle(
        self, *args: Any, check: bool = False, docs_dir: Path | None = None, **options: Any
    ) -> None:
        folder = docs_dir or Path(settings.BASE_DIR) / "docs" / "reference"
        pages = render_pages()
        if check:
            stale = []
            for name, text in pages.items():
                path = folder / name
                current = path.read_text(encoding="utf-8") if path.is_file() else None
                if current != text:
                    state = "missing" if current is None else "stale"
                    stale.append(f"{_shown(path)} is {state}")
            if stale:
                raise CommandError(
                    "; ".join(stale)
                    + ". Run `python manage.py schemas_generate` and commit the result.",
                    returncode=1,
                )
            self.stdout.write(f"Reference pages are up to date ({len(pages)} files).")
            return
        folder.mkdir(parents=True, exist_ok=True)
        for name, text in pages.items():
            path = folder / name
            if path.is_file() and path.read_text(encoding="utf-8") == text:
                self.stdout.write(f"unchanged {_shown(path)}")
                continue
            path.write_text(text, encoding="utf-8")
            self.stdout.write(f"wrote {_shown(path)}")


def _shown(path: Path) -> str:
    """The path relative to the project when inside it, else absolute."""
    try:
        return str(path.resolve().relative_to(Path(settings.BASE_DIR).resolve()))
    except ValueError:
        return str(path)
