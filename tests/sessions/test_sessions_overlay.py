"""The in-turn overlay and the turn commit: visibility, failed runtimes, drop-on-rejection."""

from __future__ import annotations

from typing import Any

import pytest

from sessions.errors import WriteRefused
from sessions.operations import MISSING, Dataset, TurnOverlay, datasets_of

Key = tuple[str, str, str]


class Store:
    """Committed plugin data, as the database would hold it."""

    def __init__(self, rows: dict[Key, Any] | None = None) -> None:
        self.rows: dict[Key, Any] = dict(rows or {})

    def load(self, plugin: str, namespace: str, key: str) -> Any:
        return self.rows.get((plugin, namespace, key), MISSING)

    def keys(self, plugin: str, namespace: str) -> dict[str, Any]:
        return {k: v for (p, n, k), v in self.rows.items() if (p, n) == (plugin, namespace)}

    def save(self, values: dict[Key, Any]) -> None:
        for where, value in values.items():
            if value is MISSING:
                self.rows.pop(where, None)
            else:
                self.rows[where] = value


def overlay_for(store: Store, datasets: dict[str, dict[str, Dataset]] | None = None) -> TurnOverlay:
    return TurnOverlay(load=store.load, lister=store.keys, datasets=datasets or {})


def test_reads_see_earlier_completed_writes_of_the_same_plugin_only():
    store = Store({("inv", "wallet", "gold"): 10})
    turn = overlay_for(store)
    turn.stage(
        runtime="inv/pay",
        plugin="inv",
        namespace="wallet",
        key="gold",
        ops=[{"op": "inc", "by": -3}],
    )
    # The writer sees its own write; a sibling still running does not.
    assert turn.get(runtime="inv/pay", plugin="inv", namespace="wallet", key="gold") == 7
    assert turn.get(runtime="inv/audit", plugin="inv", namespace="wallet", key="gold") == 10
    turn.complete("inv/pay", succeeded=True)
    assert turn.get(runtime="inv/audit", plugin="inv", namespace="wallet", key="gold") == 7
    # Another plugin never sees it (and cannot name inv's data anyway).
    assert turn.get(runtime="other", plugin="other", namespace="wallet", key="gold") is None
    # Nothing is stored before the commit.
    assert store.rows == {("inv", "wallet", "gold"): 10}


def test_list_merges_stored_and_staged_rows():
    store = Store({("n", "notes", "a"): {"t": 1}, ("n", "notes", "b"): {"t": 2}})
    turn = overlay_for(store)
    turn.set(runtime="n/w", plugin="n", namespace="notes", key="c", value={"t": 3})
    turn.stage(runtime="n/w", plugin="n", namespace="notes", key="a", ops=[{"op": "delete"}])
    turn.complete("n/w", succeeded=True)
    rows = turn.list(runtime="n/r", plugin="n", namespace="notes")
    assert rows == [{"key": "b", "value": {"t": 2}}, {"key": "c", "value": {"t": 3}}]


def test_a_failing_update_throws_at_once_and_stages_nothing():
    store = Store({("inv", "wallet", "gold"): 2})
    turn = overlay_for(store)
    with pytest.raises(WriteRefused) as caught:
        turn.stage(
            runtime="inv/pay",
            plugin="inv",
            namespace="wallet",
            key="gold",
            ops=[{"op": "inc", "by": -3, "min": 0}],
        )
    assert caught.value.code == "out-of-range"
    assert turn.writes == []
    turn.complete("inv/pay", succeeded=True)
    result = turn.commit()
    assert result.values == {} and result.ok


def test_a_failed_runtimes_writes_are_never_seen_or_saved():
    store = Store()
    turn = overlay_for(store)
    turn.set(runtime="n/broken", plugin="n", namespace="notes", key="k", value="half done")
    turn.complete("n/broken", succeeded=False)
    assert turn.get(runtime="n/next", plugin="n", namespace="notes", key="k") is None
    result = turn.commit()
    assert result.values == {} and "n/broken" not in result.kept


