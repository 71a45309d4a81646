"""The handler's try-run of ctx.pluginData.update (pluginhost/node/ops.mjs, in Node) and the commit
(sessions/operations.py) apply operations alike: same result, or the same rule, op and path.

Otherwise a write the handler accepted could be refused at commit, or one it refused would have
committed. One Node process answers every example of a module.
"""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from test_sessions_operations import json_values, op_strategy

from core import pointer
from sessions.errors import OperationError
from sessions.operations import MISSING, apply_ops

OPS_MODULE = Path(__file__).resolve().parents[2] / "pluginhost" / "node" / "ops.mjs"

NODE_LOOP = f"""
import {{ createInterface }} from "node:readline";
import {{ applyOperations, OperationError }} from {json.dumps(OPS_MODULE.as_uri())};
for await (const line of createInterface({{ input: process.stdin }})) {{
  const {{ value, ops }} = JSON.parse(line);
  let answer;
  try {{
    answer = {{ value: applyOperations(value, ops) }};
  }} catch (error) {{
    answer = error instanceof OperationError
      ? {{ rule: error.rule, index: error.index, path: error.path }}
      : {{ rule: "crashed", message: String(error) }};
  }}
  process.stdout.write(JSON.stringify(answer) + "\\n");
}}
"""


@pytest.fixture(scope="module")
def node_ops() -> Iterator[Any]:
    process = subprocess.Popen(
        ["node", "--input-type=module", "-e", NODE_LOOP],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )

    def apply(value: Any, op_list: list[Any]) -> dict[str, Any]:
        sent = None if value is MISSING else value
        process.stdin.write(json.dumps({"value": sent, "ops": op_list}) + "\n")
        process.stdin.flush()
        return json.loads(process.stdout.readline())

    yield apply
    process.stdin.close()
    process.wait(timeout=10)


def python_answer(value: Any, op_list: list[Any]) -> dict[str, Any]:
    try:
        result = apply_ops(value, op_list)
    except OperationError as exc:
        return {"rule": exc.code, "index": exc.index, "path": exc.path}
    # Node's overlay has one "nothing": a deleted record and a stored null both read as null.
    return {"value": None if result is MISSING else result}


# The tokens random paths are made of: members the values have (some needing an escape), array
# indexes, what only looks like one (leading zeros, signs, spaces, and digits to str.isdigit that
# are not ASCII: full-width, superscript, Arabic-Indic, NKo, mathematical, circled), "-", the
# empty token, indexes far past any end (hundreds of digits), "__proto__" and random text.
tokens = st.one_of(
    st.sampled_from(["a", "b", "id", "n", "", "a/b", "~", "__proto__", "constructor"]),
    st.sampled_from(["0", "1", "2", "3"]),
    st.sampled_from(["00", "01", "-0", "+1", "1.0", " 1", "1e0", "0x1"]),
    st.sampled_from(["\uff11", "\u00b2", "\u0663", "\u07c0", "\U0001d7d8", "\u2460"]),
    st.just("-"),
    st.integers(4, 10**40).map(str),
    st.integers(1, 400).map(lambda n: "9" * n),
    st.text(max_size=4),
)
# Written as they stand, not escaped: "~" escapes RFC 6901 refuses, and some it reads.
raw_pieces = st.sampled_from(["~", "~2", "a~", "~~", "~a", "~01", "~10", "~0~1", "~1~0"])
random_paths = st.one_of(
    st.lists(tokens, max_size=4).map(pointer.format),
    st.lists(tokens.map(pointer.escape) | raw_pieces, min_size=1, max_size=4).map(
        lambda pieces: "".join("/" + piece for piece in pieces)
    ),
    st.sampled_from(["a", "a/b", "~1", "#/a", " /a"]),  # no leading "/"
)
ops = op_strategy(random_paths)

# Op shapes the commit refuses: the try-run must refuse them too, with the same rule.
bad_ops = st.sampled_from(
    [
        {"op": "inc", "path": "/a"},  # no by
        {"op": "inc", "by": True},
        {"op": "inc", "by": 1, "min": 3, "max": 1},
        {"op": "set", "path": "a.b", "value": 1},  # a dotted path, not a JSON pointer
        {"op": "set", "path": ["a"], "value": 1},
        {"op": "merge", "value": [1]},
        {"op": "remove", "id": 1},  # remove takes index or match
        {"op": "remove", "index": 0, "match": 1},
        {"op": "remove"},
        {"op": "insert", "index": -1, "value": 1},
        {"op": "upsertItem", "value": {"id": 1}, "key": "id", "match": {"id": 1}},
        {"op": "upsertItem", "value": 3},
        {"op": "upsertItem", "value": {"name": "x"}},  # no id to find the item by
        {"op": "rename", "path": "/a"},
        {"op": "set"},
        {"op": "set", "value": 1, "extra": True},
        "set",
    ]
)
more_ops = st.one_of(
    ops,
    bad_ops,
    st.builds(
        lambda m, p: {"op": "remove", "match": m, "path": p},
        st.dictionaries(
            st.sampled_from(["id", "n"]), st.integers(0, 2) | st.booleans(), max_size=2
        ),
        random_paths,
    ),
    st.builds(
        lambda v, m, p: {"op": "upsertItem", "value": v, "match": m, "path": p},
        json_values,
        st.dictionaries(st.sampled_from(["id", "n"]), st.integers(0, 2), min_size=1, max_size=2),
        random_paths,
    ),
    st.builds(
        lambda i, n, p: {"op": "upsertItem", "key": "n", "value": {"n": i, "id": n}, "path": p},
        st.integers(0, 2) | st.booleans(),
        st.integers(0, 2),
        random_paths,
    ),
)
values = st.recursive(
    st.booleans() | st.integers(-5, 5) | st.text(max_size=3),
    lambda inner: (
        st.lists(inner, max_size=3)
        | st.dictionaries(
            st.sampled_from(["a", "b", "id", "n", "", "a/b", "~", "__proto__"]), inner, max_size=3
        )
    ),
    max_leaves=8,
)


