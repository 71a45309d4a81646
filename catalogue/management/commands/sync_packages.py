"""python manage.py sync_packages: index every configured plugin folder into the catalogue."""

from __future__ import annotations

import shutil
import sys
from typing import Any

from django.core.management.base import BaseCommand, CommandParser

from catalogue.services import errors_as_text, packages_sync


class Command(BaseCommand):
    help = (
        "Index the bundled, user and community plugin folders. Unchanged packages (same content "
        "hash) are not parsed again; removed folders leave the catalogue; invalid packages are "
        "listed with their errors."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument(
            "--force", action="store_true", help="Parse every package, even unchanged ones."
        )
        parser.add_argument(
            "--no-progress", action="store_true", help="Never draw the progress bar."
        )

    def handle(
        self, *args: Any, force: bool = False, no_progress: bool = False, **options: Any
    ) -> None:
        stream = self.stderr._out if hasattr(self.stderr, "_out") else sys.stderr
        # A progress bar only on a terminal: logs and pipes get the summary alone.
        show = not no_progress and hasattr(stream, "isatty") and stream.isatty()
        width = max(10, min(40, shutil.get_terminal_size((80, 20)).columns - 40))

        def progress(done: int, total: int, name: str) -> None:
            filled = width * done // max(total, 1)
            bar = "#" * filled + "-" * (width - filled)
            stream.write(f"\r[{bar}] {done}/{total} {name[:20]:<20}")
            stream.flush()

        summary = packages_sync(force=force, progress=progress if show else None)
        if show:
            stream.write("\r" + " " * (width + 40) + "\r")
            stream.flush()
        for package_id, errors in summary.invalid:
            self.stdout.write(self.style.ERROR(f"invalid {package_id}:"))
            for line in errors_as_text(errors):
                self.stdout.write(f"  {line}")
        self.stdout.write(summary.line())
