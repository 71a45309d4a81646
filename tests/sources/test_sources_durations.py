"""Go durations: the cases of Go's own time.ParseDuration tests, and its refusals."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from sources.manifest.durations import (
    HOUR,
    MICROSECOND,
    MILLISECOND,
    MINUTE,
    NANOSECOND,
    SECOND,
    DurationError,
    parse_duration,
)

VALID = [
    ("0", 0),
    ("5s", 5 * SECOND),
    ("30s", 30 * SECOND),
    ("1478s", 1478 * SECOND),
    ("-5s", -5 * SECOND),
    ("+5s", 5 * SECOND),
    ("-0", 0),
    ("+0", 0),
    ("5.0s", 5 * SECOND),
    ("5.6s", 5 * SECOND + 600 * MILLISECOND),
    ("5.s", 5 * SECOND),
    (".5s", 500 * MILLISECOND),
    ("1.0s", SECOND),
    ("1.00s", SECOND),
    ("1.004s", SECOND + 4 * MILLISECOND),
    ("1.0040s", SECOND + 4 * MILLISECOND),
    ("100.00100s", 100 * SECOND + MILLISECOND),
    ("10ns", 10 * NANOSECOND),
    ("11us", 11 * MICROSECOND),
    ("12µs", 12 * MICROSECOND),  # U+00B5 micro sign
    ("12μs", 12 * MICROSECOND),  # U+03BC Greek mu
    ("13ms", 13 * MILLISECOND),
    ("14s", 14 * SECOND),
    ("15m", 15 * MINUTE),
    ("16h", 16 * HOUR),
    ("300ms", 300 * MILLISECOND),
    ("1h30m", 90 * MINUTE),
    ("-1.5h", -90 * MINUTE),
    ("3h30m", 3 * HOUR + 30 * MINUTE),
    ("10.5s4m", 4 * MINUTE + 10 * SECOND + 500 * MILLISECOND),
    ("-2m3.4s", -(2 * MINUTE + 3 * SECOND + 400 * MILLISECOND)),
    ("1h2m3s4ms5us6ns", HOUR + 2 * MINUTE + 3 * SECOND + 4 * MILLISECOND + 5 * MICROSECOND + 6),
    ("39h9m14.425s", 39 * HOUR + 9 * MINUTE + 14 * SECOND + 425 * MILLISECOND),
    ("52763797000ns", 52763797000),
    ("0.3333333333333333333h", 20 * MINUTE),  # float64 arithmetic, exactly as Go
    ("9007199254740993ns", (1 << 53) + 1),  # past float64 precision, still exact
    ("9223372036854775807ns", (1 << 63) - 1),
    ("9223372036854775.807us", (1 << 63) - 1),
    ("9223372036854ms775us807ns", (1 << 63) - 1),
    ("-9223372036854775808ns", -(1 << 63)),
    ("-9223372036854775.808us", -(1 << 63)),
    ("-9223372036854ms775us808ns", -(1 << 63)),
    ("-2562047h47m16.854775808s", -(1 << 63)),
    ("0.100000000000000000000h", 6 * MINUTE),  # a long fraction stops accumulating
    ("0.830103483285477580700h", 49 * MINUTE + 48 * SECOND + 372539827),
]


@pytest.mark.parametrize(("text", "expected"), VALID)
def test_it_parses_what_go_parses(text: str, expected: int) -> None:
    assert parse_duration(text) == expected


INVALID = [
    ("", 'time: invalid duration ""'),
    ("3", 'time: missing unit in duration "3"'),
    ("-", 'time: invalid duration "-"'),
    ("s", 'time: invalid duration "s"'),
    (".", 'time: invalid duration "."'),
    ("-.", 'time: invalid duration "-."'),
    (".s", 'time: invalid duration ".s"'),
    ("+.s", 'time: invalid duration "+.s"'),
    ("1d", 'time: unknown unit "d" in duration "1d"'),
    ("2w", 'time: unknown unit "w" in duration "2w"'),
    ("1hm", 'time: unknown unit "hm" in duration "1hm"'),
    ("1S", 'time: unknown unit "S" in duration "1S"'),
    (" 1s", 'time: invalid duration " 1s"'),
    ("1s ", 'time: unknown unit "s " in duration "1s "'),
    ("1 s", 'time: unknown unit " s" in duration "1 s"'),
    ("--1s", 'time: invalid duration "--1s"'),
    ("00", 'time: missing unit in duration "00"'),
    ("-00", 'time: missing unit in duration "-00"'),
    ("9223372036854775808ns", 'time: invalid duration "9223372036854775808ns"'),
    ("9223372036854775.808us", 'time: invalid duration "9223372036854775.808us"'),
    ("9223372036854ms775us808ns", 'time: invalid duration "9223372036854ms775us808ns"'),
    ("-9223372036854775809ns", 'time: invalid duration "-9223372036854775809ns"'),
    ("2562047h47m16.854775808s", 'time: invalid duration "2562047h47m16.854775808s"'),
    ("3000000h", 'time: invalid duration "3000000h"'),
    ("99999999999999999999ns", 'time: invalid duration "99999999999999999999ns"'),
]


@pytest.mark.parametrize(("text", "message"), INVALID)
def test_it_refuses_what_go_refuses_with_gos_message(text: str, message: str) -> None:
    with pytest.raises(DurationError) as caught:
        parse_duration(text)
    assert str(caught.value) == message


@given(
    st.lists(
        st.tuples(
            st.integers(min_value=0, max_value=10_000),
            st.sampled_from(["ns", "us", "ms", "s", "m", "h"]),
        ),
        min_size=1,
        max_size=5,
    ),
    st.booleans(),
)
def test_whole_numbers_add_up_like_go(parts: list[tuple[int, str]], negative: bool) -> None:
    units = {
        "ns": NANOSECOND,
        "us": MICROSECOND,
        "ms": MILLISECOND,
        "s": SECOND,
        "m": MINUTE,
        "h": HOUR,
    }
    text = ("-" if negative else "") + "".join(f"{n}{u}" for n, u in parts)
    total = sum(n * units[u] for n, u in parts)
    assert parse_duration(text) == (-total if negative else total)
