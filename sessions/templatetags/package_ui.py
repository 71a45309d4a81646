"""Template filters of the package UI includes (sessions/templates/sessions/package_ui/)."""

from __future__ import annotations

from typing import Any

from django import template

register = template.Library()


@register.filter
def message_blocks(package_ui: Any, turn_id: Any) -> list[dict[str, Any]]:
    """The message blocks of one turn, from the page's package_ui."""
    if not isinstance(package_ui, dict):
        return []
    return package_ui.get("messages", {}).get(str(turn_id), [])
