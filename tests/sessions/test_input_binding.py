"""sessions.inputs: the one binding rule for a runtime's io.inputs, with no database and no turn.

Packages are loaded for real (the pkg fixture); outputs, exports and kernel values are plain
dicts, as the turn executor and test_runtime hand them over.
"""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest

from catalogue.manifest.types import Manifest
from sessions.inputs import (
    Binding,
    bind_inputs,
    committed_sources,
    resolve_pointer,
    staged_operations,
)

DIGEST = {"playerMessage": "I open the door.", "narrativeText": "It creaks.", "actions": []}
SCHEMA = '{"type": "object"}'


def reader(pkg: Any, inputs: dict[str, Any], package_id: str = "reader") -> Manifest:
    return pkg(package_id, runtime={"schedule": {"stage": "post-turn"}, "io": {"inputs": inputs}})


def clue_provider(pkg: Any, package_id: str) -> Manifest:
    return pkg(
        package_id,
        runtime={
            "schedule": {"stage": "pre-turn"},
            "io": {"output": {"contract": "clue@1", "schema": "out.json", "recordAs": "clue"}},
        },
        files={"out.json": SCHEMA},
    )


def bind(
    manifest: Manifest,
    active: list[Manifest],
    *,
    outputs: dict[str, Any] | None = None,
    committed: dict[tuple[str, str], Any] | None = None,
    operations: list[dict[str, Any]] | None = None,
) -> Binding:
    return bind_inputs(
        manifest=manifest,
        runtime=manifest.runtimes[0],
        active=active,
        outputs=outputs or {},
        committed=committed or {},
        digest=DIGEST,
        operations=operations or [],
    )


def test_kernel_inputs_take_the_digest_and_the_operations(pkg):
    manifest = reader(
        pkg,
        {
            "digest": {"from": {"kernel": "turn-digest@1"}},
            "ops": {"from": {"kernel": "operations@1"}},
        },
    )
    ops = [{"runtime": "reader", "namespace": "notes", "key": "a", "ops": [{"op": "delete"}]}]
    binding = bind(manifest, [manifest], operations=ops)
    assert binding == Binding(values={"digest": DIGEST, "ops": ops})


def test_staged_operations_are_the_completed_writes_of_one_plugin():
    write = SimpleNamespace
    overlay = SimpleNamespace(
        completed=["a/one", "b/two"],
        writes=[
            write(runtime="a/one", plugin="a", namespace="n", key="k", ops=({"op": "delete"},)),
            write(runtime="a/late", plugin="a", namespace="n", key="x", ops=()),  # still running
            write(runtime="b/two", plugin="b", namespace="n", key="k", ops=()),  # another plugin
        ],
    )
    assert staged_operations(overlay, "a") == [
        {"runtime": "a/one", "namespace": "n", "key": "k", "ops": [{"op": "delete"}]}
    ]


def test_a_runtime_input_takes_that_runtimes_output_and_reports_the_dependency(pkg):
    manifest = pkg(
        "pair",
        runtimes={
            "source": {"schedule": {"stage": "pre-turn"}},
            "sink": {
                "schedule": {"stage": "post-turn"},
                "io": {"inputs": {"got": {"from": {"runtime": "pair/source"}}}},
            },
        },
    )
    sink = manifest.runtime("sink")
    binding = bind_inputs(
        manifest=manifest,
        runtime=sink,
        active=[manifest],
        outputs={"pair/source": {"n": 3}},
        committed={},
        digest=DIGEST,
        operations=[],
    )
    assert binding.values == {"got": {"n": 3}}
    assert binding.dependencies == ("pair/source",)


def test_a_contract_input_takes_the_first_provider_or_with_all_every_one(pkg):
    first, second = clue_provider(pkg, "first"), clue_provider(pkg, "second")
    manifest = reader(
        pkg,
        {
            "one": {"from": {"contract": "clue@1"}},
            "every": {"from": {"contract": "clue@1", "cardinality": "all"}},
        },
    )
    active = [first, second, manifest]
    binding = bind(manifest, active, outputs={"first": "a", "second": "b"})
    assert binding.values == {"one": "a", "every": ["a", "b"]}
    # A provider that has not succeeded (no output) is passed over, for one and for all.
    assert bind(manifest, active, outputs={"second": "b"}).values == {"one": "b", "every": ["b"]}


