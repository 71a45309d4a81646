"""JSON pointers (RFC 6901): issue paths, and the check of pointers a manifest writes."""

from __future__ import annotations

import re
from collections.abc import Iterable


def escape(part: str | int) -> str:
    return str(part).replace("~", "~0").replace("/", "~1")


def pointer(parts: Iterable[str | int]) -> str:
    """("contributes", "commands", 0, "action") -> "/contributes/commands/0/action"."""
    return "".join("/" + escape(part) for part in parts)


def join(base: str, *parts: str | int) -> str:
    """Extend an existing pointer."""
    return base + pointer(parts)


# RFC 6901: "" (the whole value), or "/"-prefixed tokens in which "~" is only "~0" or "~1".
_POINTER = re.compile(r"(?:/(?:[^~/]|~[01])*)*")


def is_pointer(text: str) -> bool:
    return _POINTER.fullmatch(text) is not None
