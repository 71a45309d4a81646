"""Index the world folders of settings.COVEL_WORLD_DIRS (or the folders given)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError, CommandParser

from worlds.services import world_sync


class Command(BaseCommand):
    help = "Index world folders (world.yaml): idempotent; reports every error with file and path."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("dirs", nargs="*", help="folders of worlds (default: COVEL_WORLD_DIRS)")
        parser.add_argument(
            "--strict", action="store_true", help="exit non-zero when a world has errors"
        )

    def handle(self, *args: Any, **options: Any) -> None:
        dirs = [Path(d) for d in options["dirs"]] or list(settings.COVEL_WORLD_DIRS)
        report = world_sync(dirs=dirs)
        for result in report.results:
            self.stdout.write(f"{result.action:9} {result.world_id}  ({result.path})")
            for issue in result.errors:
                self.stdout.write(self.style.ERROR(f"  error   {result.world_id}/{issue}"))
            for issue in result.warnings:
                self.stdout.write(self.style.WARNING(f"  warning {result.world_id}/{issue}"))
        summary = ", ".join(
            f"{report.count(a)} {a}"
            for a in ("created", "updated", "unchanged", "error", "duplicate", "missing")
        )
        self.stdout.write(summary)
        if options["strict"] and report.has_errors:
            raise CommandError("some worlds have errors")