def test_a_missing_required_input_stops_the_binding_with_a_sentence(pkg):
    provider = clue_provider(pkg, "first")
    manifest = reader(
        pkg,
        {
            "seen": {"from": {"contract": "clue@1"}},
            "needed": {"from": {"contract": "hint@1"}, "required": True},
        },
    )
    binding = bind(manifest, [provider, manifest], outputs={"first": "a"})
    assert binding.values == {}
    assert binding.problem == "reader requires input needed, which has no value this turn"
    # What was read before the stop is still reported: the executor records it.
    assert binding.dependencies == ("first",)


def test_a_missing_optional_input_is_left_out(pkg):
    manifest = reader(pkg, {"maybe": {"from": {"contract": "clue@1"}, "required": False}})
    assert bind(manifest, [manifest]) == Binding()


def test_select_picks_a_member_and_a_miss_counts_as_no_value(pkg):
    first, second = clue_provider(pkg, "first"), clue_provider(pkg, "second")
    manifest = reader(
        pkg,
        {"texts": {"from": {"contract": "clue@1", "cardinality": "all"}, "select": "/text"}},
    )
    active = [first, second, manifest]
    binding = bind(manifest, active, outputs={"first": {"other": 1}, "second": {"text": "b"}})
    assert binding.values == {"texts": ["b"]}
    assert binding.dependencies == ("second",)  # the miss was not read
    missed = bind(manifest, active, outputs={"first": {"other": 1}, "second": ["x"]})
    assert missed.problem == "reader requires input texts, which has no value this turn"


def test_a_committed_input_reads_the_export_of_the_first_contract_producer_that_has_one(pkg):
    first, second = clue_provider(pkg, "first"), clue_provider(pkg, "second")
    manifest = reader(
        pkg, {"last": {"from": {"contract": "clue@1"}, "scope": "committed", "recordAs": "clue"}}
    )
    active = [second, manifest, first]
    assert committed_sources(manifest=manifest, runtime=manifest.runtimes[0], active=active) == [
        ("first", "clue"),
        ("second", "clue"),
    ]
    both = {("first", "clue"): {"n": 1}, ("second", "clue"): {"n": 2}}
    assert bind(manifest, active, committed=both).values == {"last": {"n": 1}}
    only_second = {("second", "clue"): {"n": 2}, ("first", "other"): {"n": 9}}
    binding = bind(manifest, active, committed=only_second)
    assert binding.values == {"last": {"n": 2}}
    assert binding.dependencies == ()  # an export is not a turn dependency
    # This turn's outputs are not committed exports.
    assert bind(manifest, active, outputs={"first": {"n": 5}}).problem.startswith(
        "reader requires input last"
    )


def test_a_committed_runtime_input_reads_its_own_packages_export(pkg):
    before = {"from": {"runtime": "diary"}, "scope": "committed", "recordAs": "day"}
    manifest = pkg(
        "diary",
        runtime={
            "schedule": {"stage": "post-turn"},
            "io": {
                "inputs": {"before": before},
                "output": {"schema": "out.json", "recordAs": "day"},
            },
        },
        files={"out.json": SCHEMA},
    )
    assert committed_sources(
        manifest=manifest, runtime=manifest.runtimes[0], active=[manifest]
    ) == [("diary", "day")]
    binding = bind(manifest, [manifest], committed={("diary", "day"): None})
    assert binding.values == {"before": None}  # a null export is a value, not a missing one


@pytest.mark.parametrize(
    ("pointer", "expected"),
    [("", {"": 1, "a/b": [10, 20], "m~n": 2}), ("/", 1), ("/a~1b/1", 20), ("/m~0n", 2)],
)
def test_pointers_follow_rfc_6901(pointer, expected):
    assert resolve_pointer({"": 1, "a/b": [10, 20], "m~n": 2}, pointer) == expected


@pytest.mark.parametrize(
    "pointer", ["a", "/a~1b/-1", "/a~1b/x", "/missing", "/a~1b/01", "/a~1b/2", "/a~1b/\uff11"]
)
def test_a_pointer_that_misses_raises_key_error(pointer):
    with pytest.raises(KeyError):
        resolve_pointer({"a/b": [10, 20]}, pointer)
