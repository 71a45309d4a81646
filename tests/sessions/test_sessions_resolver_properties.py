"""Properties of contract resolution over random package universes (Hypothesis).

The manifests are built directly (not through the loader) so that thousands of universes stay
fast; the resolver reads only id, kind, covel, provides, requires and conflicts.
"""

from __future__ import annotations

import random
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from catalogue.manifest.types import Manifest, freeze
from sessions.resolver import Resolution, provided_contracts, resolve

CONTRACTS = ["a@1", "b@1", "c@1", "d@1"]
IDS = ["p0", "p1", "p2", "p3", "p4", "p5"]


def manifest(pid: str, data: dict[str, Any]) -> Manifest:
    full = {"id": pid, "kind": "plugin", "version": "1.0.0", "description": pid, **data}
    return Manifest(id=pid, path="", data=freeze(full), body="", runtimes=())


@st.composite
def universes(draw: st.DrawFn) -> tuple[dict[str, Manifest], list[str], set[str], set[str]]:
    installed: dict[str, Manifest] = {}
    for pid in IDS[: draw(st.integers(1, len(IDS)))]:
        provides = [
            {"contract": c, "default": draw(st.booleans())}
            for c in draw(st.lists(st.sampled_from(CONTRACTS), unique=True, max_size=2))
        ]
        data = {
            "kind": draw(st.sampled_from(["plugin", "plugin", "core"])),
            "provides": provides,
            "requires": draw(st.lists(st.sampled_from(CONTRACTS), unique=True, max_size=2)),
            "conflicts": draw(st.lists(st.sampled_from(CONTRACTS), unique=True, max_size=1)),
        }
        if draw(st.integers(0, 9)) == 0:
            data["covel"] = ">=5.0.0"
        installed[pid] = manifest(pid, data)
    requested = draw(st.lists(st.sampled_from([*IDS, "ghost"]), max_size=5))
    unusable = set(draw(st.lists(st.sampled_from(IDS), max_size=1)))
    excluded = set(draw(st.lists(st.sampled_from(IDS), max_size=1)))
    return installed, requested, unusable, excluded


def run(
    installed: dict[str, Manifest], requested: list[str], unusable: set[str], excluded: set[str]
) -> Resolution:
    return resolve(
        requested=requested,
        installed=installed,
        usable=lambda m: (m.id not in unusable, "not approved"),
        host_version="0.1.0",
        excluded=excluded,
    )


@settings(max_examples=200, deadline=None)
@given(universe=universes(), seed=st.integers(0, 1000))
def test_resolution_invariants(universe, seed):
    installed, requested, unusable, excluded = universe
    result = run(installed, requested, unusable, excluded)
    active = set(result.active)
    for pid in active:
        m = installed[pid]
        # Only eligible packages are active.
        assert pid not in unusable and pid not in excluded and "covel" not in m.data
        # Every requirement has an active provider.
        for contract in m.requires:
            assert any(contract in provided_contracts(installed[p]) for p in active), (
                pid,
                contract,
            )
        # No two active packages conflict.
        for contract in m.conflicts:
            rivals = [
                p for p in active if p != pid and contract in provided_contracts(installed[p])
            ]
            assert not rivals, (pid, contract, rivals)
        assert result.verdict(pid) is not None and result.verdict(pid).active  # type: ignore[union-attr]
    # Every requested package and every core package has a verdict.
    for pid in [*requested, *(p for p, m in installed.items() if m.kind == "core")]:
        assert result.verdict(pid) is not None
    # Every verdict that says out is really out, and has a sentence.
    for pid, outcome in result.refused().items():
        assert pid not in active and outcome.message
    # The installed order does not matter.
    shuffled = list(installed.items())
    random.Random(seed).shuffle(shuffled)
    again = run(dict(shuffled), requested, unusable, excluded)
    assert again.active == result.active
    assert {p: o[-1] for p, o in again.outcomes.items()} == {
        p: o[-1] for p, o in result.outcomes.items()
    }
