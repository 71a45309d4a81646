"""Presentation filters every page may load ({% load hub %}): readable JSON, model-slot notes."""

from __future__ import annotations

import json
import re
from typing import Any

from django import template

register = template.Library()

# The agent runtime's reason for an unconfigured slot names it in quotes: "... the 'utility' slot".
_SLOT_IN_REASON = re.compile(r"the '([^']+)' slot|slot '([^']+)'")
NO_MODEL = "no-model-configured"


@register.filter
def pretty_json(value: Any) -> str:
    """Indented JSON for people; non-ASCII text stays readable."""
    return json.dumps(value, ensure_ascii=False, indent=2, sort_keys=True)


@register.filter
def compact_json(value: Any, limit: int = 80) -> str:
    """One line of JSON, cut at `limit` characters, for a summary line."""
    text = json.dumps(value, ensure_ascii=False, separators=(",", ":"))
    return text if len(text) <= int(limit) else text[: int(limit) - 1] + "…"


@register.filter
def is_structured(value: Any) -> bool:
    return isinstance(value, dict | list)


@register.filter
def needs_model_slot(result: Any) -> str:
    """The slot a runtime result waits for when it failed only because no model is configured
    ("" otherwise); the page shows it as a note for staff, not as a failure."""
    if not isinstance(result, dict) or result.get("code") != NO_MODEL:
        return ""
    match = _SLOT_IN_REASON.search(str(result.get("reason", "")))
    return (match.group(1) or match.group(2)) if match else "?"


@register.filter
def plain_number(value: Any) -> Any:
    """2.0 → 2 (integer ranges print as integers); anything else unchanged."""
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return value


@register.filter
def plain(value: Any) -> Any:
    """A value as a player reads it: yes/no for a boolean (never Python's True/False), 2 for
    2.0; anything else unchanged (and auto-escaped by the template)."""
    if isinstance(value, bool):
        return "yes" if value else "no"
    return plain_number(value)
