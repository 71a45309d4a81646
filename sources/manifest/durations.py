"""Go durations, parsed exactly as Go's time.ParseDuration does.

A duration is an optional sign and a sequence of decimal numbers, each with an optional
fraction and a unit: "300ms", "-1.5h", "2h45m". Units: ns, us (or µs U+00B5, μs U+03BC),
ms, s, m, h. "0" alone needs no unit. There is no "d". The value is an int64 count of
nanoseconds; anything beyond it is an error, as in Go.
"""

from __future__ import annotations

NANOSECOND = 1
MICROSECOND = 1000 * NANOSECOND
MILLISECOND = 1000 * MICROSECOND
SECOND = 1000 * MILLISECOND
MINUTE = 60 * SECOND
HOUR = 60 * MINUTE

_UNITS = {
    "ns": NANOSECOND,
    "us": MICROSECOND,
    "\u00b5s": MICROSECOND,  # micro sign
    "\u03bcs": MICROSECOND,  # Greek small letter mu
    "ms": MILLISECOND,
    "s": SECOND,
    "m": MINUTE,
    "h": HOUR,
}
_LIMIT = 1 << 63  # Go accumulates in uint64 and checks against 1<<63


class DurationError(ValueError):
    """A string Go's time.ParseDuration refuses; the message is Go's."""


def _quote(text: str) -> str:
    # Go's quote() wraps in double quotes and escapes quotes and backslashes.
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def _is_digit(char: str) -> bool:
    return "0" <= char <= "9"


def parse_duration(text: str) -> int:
    """The duration in nanoseconds, or DurationError with Go's message."""
    if not isinstance(text, str):
        raise DurationError(f"time: invalid duration {text!r}")
    orig = text
    invalid = DurationError("time: invalid duration " + _quote(orig))
    s = text
    total = 0
    negative = False
    if s and s[0] in "+-":
        negative = s[0] == "-"
        s = s[1:]
    if s == "0":  # the only unit-less duration
        return 0
    if s == "":
        raise invalid
    while s:
        if not (s[0] == "." or _is_digit(s[0])):
            raise invalid
        # Leading integer: Go errors as soon as it would pass 1<<63.
        i = 0
        value = 0
        while i < len(s) and _is_digit(s[i]):
            if value > _LIMIT // 10:
                raise invalid
            value = value * 10 + int(s[i])
            if value > _LIMIT:
                raise invalid
            i += 1
        before = i > 0
        s = s[i:]
        # Fraction: digits past int64 precision are read but ignored, as in Go.
        fraction = 0
        scale = 1.0
        after = False
        if s and s[0] == ".":
            s = s[1:]
            i = 0
            overflow = False
            while i < len(s) and _is_digit(s[i]):
                if not overflow:
                    if fraction > (_LIMIT - 1) // 10:
                        overflow = True
                    else:
                        candidate = fraction * 10 + int(s[i])
                        if candidate > _LIMIT:
                            overflow = True
                        else:
                            fraction = candidate
                            scale *= 10
                i += 1
            after = i > 0
            s = s[i:]
        if not before and not after:  # ".s" or "-.s"
            raise invalid
        i = 0
        while i < len(s) and not (s[i] == "." or _is_digit(s[i])):
            i += 1
        if i == 0:
            raise DurationError("time: missing unit in duration " + _quote(orig))
        unit_name, s = s[:i], s[i:]
        unit = _UNITS.get(unit_name)
        if unit is None:
            raise DurationError(
                "time: unknown unit " + _quote(unit_name) + " in duration " + _quote(orig)
            )
        if value > _LIMIT // unit:
            raise invalid
        value *= unit
        if fraction > 0:
            # float64, like Go: nanosecond-accurate for fractions of an hour.
            value += int(float(fraction) * (float(unit) / scale))
            if value > _LIMIT:
                raise invalid
        total += value
        if total > _LIMIT:
            raise invalid
    if negative:
        return -total
    if total > _LIMIT - 1:
        raise invalid
    return total


def format_duration(nanoseconds: int) -> str:
    """A short human form ("1h30m", "300ms", "0s"), close to Go's Duration.String."""
    if nanoseconds == 0:
        return "0s"
    sign = "-" if nanoseconds < 0 else ""
    n = abs(nanoseconds)
    if n < SECOND:
        for name, unit in (("ms", MILLISECOND), ("µs", MICROSECOND), ("ns", NANOSECOND)):
            if n >= unit:
                value = n / unit
                return f"{sign}{value:g}{name}"
    hours, rest = divmod(n, HOUR)
    minutes, rest = divmod(rest, MINUTE)
    seconds = rest / SECOND
    out = sign
    if hours:
        out += f"{hours}h"
    if hours or minutes:
        out += f"{minutes}m"
    out += f"{seconds:g}s"
    return out


def to_seconds(nanoseconds: int) -> float:
    return nanoseconds / SECOND
