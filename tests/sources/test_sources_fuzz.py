"""Whatever plugin.toml holds, the loader answers with issues, never with a traceback."""

from __future__ import annotations

import copy
import datetime as dt
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sources.manifest.loader import check_manifest
from tests.sources.conftest import EXAMPLE, example_manifest

# Every value TOML can hold.
scalars = st.one_of(
    st.text(max_size=12),
    st.sampled_from(
        [
            "",
            "5m",
            "-1h",
            "{a}",
            "{",
            "[",
            "(?<=x)",
            "item.state",
            "source",
            "row.x",
            "web",
            "a\x00b",
            "x" * 300,
            "..",
            "/",
        ]
    ),
    st.integers(min_value=-(2**63), max_value=2**63 - 1),
    st.floats(allow_nan=True),
    st.booleans(),
    st.dates(),
    st.times(),
    st.datetimes(timezones=st.just(dt.UTC)),
)
values = st.recursive(
    scalars,
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=3)
    ),
    max_leaves=8,
)
BASE = example_manifest()


def _paths(node: Any, prefix: tuple = ()) -> list[tuple]:
    found = [prefix]
    if isinstance(node, dict):
        for key, value in node.items():
            found += _paths(value, (*prefix, key))
    elif isinstance(node, list):
        for index, value in enumerate(node):
            found += _paths(value, (*prefix, index))
    return found


PATHS = _paths(BASE)[1:]


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.tuples(st.sampled_from(PATHS), values), min_size=1, max_size=4))
def test_any_value_anywhere_gives_issues_not_exceptions(changes: list[tuple[tuple, Any]]) -> None:
    data = copy.deepcopy(BASE)
    for path, value in changes:
        node: Any = data
        try:
            for part in path[:-1]:
                node = node[part]
            node[path[-1]] = value
        except (KeyError, IndexError, TypeError):
            continue  # an earlier change replaced the parent
    result = check_manifest(data, folder=Path(EXAMPLE))
    assert result.ok == (not result.errors)
    for issue in result.errors + result.warnings:
        assert issue.file == "plugin.toml" and issue.code and issue.message
        assert issue.path == "" or issue.path.startswith("/")


@given(st.dictionaries(st.text(max_size=10), values, max_size=5))
def test_any_top_level_table_gives_issues_not_exceptions(data: dict[str, Any]) -> None:
    result = check_manifest(data, folder=Path(EXAMPLE))
    assert not result.ok and result.errors
