"""JSON pointers (RFC 6901) for issue paths."""

from __future__ import annotations

from collections.abc import Iterable


def escape(part: str | int) -> str:
    return str(part).replace("~", "~0").replace("/", "~1")


def pointer(parts: Iterable[str | int]) -> str:
    """("contributes", "commands", 0, "action") -> "/contributes/commands/0/action"."""
    return "".join("/" + escape(part) for part in parts)


def join(base: str, *parts: str | int) -> str:
    """Extend an existing pointer."""
    return base + pointer(parts)
