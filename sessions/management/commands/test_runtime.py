"""python manage.py test_runtime PLUGIN [--case NAME] [--pretty]

PLUGIN is an installed plugin's id, as in the spec's `pnpm test:runtime -- notebook --pretty`
(its folder in the bundled, user or community plugin folders, in that order), or a package
folder path. Runs the package's tests/runtime-cases.json in mock mode (sessions.cases) and prints
{"status": "ok"|"failed", "mode": "mock", "pluginId", "cases": [...]}, then on stderr one line per
failed case (its first failure) and a last PASS/FAIL line with the counts. Exit codes: 0 when every
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
        self.stdout.flush()
        # The verdict for people, last (on stderr, so stdout stays one JSON document): one line
        # per failed case with its first failure, then PASS or FAIL with the counts.
        failed = [c for c in report.cases if c.get("status") != "passed"]
        for case in failed:
            reasons = (case.get("result") or {}).get("failures") or ["failed"]
            more = f" (+{len(reasons) - 1} more)" if len(reasons) > 1 else ""
            self.stderr.write(f"  ✗ {case.get('name')}: {reasons[0]}{more}")
        total = len(report.cases)
        if report.exit_code:
            names = ", ".join(str(c.get("name")) for c in failed)
            self.stderr.write(
                f"FAIL {report.plugin_id}: {len(failed)} of {total} case(s) failed; "
                f"failed cases: {names}"
            )
            sys.exit(report.exit_code)
        self.stderr.write(f"PASS {report.plugin_id}: {total} case(s) passed")
