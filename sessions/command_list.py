"""The slash commands a session's players may type: the composer's "/" popup and /help.

Read-only: the session's active packages (as last resolved) and their contributes.commands,
with each argument's name, type, whether it is required or takes the rest of the line, and the
package's own description. A usage line is built the way players type the command.
"""

from __future__ import annotations

from typing import Any

from sessions import selectors
from sessions.commands import commands_of
from sessions.models import Session


def _usage(command: dict[str, Any]) -> str:
    words = [f"/{command.get('name')}"]
    for arg in command.get("arguments") or []:
        name = str(arg.get("name"))
        if arg.get("variadic"):
            name += "…"
        words.append(f"<{name}>" if arg.get("required") else f"[{name}]")
    return " ".join(words)


def session_command_list(*, session: Session) -> list[dict[str, Any]]:
    """Every command of the session's active packages, by name."""
    installed = selectors.installed_manifests()
    rows = []
    for package_id in session.resolved_plugins or []:
        manifest = installed.get(package_id)
        if manifest is None:
            continue
        for command in commands_of(manifest):
            rows.append(
                {
                    "name": str(command.get("name")),
                    "aliases": [str(a) for a in command.get("aliases") or []],
                    "description": str(command.get("description") or ""),
                    "package": package_id,
                    "usage": _usage(command),
                    "arguments": [
                        {
                            "name": str(a.get("name")),
                            "type": str(a.get("type") or "string"),
                            "required": bool(a.get("required")),
                            "variadic": bool(a.get("variadic")),
                            "description": str(a.get("description") or ""),
                        }
                        for a in command.get("arguments") or []
                    ],
                }
            )
    return sorted(rows, key=lambda row: row["name"])
