"""The `covel` host range: a space-separated list of comparators that must all hold.

Each comparator is one of >=, >, <=, <, = followed by X.Y.Z; a bare X.Y.Z means =.
A pre-release or build suffix ("0.1.0-beta.2", "1.0.0+abc") is ignored on both sides.
"""

from __future__ import annotations

import operator
import re
from collections.abc import Callable

_COMPARATOR = re.compile(r"^(>=|<=|>|<|=)?v?(\d+)\.(\d+)\.(\d+)(?:[-+][0-9A-Za-z.+-]*)?$")
_OPS: dict[str, Callable[[tuple[int, ...], tuple[int, ...]], bool]] = {
    ">=": operator.ge,
    ">": operator.gt,
    "<=": operator.le,
    "<": operator.lt,
    "=": operator.eq,
}

Version = tuple[int, int, int]


class RangeError(ValueError):
    """The range text cannot be parsed."""


def parse_version(text: str) -> Version:
    match = _COMPARATOR.match(text.strip())
    if not match or match.group(1):
        raise RangeError(f"{text!r} is not a version X.Y.Z")
    return int(match.group(2)), int(match.group(3)), int(match.group(4))


def parse_range(text: str) -> list[tuple[str, Version]]:
    parts = text.split()
    if not parts:
        raise RangeError("the range is empty")
    comparators = []
    for part in parts:
        match = _COMPARATOR.match(part)
        if not match:
            raise RangeError(
                f"{part!r} is not a comparator: write >=, >, <=, < or = followed by X.Y.Z, or a bare X.Y.Z"
            )
        comparators.append(
            (match.group(1) or "=", (int(match.group(2)), int(match.group(3)), int(match.group(4))))
        )
    return comparators


def satisfies(version: str, range_text: str) -> bool:
    """True when every comparator of range_text holds for version. Raises RangeError."""
    current = parse_version(version)
    return all(_OPS[op](current, bound) for op, bound in parse_range(range_text))
