"""Property tests: whatever the frontmatter, the loader returns a verdict and never fails itself.

"Never crashes" is checked strictly: no exception escapes, and no internal-error issue (the
loader's catch-all for its own bugs) appears either.
"""

from __future__ import annotations

import copy
import json
import tempfile
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from catalogue.manifest import LoadResult, load_package

from .conftest import BASE, BASE_FILES, write_package

KEYS = st.sampled_from(
    [
        "id",
        "kind",
        "version",
        "covel",
        "description",
        "tags",
        "author",
        "links",
        "url",
        "runtime",
        "schedule",
        "stage",
        "trigger",
        "type",
        "needs",
        "after",
        "detached",
        "settle",
        "maxSettleWaitMs",
        "io",
        "inputs",
        "from",
        "contract",
        "runtime",
        "kernel",
        "scope",
        "select",
        "required",
        "output",
        "recordAs",
        "schema",
        "agent",
        "function",
        "handler",
        "tools",
        "plugin",
        "datasets",
        "contributes",
        "commands",
        "arguments",
        "variadic",
        "action",
        "actions",
        "settings",
        "options",
        "permissions",
        "http",
        "origin",
        "methods",
        "ui",
        "view",
        "provides",
        "requires",
        "subagentOnly",
        "visibility",
        "",
        "~",
        "/",
        "0",
    ]
) | st.text(max_size=8)
SCALARS = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**63), max_value=2**63)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=20)
    | st.sampled_from(
        [
            "./schemas/note.schema.json",
            "../x",
            "/etc/passwd",
            "https://a.example",
            "http://x",
            "x@1",
            "notes",
            "notes/a",
            "story",
            "manual",
            "event",
            "auto",
            "post-turn",
            "setup",
            "committed",
            "set",
            ">=0.1.0",
        ]
    )
)
VALUES = st.recursive(
    SCALARS,
    lambda children: st.lists(children, max_size=4) | st.dictionaries(KEYS, children, max_size=5),
    max_leaves=25,
)


def verdict(frontmatter: Any, runtimes: dict[str, Any] | None = None) -> LoadResult:
    with tempfile.TemporaryDirectory() as folder:
        root = write_package(
            Path(folder) / "notes",
            json.dumps(frontmatter),
            files=dict(BASE_FILES),
            runtimes={k: json.dumps(v) for k, v in (runtimes or {}).items()},
        )
        result = load_package(root)
    assert isinstance(result, LoadResult)
    assert not [e for e in result.errors if e.code == "internal-error"], result.errors
    for issue in (*result.errors, *result.warnings):
        assert issue.code and issue.message and (issue.path == "" or issue.path.startswith("/"))
    assert result.ok == (result.manifest is not None)
    return result


FAST = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@FAST
@given(VALUES)
def test_any_frontmatter_gets_a_verdict(frontmatter: Any) -> None:
    verdict(frontmatter)


@FAST
@given(
    st.dictionaries(KEYS, VALUES, max_size=6),
    st.dictionaries(st.sampled_from(["a", "b", "Bad"]), VALUES, max_size=2),
)
def test_any_package_with_runtime_files_gets_a_verdict(
    frontmatter: dict[str, Any], runtimes: dict[str, Any]
) -> None:
    verdict(frontmatter, runtimes)


def _pointers(value: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    found = [prefix]
    if isinstance(value, dict):
        for key, child in value.items():
            found.extend(_pointers(child, (*prefix, key)))
    elif isinstance(value, list):
        for index, child in enumerate(value):
            found.extend(_pointers(child, (*prefix, index)))
    return found


BASE_POINTERS = [p for p in _pointers(BASE) if p]


@st.composite
def mutated_base(draw: st.DrawFn) -> dict[str, Any]:
    data = copy.deepcopy(BASE)
    for _ in range(draw(st.integers(min_value=1, max_value=4))):
        where = draw(st.sampled_from(BASE_POINTERS))
        node: Any = data
        try:
            for part in where[:-1]:
                node = node[part]
            last = where[-1]
            action = draw(st.sampled_from(["replace", "delete", "add"]))
            if action == "replace":
                node[last] = draw(VALUES)
            elif action == "delete":
                del node[last]
            elif isinstance(node, dict):
                node[draw(KEYS)] = draw(VALUES)
            elif isinstance(node, list):
                node.append(draw(VALUES))
        except (KeyError, IndexError, TypeError):
            continue  # an earlier mutation removed or reshaped this spot
    return data


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(mutated_base())
def test_mutations_of_a_valid_manifest_get_a_verdict(frontmatter: dict[str, Any]) -> None:
    verdict(frontmatter)


@FAST
@given(st.text(max_size=300))
def test_any_yaml_text_gets_a_verdict(text: str) -> None:
    with tempfile.TemporaryDirectory() as folder:
        root = Path(folder) / "notes"
        root.mkdir()
        (root / "PLUGIN.md").write_text(f"---\n{text}\n---\nbody\n", encoding="utf-8")
        result = load_package(root)
    assert isinstance(result, LoadResult)
    assert not [e for e in result.errors if e.code == "internal-error"], result.errors


def test_the_unmutated_base_is_valid() -> None:
    assert verdict(BASE).ok