@settings(max_examples=600, deadline=None)
@given(current=values | st.just(MISSING), op_list=st.lists(more_ops, min_size=1, max_size=4))
def test_node_and_python_apply_every_op_list_alike(node_ops, current, op_list):
    assert node_ops(current, op_list) == python_answer(current, op_list)


@pytest.mark.parametrize(
    ("current", "op_list", "expected"),
    [
        # A list item is removed by match, not by an id field of the op.
        ([{"id": 1}, {"id": 2}], [{"op": "remove", "match": {"id": 2}}], {"value": [{"id": 1}]}),
        # upsertItem replaces the item it finds; it does not merge into it.
        (
            [{"id": 1, "n": 5}],
            [{"op": "upsertItem", "value": {"id": 1, "m": 6}}],
            {"value": [{"id": 1, "m": 6}]},
        ),
        # true is not 1 when looking for the item.
        ([1, True], [{"op": "remove", "match": True}], {"value": [1]}),
        ({"a": {"b": 1}}, [{"op": "set", "path": "a.b", "value": 2}], "invalid-op"),
        ({"gold": 2}, [{"op": "inc", "path": "/gold", "by": -3, "min": 0}], "out-of-range"),
        ({}, [{"op": "inc", "path": "/x/y", "by": 1}], "path-missing"),
        ({"a": [1]}, [{"op": "delete", "path": "/a/5"}], {"value": {"a": [1]}}),
        ({"a": 1}, [{"op": "delete"}], {"value": None}),
        # An array index is ASCII digits: Python's str.isdigit also took a full-width "１" (as 1)
        # and a superscript "²" (which int() then refused with a bare ValueError).
        ({"items": [1, 2]}, [{"op": "set", "path": "/items/\uff11", "value": 0}], "path-invalid"),
        ({"items": [1, 2]}, [{"op": "set", "path": "/items/\u00b2", "value": 0}], "path-invalid"),
        ({"items": [1, 2]}, [{"op": "delete", "path": "/items/\uff11"}], "path-invalid"),
        ({"items": [1, 2]}, [{"op": "delete", "path": "/items/\u00b2"}], "path-invalid"),
        ({"items": [1, 2]}, [{"op": "delete", "path": "/items/x"}], "path-invalid"),
        # Deleting "-" or an index past the end deletes nothing, however long the index.
        ({"items": [1]}, [{"op": "delete", "path": "/items/-"}], {"value": {"items": [1]}}),
        (
            {"items": [1]},
            [{"op": "delete", "path": "/items/" + "9" * 5000}],
            {"value": {"items": [1]}},
        ),
        (
            {"items": [1]},
            [{"op": "set", "path": "/items/" + "9" * 5000, "value": 0}],
            "path-missing",
        ),
        # "~" is only "~0" or "~1"; both sides used to read "~2" as itself.
        ({"a~2": 1}, [{"op": "set", "path": "/a~2", "value": 0}], "invalid-op"),
        # A member named __proto__ is a member like any other (Node used to set the prototype).
        (
            {},
            [{"op": "set", "path": "/__proto__", "value": {"x": 1}}],
            {"value": {"__proto__": {"x": 1}}},
        ),
    ],
)
def test_rules_where_the_try_run_used_to_differ(node_ops, current, op_list, expected):
    answer = node_ops(current, op_list)
    assert answer == python_answer(current, op_list)
    if isinstance(expected, str):
        assert answer["rule"] == expected
    else:
        assert answer == expected


def test_the_handler_is_told_the_rule_and_the_op(node_ops):
    script = f"""
    import {{ applyOperations }} from {json.dumps(OPS_MODULE.as_uri())};
    try {{ applyOperations({{gold: 2}}, [{{op: "set", path: "/name", value: "x"}},
                                     {{op: "inc", path: "/gold", by: -3, min: 0}}]); }}
    catch (error) {{ console.log(JSON.stringify([error.code, error.message])); }}
    """
    out = subprocess.run(
        ["node", "--input-type=module", "-e", script], capture_output=True, text=True, check=True
    )
    assert json.loads(out.stdout) == [
        "operation_failed",
        "op 1 at /gold: inc by -3 gives -1, below min 0 [out-of-range]",
    ]
