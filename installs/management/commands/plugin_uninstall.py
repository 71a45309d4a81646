"""`manage.py plugin_uninstall ID [--detach] [--json]`: remove an installed package's files and
catalogue rows (the approval journal stays). Refused while active sessions use it unless
--detach. Exit status as validate_plugin: 0 removed, 1 refused, 2 bad arguments."""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandParser

from installs.management.commands._installs_cli import refusal, report
from installs.services import InstallProblem, uninstall


class Command(BaseCommand):
    help = "Uninstall a package installed from the web or plugin_install."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("id")
        parser.add_argument("--detach", action="store_true", help="detach it from active sessions")
        parser.add_argument("--json", action="store_true", help="print JSON")

    def handle(self, *args: Any, id: str, detach: bool, json: bool, **options: Any) -> None:
        try:
            done = uninstall(package_id=id, detach=detach)
        except InstallProblem as exc:
            report(
                self,
                ok=False,
                payload=refusal(exc),
                as_json=json,
                line=f"refused ({exc.status} {exc.code}): {exc.message}",
            )
            return
        report(self, ok=True, payload=done, as_json=json, line=f"uninstalled {id}")
