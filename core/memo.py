"""Reads made once per unit of work (a turn): the catalogue's rows, the model slots.

Inside memo_scope(), a function decorated with @per_scope answers a repeat call with the same
arguments from what its first call returned; outside one it reads every time, as before. A turn
opens a scope (sessions/turns.py): what staff change mid-turn shows from the next turn, as it
would have a few milliseconds later anyway. Callers must not change what they are given.
"""

from __future__ import annotations

import contextlib
import contextvars
import functools
from collections.abc import Callable, Iterator
from typing import Any, TypeVar

F = TypeVar("F", bound=Callable[..., Any])

_SCOPE: contextvars.ContextVar[dict[Any, Any] | None] = contextvars.ContextVar(
    "covel_memo_scope", default=None
)


@contextlib.contextmanager
def memo_scope() -> Iterator[None]:
    """A scope of its own, or the caller's when one is open already."""
    if _SCOPE.get() is not None:
        yield
        return
    token = _SCOPE.set({})
    try:
        yield
    finally:
        _SCOPE.reset(token)


def per_scope(func: F) -> F:
    """Memoize func within the open memo_scope() (positional, hashable arguments only)."""

    @functools.wraps(func)
    def wrapper(*args: Any) -> Any:
        cache = _SCOPE.get()
        if cache is None:
            return func(*args)
        key = (func, args)
        if key not in cache:
            cache[key] = func(*args)
        return cache[key]

    return wrapper  # type: ignore[return-value]
