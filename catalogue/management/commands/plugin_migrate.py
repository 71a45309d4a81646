"""`manage.py plugin_migrate PATH [--check] [--json]`: rewrite a package in Covel's previous
manifest format into the current one (the logic is `catalogue.manifest.migrate`).

Prints a unified diff of what changes; `--check` writes nothing. Exit status as
validate_plugin: 0 when the package (as migrated) passes validation, 1 when something cannot be
mapped or the migrated package still fails, 2 for bad arguments. With `--check`, as `ruff format
--check` does, 1 also when files would change, so a CI step fails until the package is migrated.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError, CommandParser

from catalogue.management.commands.validate_plugin import json_printable, printable
from catalogue.manifest import load_package
from catalogue.manifest.migrate import Plan, migrate_apply, migrate_plan


def installed_contracts(exclude: Path) -> dict[str, set[str]]:
    """Contract -> ids of the installed packages (every configured folder) that provide it."""
    from catalogue.services import package_candidates, plugin_folders

    provided: dict[str, set[str]] = {}
    for path, _source in package_candidates(folders=plugin_folders()):
        if path.resolve() == exclude.resolve():
            continue
        result = load_package(path, host_version=settings.COVEL_HOST_VERSION)
        if result.manifest is None:
            continue
        for entry in result.manifest.provides:
            provided.setdefault(str(entry.get("contract")), set()).add(result.package_id)
    return provided


class Command(BaseCommand):
    help = (
        "Rewrite a package written in Covel's previous manifest format into the current one "
        "(comments kept, a diff printed). Code files are never touched."
    )
    requires_system_checks: list[str] = []

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("path", metavar="PATH", help="the package folder")
        parser.add_argument("--check", action="store_true", help="print the diff, write nothing")
        parser.add_argument("--json", action="store_true", help="print one JSON document")

    def handle(self, *args: Any, **options: Any) -> None:
        raw = options["path"]
        folder = Path(os.path.abspath(os.path.expanduser(raw)))
        if not folder.is_dir():
            raise CommandError(f"{raw} is not a directory", returncode=2)
        plan = migrate_plan(
            folder,
            provided=installed_contracts(folder),
            host_version=settings.COVEL_HOST_VERSION,
        )
        written = False
        if not options["check"] and plan.changed and not plan.refusals:
            try:
                migrate_apply(plan)
            except OSError as exc:
                raise CommandError(
                    f"nothing was changed: writing failed ({exc})", returncode=1
                ) from exc
            written = True
        if options["json"]:
            document = {**plan.as_dict(), "written": written, "check": bool(options["check"])}
            self.stdout.write(json_printable(json.dumps(document, ensure_ascii=False, indent=2)))
        else:
            self.write_text(plan, written=written, check=options["check"])
        if not plan.ok:
            reason = (
                f"{len(plan.refusals)} field(s) cannot be migrated; nothing was written"
                if plan.refusals
                else "the migrated package does not pass validation"
            )
            raise CommandError(reason, returncode=1)
        if options["check"] and plan.changed:
            raise CommandError(
                f"{len(plan.changes)} file(s) would change; run without --check to write them",
                returncode=1,
            )

    def write_text(self, plan: Plan, *, written: bool, check: bool) -> None:
        out = self.stdout
        if plan.refusals:
            out.write(f"✗ {printable(str(plan.root))}: cannot migrate")
            for issue in plan.refusals:
                out.write(f"  {printable(str(issue))}")
            for issue in plan.findings:
                out.write(f"  missing: {printable(str(issue))}")
            return
        diff = plan.diff()
        for line in diff.splitlines():
            out.write(printable(line))
        if not plan.changed:
            out.write(f"✓ {printable(str(plan.root))}: already in the current format")
        elif written:
            out.write(f"✓ {printable(str(plan.root))}: migrated ({len(plan.changes)} file(s))")
        else:
            out.write(
                f"✓ {printable(str(plan.root))}: {len(plan.changes)} file(s) would change (--check)"
                if check
                else f"{printable(str(plan.root))}: not written"
            )
        for issue in plan.contracts:
            out.write(f"  note: {printable(str(issue))}")
        for issue in plan.findings:
            out.write(f"  missing: {printable(str(issue))}")
        verdict = plan.verdict
        if verdict is not None and not verdict.ok:
            out.write("  the migrated package does not pass validation:")
            for issue in verdict.errors:
                out.write(f"  {printable(str(issue))}")
