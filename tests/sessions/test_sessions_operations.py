"""Plugin-data operations: each op, all-or-nothing lists, the size limit and dataset checks."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sessions.errors import OperationError, WriteRefused
from sessions.operations import (
    MAX_VALUE_BYTES,
    MISSING,
    Dataset,
    apply_op,
    apply_ops,
    datasets_of,
    proposal_ops,
    value_size,
    write_value,
)

# ---------------------------------------------------------------- each op


def test_set_replaces_the_value_or_a_member():
    assert apply_ops({"a": 1}, [{"op": "set", "value": [1, 2]}]) == [1, 2]
    assert apply_ops(MISSING, [{"op": "set", "value": 5}]) == 5
    assert apply_ops({"a": 1}, [{"op": "set", "path": "/b", "value": 2}]) == {"a": 1, "b": 2}
    assert apply_ops({"a": [0, 1]}, [{"op": "set", "path": "/a/1", "value": 9}]) == {"a": [0, 9]}


def test_merge_is_shallow_and_creates_a_missing_value():
    current = {"name": "Ada", "tier": {"level": 1, "label": "cold"}}
    merged = apply_ops(current, [{"op": "merge", "value": {"tier": {"level": 2}, "score": 5}}])
    assert merged == {"name": "Ada", "tier": {"level": 2}, "score": 5}
    assert apply_ops(MISSING, [{"op": "merge", "value": {"a": 1}}]) == {"a": 1}
    with pytest.raises(OperationError) as caught:
        apply_ops([1], [{"op": "merge", "value": {"a": 1}}])
    assert caught.value.code == "type-mismatch"


def test_inc_adds_and_starts_from_zero():
    assert apply_ops(10, [{"op": "inc", "by": -3}]) == 7
    assert apply_ops(MISSING, [{"op": "inc", "by": 2}]) == 2
    assert apply_ops({"q": 1}, [{"op": "inc", "path": "/q", "by": 4, "max": 5}]) == {"q": 5}
    assert apply_ops(1.5, [{"op": "inc", "by": 1}]) == 2.5


def test_inc_below_min_is_refused_and_changes_nothing():
    current = {"gold": 2, "log": ["start"]}
    before = copy.deepcopy(current)
    ops = [
        {"op": "append", "path": "/log", "value": "paid"},
        {"op": "inc", "path": "/gold", "by": -3, "min": 0},
    ]
    with pytest.raises(OperationError) as caught:
        apply_ops(current, ops)
    error = caught.value
    assert (error.code, error.index, error.path) == ("out-of-range", 1, "/gold")
    assert "gives -1, below min 0" in error.message
    assert current == before  # not even the append before it


def test_inc_above_max_and_on_a_non_number():
    with pytest.raises(OperationError, match="above max 10"):
        apply_ops(9, [{"op": "inc", "by": 2, "max": 10}])
    with pytest.raises(OperationError) as caught:
        apply_ops("nine", [{"op": "inc", "by": 1}])
    assert caught.value.code == "type-mismatch"
    with pytest.raises(OperationError) as caught:
        apply_ops(True, [{"op": "inc", "by": 1}])
    assert caught.value.code == "type-mismatch"


def test_append_and_insert():
    assert apply_ops(MISSING, [{"op": "append", "value": "a"}]) == ["a"]
    assert apply_ops(["a", "c"], [{"op": "insert", "index": 1, "value": "b"}]) == ["a", "b", "c"]
    assert apply_ops(["a"], [{"op": "insert", "index": 1, "value": "b"}]) == ["a", "b"]
    with pytest.raises(OperationError) as caught:
        apply_ops(["a"], [{"op": "insert", "index": 3, "value": "b"}])
    assert caught.value.code == "index-out-of-range"


def test_remove_by_index_or_match():
    assert apply_ops(["a", "b", "c"], [{"op": "remove", "index": 1}]) == ["a", "c"]
    items = [{"id": "x", "n": 1}, {"id": "y", "n": 2}, {"id": "x", "n": 3}]
    assert apply_ops(items, [{"op": "remove", "match": {"id": "x"}}]) == [{"id": "y", "n": 2}]
    assert apply_ops(["a", "b"], [{"op": "remove", "match": "b"}]) == ["a"]
    # Removing what is not there by match changes nothing; by index it is refused.
    assert apply_ops(["a"], [{"op": "remove", "match": "z"}]) == ["a"]
    with pytest.raises(OperationError) as caught:
        apply_ops(["a"], [{"op": "remove", "index": 4}])
    assert caught.value.code == "index-out-of-range"


def test_upsert_item_by_key_or_match():
    items = [{"id": "sword", "qty": 1}]
    assert apply_ops(items, [{"op": "upsertItem", "value": {"id": "sword", "qty": 2}}]) == [
        {"id": "sword", "qty": 2}
    ]
    assert apply_ops(items, [{"op": "upsertItem", "value": {"id": "bow", "qty": 1}}]) == [
        {"id": "sword", "qty": 1},
        {"id": "bow", "qty": 1},
    ]
    named = [{"name": "Ada", "score": 1}]
    assert apply_ops(
        named, [{"op": "upsertItem", "key": "name", "value": {"name": "Ada", "score": 3}}]
    ) == [{"name": "Ada", "score": 3}]
    assert apply_ops(
        named, [{"op": "upsertItem", "match": {"score": 1}, "value": {"name": "Bo", "score": 0}}]
    ) == [{"name": "Bo", "score": 0}]
    with pytest.raises(OperationError, match="no 'id' field"):
        apply_ops(items, [{"op": "upsertItem", "value": {"qty": 3}}])


def test_delete_the_value_or_a_member():
    assert apply_ops({"a": 1}, [{"op": "delete"}]) is MISSING
    assert apply_ops(MISSING, [{"op": "delete"}]) is MISSING
    assert apply_ops({"a": 1, "b": 2}, [{"op": "delete", "path": "/a"}]) == {"b": 2}
    assert apply_ops({"a": [1, 2]}, [{"op": "delete", "path": "/a/0"}]) == {"a": [2]}
    assert apply_ops({"a": 1}, [{"op": "delete", "path": "/zzz"}]) == {"a": 1}
    # A set after a delete in the same list writes a fresh value.
    assert apply_ops({"a": 1}, [{"op": "delete"}, {"op": "set", "value": {"b": 2}}]) == {"b": 2}


@pytest.mark.parametrize(
    ("op", "code"),
    [
        ({"op": "explode"}, "unknown-op"),
        ({"op": "inc"}, "invalid-op"),
        ({"op": "inc", "by": "1"}, "invalid-op"),
        ({"op": "inc", "by": 1, "min": 5, "max": 1}, "invalid-op"),
        ({"op": "set", "value": 1, "extra": True}, "invalid-op"),
        ({"op": "remove", "index": 0, "match": 1}, "invalid-op"),
        ({"op": "insert", "index": -1, "value": 1}, "invalid-op"),
        ({"op": "merge", "value": [1]}, "invalid-op"),
        ({"op": "set", "path": "no-slash", "value": 1}, "invalid-op"),
        ("set", "invalid-op"),
    ],
)
def test_malformed_ops_are_refused_with_a_code(op, code):
    with pytest.raises(OperationError) as caught:
        apply_op({"a": 1}, op)
    assert caught.value.code == code


def test_a_path_through_nothing_is_refused():
    with pytest.raises(OperationError) as caught:
        apply_ops({"a": 1}, [{"op": "inc", "path": "/b/c", "by": 1}])
    assert (caught.value.code, caught.value.path) == ("path-missing", "/b")
    with pytest.raises(OperationError) as caught:
        apply_ops(MISSING, [{"op": "set", "path": "/a", "value": 1}])
    assert caught.value.code == "path-missing"


# ---------------------------------------------------------------- all or nothing (property)

json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-5, 5) | st.text(max_size=3),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.sampled_from("abc"), inner, max_size=3)
    ),
    max_leaves=8,
)
paths = st.sampled_from(["", "", "/a", "/b", "/a/0", "/0"])


def op_strategy(paths: st.SearchStrategy[str]) -> st.SearchStrategy[dict[str, Any]]:
    """Well-formed ops of every kind, each at a path drawn from paths."""
    return st.one_of(
        st.builds(lambda v, p: {"op": "set", "value": v, "path": p}, json_values, paths),
        st.builds(
            lambda v, p: {"op": "merge", "value": v, "path": p},
            st.dictionaries(st.sampled_from("abc"), json_values, max_size=2),
            paths,
        ),
        st.builds(
            lambda by, lo, p: {"op": "inc", "by": by, "min": lo, "path": p},
            st.integers(-5, 5),
            st.integers(-3, 0),
            paths,
        ),
        st.builds(lambda v, p: {"op": "append", "value": v, "path": p}, json_values, paths),
        st.builds(
            lambda i, v, p: {"op": "insert", "index": i, "value": v, "path": p},
            st.integers(0, 3),
            json_values,
            paths,
        ),
        st.builds(lambda i, p: {"op": "remove", "index": i, "path": p}, st.integers(0, 3), paths),
        st.builds(lambda m, p: {"op": "remove", "match": m, "path": p}, json_values, paths),
        st.builds(
            lambda v, p: {"op": "upsertItem", "value": {"id": v}, "path": p},
            st.integers(0, 2),
            paths,
        ),
        st.builds(lambda p: {"op": "delete", "path": p}, paths),
    )


ops = op_strategy(paths)


@settings(max_examples=300, deadline=None)
@given(current=json_values | st.just(MISSING), op_list=st.lists(ops, min_size=1, max_size=5))
def test_op_lists_apply_fully_or_not_at_all(current, op_list):
    before = copy.deepcopy(current)
    try:
        result = apply_ops(current, op_list)
    except OperationError as exc:
        assert current == before or (current is MISSING and before is MISSING)
        assert exc.index is not None and 0 <= exc.index < len(op_list)
        # Every op before the failing one applies on its own: the failure is the op's, not earlier ones'.
        value = current
        for op in op_list[: exc.index]:
            value = apply_op(value, op)
        with pytest.raises(OperationError):
            apply_op(value, op_list[exc.index])
        return
    assert current == before or (current is MISSING and before is MISSING)
    value = current
    for op in op_list:
        value = apply_op(value, op)
    assert value == result or (value is MISSING and result is MISSING)
    if result is not MISSING:
        json.dumps(result)  # still plain JSON


# ---------------------------------------------------------------- commit rules


def test_a_value_over_the_size_limit_is_refused_naming_plugin_namespace_key_and_size():
    big = "x" * (MAX_VALUE_BYTES - 1)  # plus two quotes: 1 byte over
    assert value_size(big) == MAX_VALUE_BYTES + 1
    with pytest.raises(WriteRefused) as caught:
        write_value(
            MISSING, [{"op": "set", "value": big}], plugin="notebook", namespace="notes", key="huge"
        )
    message = str(caught.value)
    assert caught.value.code == "value-too-large"
    assert message.startswith("notebook/notes/huge:")
    assert f"{MAX_VALUE_BYTES + 1} bytes" in message and str(MAX_VALUE_BYTES) in message
    exact = "x" * (MAX_VALUE_BYTES - 2)
    assert (
        write_value(MISSING, [{"op": "set", "value": exact}], plugin="p", namespace="n", key="k")
        == exact
    )


def test_the_size_counts_utf8_bytes():
    text = "é" * (
        MAX_VALUE_BYTES // 2
    )  # two bytes each: over the limit in bytes, not in characters
    with pytest.raises(WriteRefused, match="value-too-large"):
        write_value(MISSING, [{"op": "set", "value": text}], plugin="p", namespace="n", key="k")


@pytest.fixture
def satchel(bundled) -> dict[str, Dataset]:
    return datasets_of(bundled["satchel"])


def test_dataset_declarations_are_read_from_the_package(satchel):
    assert set(satchel) == {"items", "wallet"}
    assert satchel["items"].key == "id"
    assert satchel["wallet"].ops == frozenset({"inc", "set"})
    assert satchel["items"].schema["title"] == "Inventory item"


def test_dataset_writes_are_validated_against_the_schema(satchel):
    good = {"id": "rope", "name": "Rope", "quantity": 1}
    assert (
        write_value(
            MISSING,
            [{"op": "set", "value": good}],
            plugin="satchel",
            namespace="items",
            key="rope",
            dataset=satchel["items"],
        )
        == good
    )
    with pytest.raises(WriteRefused) as caught:
        write_value(
            good,
            [{"op": "set", "path": "/quantity", "value": -2}],
            plugin="satchel",
            namespace="items",
            key="rope",
            dataset=satchel["items"],
        )
    assert caught.value.code == "schema-mismatch" and caught.value.path == "/quantity"
    assert "satchel/items/rope" in str(caught.value)


def test_dataset_ops_are_limited_to_the_declared_kinds(satchel):
    with pytest.raises(WriteRefused) as caught:
        write_value(
            5,
            [{"op": "append", "value": 1}],
            plugin="satchel",
            namespace="wallet",
            key="gold",
            dataset=satchel["wallet"],
        )
    assert caught.value.code == "op-not-allowed"
    assert "allows inc, set" in str(caught.value)
    assert (
        write_value(
            5,
            [{"op": "inc", "by": -5, "min": 0}],
            plugin="satchel",
            namespace="wallet",
            key="gold",
            dataset=satchel["wallet"],
        )
        == 0
    )


def test_a_keyed_dataset_record_must_carry_its_key(satchel):
    with pytest.raises(WriteRefused) as caught:
        write_value(
            MISSING,
            [{"op": "set", "value": {"id": "rope", "name": "Rope", "quantity": 1}}],
            plugin="satchel",
            namespace="items",
            key="torch",
            dataset=satchel["items"],
        )
    assert caught.value.code == "key-mismatch"


def test_deleting_a_dataset_record_needs_no_schema_match(satchel):
    assert (
        write_value(
            {"id": "rope"},
            [{"op": "delete"}],
            plugin="satchel",
            namespace="items",
            key="rope",
            dataset=satchel["items"],
        )
        is MISSING
    )


def test_an_unreadable_dataset_schema_refuses_writes(pkg):
    manifest = pkg(
        "broken",
        contributes={"datasets": {"things": {"schema": "./schemas/thing.schema.json"}}},
        files={"schemas/thing.schema.json": "{}"},
    )
    # The schema file goes bad after the package was indexed.
    Path(manifest.path, "schemas/thing.schema.json").write_text("{not json", encoding="utf-8")
    dataset = datasets_of(manifest)["things"]
    with pytest.raises(WriteRefused, match="schema-mismatch"):
        write_value(
            MISSING,
            [{"op": "set", "value": 1}],
            plugin="broken",
            namespace="things",
            key="k",
            dataset=dataset,
        )


def test_write_value_wraps_op_failures_with_the_key(satchel):
    with pytest.raises(WriteRefused) as caught:
        write_value(
            2,
            [{"op": "inc", "by": -3, "min": 0}],
            plugin="satchel",
            namespace="wallet",
            key="gold",
            dataset=satchel["wallet"],
        )
    assert caught.value.code == "out-of-range"
    assert str(caught.value).startswith(
        "satchel/wallet/gold: op 0: inc by -3 gives -1, below min 0"
    )


def test_proposal_payloads_carry_a_value_or_ops():
    assert proposal_ops({"namespace": "notes", "key": "k", "value": {"t": 1}}) == [
        {"op": "set", "value": {"t": 1}}
    ]
    ops = [{"op": "inc", "by": 2, "min": 0}]
    assert proposal_ops({"namespace": "wallet", "key": "gold", "ops": ops}) == ops
    for bad in ({"namespace": "n", "key": "k"}, {"value": 1, "ops": ops}, {"ops": []}):
        with pytest.raises(OperationError):
            proposal_ops(bad)
    with pytest.raises(OperationError) as caught:
        proposal_ops({"ops": [{"op": "inc", "by": 1}, {"op": "nope"}]})
    assert (caught.value.code, caught.value.index) == ("unknown-op", 1)