def test_ops_apply_to_the_latest_stored_value_at_commit():
    store = Store({("inv", "wallet", "gold"): 10})
    first = overlay_for(store)
    second = overlay_for(store)
    for turn in (first, second):
        turn.stage(
            runtime="inv/pay",
            plugin="inv",
            namespace="wallet",
            key="gold",
            ops=[{"op": "inc", "by": -3, "min": 0}],
        )
        turn.complete("inv/pay", succeeded=True)
    store.save(first.commit(load_latest=store.load).values)
    store.save(second.commit(load_latest=store.load).values)
    assert (
        store.rows[("inv", "wallet", "gold")] == 4
    )  # both payments count; neither overwrote the other


def test_inc_below_min_at_commit_is_refused_with_nothing_written():
    store = Store({("inv", "wallet", "gold"): 3, ("inv", "wallet", "silver"): 1})
    turn = overlay_for(store)
    turn.stage(
        runtime="inv/pay",
        plugin="inv",
        namespace="wallet",
        key="silver",
        ops=[{"op": "inc", "by": 5}],
    )
    turn.stage(
        runtime="inv/pay",
        plugin="inv",
        namespace="wallet",
        key="gold",
        ops=[{"op": "inc", "by": -3, "min": 0}],
    )
    turn.complete("inv/pay", succeeded=True)
    # Meanwhile a background job spent 1 gold.
    store.rows[("inv", "wallet", "gold")] = 2
    result = turn.commit(load_latest=store.load)
    assert not result.ok
    assert [r.code for r in result.refusals] == ["out-of-range"]
    assert "inv/wallet/gold" in str(result.refusals[0])
    # All or nothing per runtime: the silver inc of the same runtime is not saved either.
    assert result.values == {}
    assert [d.runtime for d in result.dropped] == ["inv/pay"]


def test_a_refused_write_drops_the_runtimes_that_read_it_but_not_the_story():
    store = Store({("inv", "wallet", "gold"): 3})
    turn = overlay_for(store)
    # pay stages a payment; tally reads the balance after it; story reads it too; notes is unrelated.
    turn.stage(
        runtime="inv/pay",
        plugin="inv",
        namespace="wallet",
        key="gold",
        ops=[{"op": "inc", "by": -3, "min": 0}],
    )
    turn.complete("inv/pay", succeeded=True)
    assert turn.get(runtime="inv/tally", plugin="inv", namespace="wallet", key="gold") == 0
    turn.set(runtime="inv/tally", plugin="inv", namespace="stats", key="poor", value=True)
    turn.complete("inv/tally", succeeded=True)
    assert turn.get(runtime="inv/story", plugin="inv", namespace="wallet", key="gold") == 0
    turn.set(
        runtime="inv/story", plugin="inv", namespace="log", key="t1", value="You pay three gold."
    )
    turn.complete("inv/story", succeeded=True)
    # A reader of the tally's write is dropped transitively.
    assert turn.get(runtime="inv/echo", plugin="inv", namespace="stats", key="poor") is True
    turn.set(runtime="inv/echo", plugin="inv", namespace="stats", key="echo", value=1)
    turn.complete("inv/echo", succeeded=True)
    turn.set(runtime="notes", plugin="notes", namespace="notes", key="n1", value="kept")
    turn.complete("notes", succeeded=True)

    store.rows[("inv", "wallet", "gold")] = 1  # the latest balance cannot pay 3 any more
    result = turn.commit(load_latest=store.load, story=["inv/story"])
    dropped = {d.runtime: d.code for d in result.dropped}
    assert dropped == {
        "inv/pay": "write-refused",
        "inv/tally": "read-refused-write",
        "inv/echo": "read-refused-write",
    }
    assert result.kept == ("inv/story", "notes")
    assert result.values == {
        ("inv", "log", "t1"): "You pay three gold.",
        ("notes", "notes", "n1"): "kept",
    }


def test_input_dependencies_recorded_by_the_executor_also_cascade():
    store = Store({("a", "wallet", "gold"): 3})
    turn = overlay_for(store)
    turn.stage(
        runtime="a/src",
        plugin="a",
        namespace="wallet",
        key="gold",
        ops=[{"op": "inc", "by": -3, "min": 0}],
    )
    turn.complete("a/src", succeeded=True)
    # b/consumer took a/src's output as a turn-scoped input; only the executor knows that.
    turn.record_dependency(reader="b/consumer", source="a/src")
    turn.set(runtime="b/consumer", plugin="b", namespace="ns", key="k", value=1)
    turn.complete("b/consumer", succeeded=True)
    store.rows[("a", "wallet", "gold")] = 1
    result = turn.commit(load_latest=store.load)
    assert {d.runtime: d.code for d in result.dropped} == {
        "a/src": "write-refused",
        "b/consumer": "read-refused-write",
    }
    assert "b/consumer used data or a result of a/src" in result.dropped[1].message
    assert result.values == {}


