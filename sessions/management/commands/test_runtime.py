"""python manage.py test_runtime PLUGIN [--case NAME] [--pretty]

PLUGIN is an installed plugin's id, as in the spec's `pnpm test:runtime -- notebook --pretty`
(its folder in the bundled, user or community plugin folders, in that order), or a package
folder path. Runs the package's tests/runtime-cases.json in mock mode (sessions.cases) and prints
{"status": "ok"|"failed", "mode": "mock", "pluginId", "cases": [...]}. Exit codes: 0 when every
case passes, 1 when any fails, 2 for bad arguments (no folder, no PLUGIN.md, no or malformed
cases file, an unknown --case, an id no installed package has). `Unsupported rpc` notices go
to stderr, so stdout stays JSON.
"""

from __future__ import annotations

import json
import sys
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from sessions.cases import CaseFileError, plugin_folder_resolve, run_cases


class Command(BaseCommand):
    help = (
        "Run a package's offline runtime cases (tests/runtime-cases.json) against a scripted model."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument(
            "plugin",
            help="an installed plugin's id (e.g. notebook), or a package folder (holding PLUGIN.md)",
        )
        parser.add_argument(
            "--case", dest="case", default=None, help="run only the case with this name"
        )
        parser.add_argument("--pretty", action="store_true", help="indent the JSON output")

    def handle(self, *args: Any, **options: Any) -> None:
        try:
            root = plugin_folder_resolve(plugin=options["plugin"])
            report = run_cases(
                root, case_name=options["case"], notice=lambda text: self.stderr.write(text)
            )
        except CaseFileError as exc:
            raise CommandError(str(exc), returncode=2) from exc
        text = json.dumps(
            report.as_dict(),
            indent=2 if options["pretty"] else None,
            ensure_ascii=False,
            default=str,
        )
        self.stdout.write(text)
        if report.exit_code:
            failed = [c["name"] for c in report.cases if c["status"] != "passed"]
            self.stderr.write(f"failed cases: {', '.join(failed)}")
            self.stdout.flush()
            sys.exit(report.exit_code)
