"""`manage.py plugin_install SOURCE [--yes] [--json]`: install a ZIP, a git link or a
directory entry, with the checks of the install API (docs/install.md). Without --yes it shows
the preview and writes nothing. Exit status: 0 installed (or previewed), 1 refused, 2 bad
arguments, as validate_plugin."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandParser

from installs import remote
from installs.management.commands._installs_cli import refusal, report
from installs.pages import zip_preview
from installs.selectors import directory_entry_get
from installs.services import InstallProblem, zip_install


class Command(BaseCommand):
    help = "Install a package from a ZIP file, a git link or a community directory id."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("source", help="a .zip path, an https git link, or a directory id")
        parser.add_argument("--yes", action="store_true", help="install (without it: preview only)")
        parser.add_argument("--json", action="store_true", help="print JSON")

    def handle(self, *args: Any, source: str, yes: bool, json: bool, **options: Any) -> None:
        try:
            payload = self._run(source, yes)
        except InstallProblem as exc:
            where = exc.details.get("entry") or exc.details.get("step") or ""
            report(
                self,
                ok=False,
                payload=refusal(exc),
                as_json=json,
                line=f"refused ({exc.status} {exc.code}): {where + ': ' if where else ''}{exc.message}",
            )
            return
        if yes:
            line = (
                "installed "
                + ", ".join(i["id"] for i in payload.get("installed", [payload]))
                + " (it waits for approval)"
            )
        else:
            ids = [i["id"] for i in payload.get("items", [payload])]
            line = "would install " + ", ".join(ids) + "; run again with --yes to install"
        report(self, ok=True, payload=payload, as_json=json, line=line)

    def _run(self, source: str, yes: bool) -> dict[str, Any]:
        path = Path(source)
        if source.endswith(".zip") or path.is_file():
            data = path.read_bytes() if path.is_file() else b""
            if not data:
                raise InstallProblem(f"{source}: no such file", code="no_file")
            if yes:
                return zip_install(data=data, filename=path.name, actor=None)
            return zip_preview(data=data, filename=path.name)
        if "://" not in source:
            entry = directory_entry_get(entry_id=source)
            if entry is None:
                raise InstallProblem(
                    f"{source}: not a file, a link or a directory id", code="not_found", status=404
                )
            source = entry.install_url
        preview = remote.collection_preview(url=source)
        if not yes:
            return preview
        return remote.batch_install(tokens_in=[i["token"] for i in preview["items"]], actor=None)
