"""python manage.py sync_sources: index the source plugin folders (settings.COVEL_SOURCE_PLUGIN_DIRS)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandParser

from sources.services import source_plugins_sync


class Command(BaseCommand):
    help = "Index the source plugins (plugin.toml folders): idempotent; invalid ones are listed with their errors."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument(
            "--dir",
            action="append",
            dest="dirs",
            default=None,
            help="A folder of source plugins to read instead of the configured ones (repeatable).",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        dirs = [Path(d) for d in options["dirs"]] if options["dirs"] else None
        report = source_plugins_sync(dirs=dirs)
        for label, ids in (
            ("created", report.created),
            ("updated", report.updated),
            ("unchanged", report.unchanged),
            ("removed", report.removed),
        ):
            if ids:
                self.stdout.write(f"{label}: {', '.join(ids)}")
        for folder in report.skipped:
            self.stdout.write(
                self.style.WARNING(f"skipped {folder}: an earlier folder has the same id")
            )
        for plugin_id, errors in report.invalid.items():
            self.stdout.write(self.style.ERROR(f"invalid: {plugin_id}"))
            for line in errors:
                self.stdout.write(f"  {line}")
        total = len(report.created) + len(report.updated) + len(report.unchanged)
        self.stdout.write(f"{total} source plugin(s), {len(report.invalid)} invalid")
