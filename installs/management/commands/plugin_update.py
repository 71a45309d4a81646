"""`manage.py plugin_update [ID] [--yes] [--json]`: check packages installed from git for a
newer commit (all of them without ID) and, with --yes, install the update. Exit status as
validate_plugin: 0 fine, 1 refused, 2 bad arguments."""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandParser

from installs import remote
from installs.management.commands._installs_cli import refusal, report
from installs.models import Installation
from installs.services import InstallProblem


class Command(BaseCommand):
    help = "Check (and with --yes install) updates of packages installed from git."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("id", nargs="?", help="one installed package id (default: all)")
        parser.add_argument("--yes", action="store_true", help="install the updates found")
        parser.add_argument("--json", action="store_true", help="print JSON")

    def handle(self, *args: Any, id: str | None, yes: bool, json: bool, **options: Any) -> None:
        ids = (
            [id]
            if id
            else list(Installation.objects.filter(kind="git").values_list("package_id", flat=True))
        )
        results, failed, lines = [], False, []
        for package_id in ids:
            try:
                found = remote.update_check(package_id=package_id)
                if found["status"] == "available" and yes:
                    remote.update_apply(token=found["preview"]["token"], actor=None)
                    found = {"status": "updated", "version": found["preview"]["version"]}
                elif found["status"] == "available":
                    found = {
                        "status": "available",
                        "version": found["preview"]["version"],
                        "commit": found["preview"]["source"]["commit"],
                    }
            except InstallProblem as exc:
                failed = True
                found = refusal(exc)
            results.append({"id": package_id, **found})
            lines.append(f"{package_id}: {found.get('status') or found.get('message')}")
        report(
            self,
            ok=not failed,
            payload={"items": results},
            as_json=json,
            line="\n".join(lines) or "nothing installed from git",
        )
