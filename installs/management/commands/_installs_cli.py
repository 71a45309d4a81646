"""What the plugin_install / plugin_update / plugin_uninstall commands share: the output and
the exit codes of validate_plugin (0 done, 1 refused, 2 bad arguments)."""

from __future__ import annotations

import json
import sys
from typing import Any

from installs.services import InstallProblem


def report(command: Any, *, ok: bool, payload: dict[str, Any], as_json: bool, line: str) -> None:
    if as_json:
        command.stdout.write(json.dumps(payload, indent=2, default=str))
    elif ok:
        command.stdout.write(line)
    else:
        command.stderr.write(line)
    if not ok:
        sys.exit(1)


def refusal(exc: InstallProblem) -> dict[str, Any]:
    return {
        "ok": False,
        "status": exc.status,
        "code": exc.code,
        "message": exc.message,
        "details": exc.details,
    }
