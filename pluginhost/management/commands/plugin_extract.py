"""python manage.py plugin_extract PATH [--check] [--json]

Runs the package's entry factory (no handler runs, host capabilities refused) and writes the six
registration lists into contributes of the root PLUGIN.md. Exit codes: 0 in sync or written,
1 drift under --check or an extraction error, 2 invalid arguments.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from pluginhost.extract import ArgumentError, ExtractError, extract, render_text
from pluginhost.pool import folder_trust


class Command(BaseCommand):
    help = "Write the entry module's registrations into contributes of the root PLUGIN.md."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("path", help="the package folder (the one holding PLUGIN.md)")
        parser.add_argument(
            "--check", action="store_true", help="write nothing; exit 1 when declarations drift"
        )
        parser.add_argument(
            "--json", action="store_true", help='print {"extracted": ..., "drift": ...}'
        )

    def handle(self, *args: Any, **options: Any) -> None:
        root = Path(options["path"]).expanduser()
        check = bool(options["check"])
        # The spec: this command executes plugin entry code; a reader must know it did.
        self.stderr.write(notice_for(root))
        try:
            report = extract(root, check=check)
        except ArgumentError as exc:
            raise CommandError(str(exc), returncode=2) from exc
        except ExtractError as exc:
            raise CommandError(f"{exc}\nNothing was written.", returncode=1) from exc
        if options["json"]:
            self.stdout.write(
                json.dumps(
                    {
                        "extracted": report.extracted,
                        "drift": {key: drift.as_dict() for key, drift in report.drift.items()},
                        "notes": report.notes,
                        "written": report.written,
                    },
                    indent=2,
                    ensure_ascii=False,
                )
            )
        else:
            self.stdout.write(render_text(report, check=check))
        if check and report.drift:
            raise CommandError("declarations drift from the entry registrations", returncode=1)


def notice_for(root: Path) -> str:
    if folder_trust(root) == "community":
        return (
            f"Note: plugin_extract runs the author's code (the entry factory of {root}), in a "
            "contained host: no network, no files but the package's, host capabilities refused. "
            "Run it on packages you trust to be what they say."
        )
    return f"Note: plugin_extract runs the author's code (the entry factory of {root})."
