"""JSON Pointer (RFC 6901), written once for the whole hub.

Plain Python with no imports from Django or any app: the manifest loader (catalogue/manifest/)
never imports Django, and the world readers, the source-plugin loader, the plugin-data ops and
the input binding of a turn all use the same rules. Their Node twin is pluginhost/node/ops.mjs,
which tests/sessions/test_ops_parity.py holds to the same answers.

The rules, strict as the RFC writes them:

- a pointer is "" (the whole value) or a sequence of "/"-prefixed tokens; "/" is one empty token;
- inside a token, "~" appears only as "~0" (for "~") or "~1" (for "/"); anything else after a
  "~" is refused, not read literally;
- on an array, a token is an index: ASCII digits without a leading zero ("0", "7", "12"; not
  "01", not a full-width "１", not a superscript "²"), or "-", the item after the last one, which
  only a caller that appends or ignores it may accept (``dash=True``).

Every refusal is a PointerError carrying the pointer, a stable rule and a sentence. The callers
translate the rule into their own error codes (an op's `path-invalid`, a binding's missing input).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Any

__all__ = [
    "RULES",
    "PointerError",
    "array_index",
    "escape",
    "format",
    "is_array_index",
    "is_pointer",
    "join",
    "parse",
    "resolve",
    "unescape",
]

# The rules a PointerError names: the first two are syntax, the others are about the data.
RULES = (
    "pointer-start",  # not empty and not starting with "/"
    "pointer-escape",  # a "~" not followed by 0 or 1
    "index-invalid",  # a token on an array that is no index (or "-" where it is not accepted)
    "index-past-end",  # a well-formed index at or past the end of the array
    "member-missing",  # an object without that member
    "not-container",  # the pointer goes on through a string, number, boolean or null
)

_BAD_ESCAPE = re.compile(r"~(?![01])")
_INDEX = re.compile(r"0|[1-9][0-9]*", re.ASCII)


class PointerError(ValueError):
    """A pointer refused: `pointer` (as written), `rule` (one of RULES) and `message`."""

    def __init__(self, rule: str, message: str, *, pointer: str) -> None:
        super().__init__(f"{message} [{rule}]")
        self.rule = rule
        self.message = message
        self.pointer = pointer


# ----------------------------------------------------------------------------- text


def escape(token: str | int) -> str:
    """One token written into a pointer: "~" becomes "~0", then "/" becomes "~1"."""
    return str(token).replace("~", "~0").replace("/", "~1")


def unescape(token: str, *, pointer: str | None = None) -> str:
    """One written token read back; a "~" not followed by 0 or 1 is refused."""
    if "~" in token:
        if _BAD_ESCAPE.search(token):
            where = token if pointer is None else pointer
            raise PointerError(
                "pointer-escape",
                f"{where!r} is not a JSON pointer: ~ must be followed by 0 or 1 "
                "(~0 for ~, ~1 for /)",
                pointer=where,
            )
        # "~1" first, so "~01" reads as "~1" and not as "/".
        token = token.replace("~1", "/").replace("~0", "~")
    return token


def parse(pointer: str) -> list[str]:
    """The tokens of pointer, unescaped: "" -> [], "/" -> [""], "/a~1b/0" -> ["a/b", "0"]."""
    if pointer == "":
        return []
    if not pointer.startswith("/"):
        raise PointerError(
            "pointer-start",
            f"{pointer!r} is not a JSON pointer: it must be empty or start with /",
            pointer=pointer,
        )
    return [unescape(token, pointer=pointer) for token in pointer[1:].split("/")]


def is_pointer(text: str) -> bool:
    try:
        parse(text)
    except PointerError:
        return False
    return True


def format(tokens: Iterable[str | int]) -> str:
    """The pointer to tokens, each escaped: ("a/b", 0) -> "/a~1b/0"; parse's inverse."""
    return "".join("/" + escape(token) for token in tokens)


def join(base: str, *tokens: str | int) -> str:
    """base (already a pointer) extended by tokens: join("/a", "b/c", 1) -> "/a/b~1c/1"."""
    return base + format(tokens)


# ----------------------------------------------------------------------------- arrays


def is_array_index(token: str) -> bool:
    """True for an RFC 6901 array index: ASCII digits, no leading zero ("-" is not one)."""
    return _INDEX.fullmatch(token) is not None


def array_index(token: str, length: int, *, pointer: str, dash: bool = False) -> int:
    """The position token names in an array of length items.

    Raises PointerError `index-invalid` for a token that is no index, `index-past-end` for an
    index at or past the end. With dash=True, "-" is accepted and gives length (the position
    after the last item: where an append goes, and where nothing is).
    """
    if dash and token == "-":
        return length
    if not is_array_index(token):
        raise PointerError("index-invalid", f"{token!r} is not an array index", pointer=pointer)
    # Compare lengths before converting: a thousand-digit index is past any end, and int()
    # refuses digit strings longer than sys.get_int_max_str_digits().
    if len(token) > len(str(length)) or int(token) >= length:
        raise PointerError(
            "index-past-end",
            f"index {token} is past the end of an array of {length}",
            pointer=pointer,
        )
    return int(token)


# ----------------------------------------------------------------------------- data


def _kind(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int | float):
        return "a number"
    if isinstance(value, str):
        return "a string"
    return type(value).__name__


def resolve(value: Any, pointer: str) -> Any:
    """The member of value (JSON data: mappings, lists or tuples, scalars) at pointer.

    Raises PointerError: the pointer's syntax, `member-missing`, `index-invalid`,
    `index-past-end` ("-" included: it names no item) or `not-container`.
    """
    for token in parse(pointer):
        if isinstance(value, Mapping):
            if token not in value:
                raise PointerError(
                    "member-missing", f"there is no member {token!r}", pointer=pointer
                )
            value = value[token]
        elif isinstance(value, list | tuple):
            value = value[array_index(token, len(value), pointer=pointer)]
        else:
            raise PointerError(
                "not-container",
                f"the pointer goes through {_kind(value)}, not an object or array",
                pointer=pointer,
            )
    return value