def test_staging_checks_the_size_limit_at_once():
    turn = overlay_for(Store())
    with pytest.raises(WriteRefused, match=r"notebook/notes/big: the value is \d+ bytes"):
        turn.set(
            runtime="notebook", plugin="notebook", namespace="notes", key="big", value="x" * 262144
        )
    assert turn.writes == []


def test_dataset_rules_apply_when_staging_and_at_commit(bundled):
    store = Store({("satchel", "items", "rope"): {"id": "rope", "name": "Rope", "quantity": 2}})
    turn = overlay_for(store, {"satchel": datasets_of(bundled["satchel"])})
    with pytest.raises(WriteRefused) as caught:
        turn.stage(
            runtime="satchel",
            plugin="satchel",
            namespace="items",
            key="rope",
            ops=[{"op": "append", "path": "/tags", "value": "x"}],
        )
    assert caught.value.code == "op-not-allowed"
    turn.stage(
        runtime="satchel",
        plugin="satchel",
        namespace="items",
        key="rope",
        ops=[{"op": "inc", "path": "/quantity", "by": -2}],
    )
    turn.complete("satchel", succeeded=True)
    store.rows[("satchel", "items", "rope")] = {"id": "rope", "name": "Rope", "quantity": 1}
    result = turn.commit(load_latest=store.load)
    # quantity would be -1: the schema's minimum 0 refuses it at commit.
    assert [r.code for r in result.refusals] == ["schema-mismatch"]
    assert result.refusals[0].path == "/quantity"
    assert result.values == {}


def test_commit_applies_runtimes_in_completion_order():
    store = Store()
    turn = overlay_for(store)
    turn.set(
        runtime="p/second", plugin="p", namespace="n", key="k", value="staged first, completed last"
    )
    turn.set(runtime="p/first", plugin="p", namespace="n", key="k", value="completed first")
    turn.complete("p/first", succeeded=True)
    turn.complete("p/second", succeeded=True)
    assert (
        turn.get(runtime="p/reader", plugin="p", namespace="n", key="k")
        == "staged first, completed last"
    )
    assert turn.commit().values == {("p", "n", "k"): "staged first, completed last"}


def test_every_read_is_logged_with_the_writes_it_saw():
    store = Store({("inv", "wallet", "gold"): 5})
    turn = overlay_for(store)
    turn.get(runtime="inv/a", plugin="inv", namespace="wallet", key="gold")
    turn.stage(
        runtime="inv/a", plugin="inv", namespace="wallet", key="gold", ops=[{"op": "inc", "by": 1}]
    )
    turn.complete("inv/a", succeeded=True)
    turn.get(runtime="inv/b", plugin="inv", namespace="wallet", key="gold")
    log = [(r.runtime, r.key, r.saw) for r in turn.read_log]
    # inv/a's own staging read is logged too; it saw nobody else's write.
    assert log == [("inv/a", "gold", ()), ("inv/a", "gold", ()), ("inv/b", "gold", ("inv/a",))]


def test_a_staged_write_the_store_moved_under_is_left_out_of_reads():
    store = Store({("inv", "wallet", "gold"): 3})
    turn = overlay_for(store)
    turn.stage(
        runtime="inv/pay",
        plugin="inv",
        namespace="wallet",
        key="gold",
        ops=[{"op": "inc", "by": -3, "min": 0}],
    )
    turn.complete("inv/pay", succeeded=True)
    store.rows[("inv", "wallet", "gold")] = 1  # a background job committed meanwhile
    # The payment cannot apply any more: the reader sees the stored balance and depends on nothing.
    assert turn.get(runtime="inv/look", plugin="inv", namespace="wallet", key="gold") == 1
    turn.complete("inv/look", succeeded=True)
    result = turn.commit(load_latest=store.load)
    assert [d.runtime for d in result.dropped] == ["inv/pay"]
    assert result.kept == ("inv/look",)
