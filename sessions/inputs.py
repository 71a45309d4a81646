"""Binding a runtime's declared `io.inputs`: the one rule behind a turn and `test_runtime`.

Plain Python with no database access: the caller hands over what the turn knows (the outputs
of runtimes that succeeded so far, the committed exports, the kernel values) and records the
dependencies the binding reports. The turn executor (sessions/turns.py) and the offline runtime
cases (sessions/cases.py) both call `bind_inputs`, so the two cannot drift apart.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from catalogue.manifest.types import Manifest, RuntimeManifest, thaw
from core import pointer as json_pointer

TURN_DIGEST = "turn-digest@1"
OPERATIONS = "operations@1"

_ABSENT = object()


@dataclass(frozen=True)
class Binding:
    """The bound inputs ({name: value}), or the sentence saying which required one is missing.

    dependencies: the runtimes whose output of this turn was read, in reading order, also when
    a later input is missing; the executor records each with TurnOverlay.record_dependency.
    """

    values: dict[str, Any] = field(default_factory=dict)
    problem: str = ""
    dependencies: tuple[str, ...] = ()


def resolve_pointer(value: Any, pointer: str) -> Any:
    """RFC 6901 (core/pointer.py): the member of value at pointer; KeyError when it is not there."""
    try:
        return json_pointer.resolve(value, pointer)
    except json_pointer.PointerError as exc:
        raise KeyError(pointer) from exc


def _output(runtime: RuntimeManifest) -> Mapping[str, Any]:
    return (runtime.data.get("io") or {}).get("output") or {}


def contract_providers(active: Sequence[Manifest], contract: str) -> list[str]:
    """The qualified IDs of the active runtimes whose output publishes contract, in active order."""
    return [
        runtime.qualified_id
        for manifest in active
        for runtime in manifest.runtimes
        if _output(runtime).get("contract") == contract
    ]


def _specs(runtime: RuntimeManifest) -> dict[str, Any]:
    return thaw((runtime.data.get("io") or {}).get("inputs") or {})


def _committed_producers(
    manifest: Manifest, source: Mapping[str, Any], active: Sequence[Manifest]
) -> list[str]:
    """The packages a committed input may read an export of; the first with one wins."""
    if "runtime" in source:
        return [manifest.id]
    contract = str(source.get("contract", ""))
    return sorted(
        {m.id for m in active for r in m.runtimes if _output(r).get("contract") == contract}
    )


def committed_sources(
    *, manifest: Manifest, runtime: RuntimeManifest, active: Sequence[Manifest]
) -> list[tuple[str, str]]:
    """The (plugin, recordAs) exports runtime's `scope: committed` inputs may read.

    The executor loads exactly these before binding, so a runtime without committed inputs costs
    no query.
    """
    wanted: list[tuple[str, str]] = []
    for spec in _specs(runtime).values():
        source = spec.get("from") or {}
        if "kernel" in source or spec.get("scope") != "committed":
            continue
        for producer in _committed_producers(manifest, source, active):
            if (producer, str(spec.get("recordAs"))) not in wanted:
                wanted.append((producer, str(spec.get("recordAs"))))
    return wanted


def staged_operations(overlay: Any, plugin: str) -> list[dict[str, Any]]:
    """The operations@1 value: what completed runtimes of plugin staged so far in the overlay."""
    done = set(overlay.completed)
    return [
        {"runtime": w.runtime, "namespace": w.namespace, "key": w.key, "ops": list(w.ops)}
        for w in overlay.writes
        if w.plugin == plugin and w.runtime in done
    ]


def bind_inputs(
    *,
    manifest: Manifest,
    runtime: RuntimeManifest,
    active: Sequence[Manifest],
    outputs: Mapping[str, Any],
    committed: Mapping[tuple[str, str], Any],
    digest: Mapping[str, Any],
    operations: Sequence[Mapping[str, Any]],
) -> Binding:
    """Bind each of runtime's declared inputs, in declaration order.

    outputs:    qualified runtime ID -> output, for the runtimes that succeeded so far this turn.
    committed:  (plugin, recordAs) -> the latest committed export (see committed_sources).
    digest:     the turn-digest@1 value; operations: the operations@1 value (staged_operations).

    A kernel input takes the kernel value. A `scope: committed` input takes the export of the
    first producer package (by ID) that has one. A turn input takes the output of its runtime,
    or of its contract's providers in active order: one (the first), or with `cardinality: all`
    a list of every one. `select` picks a member by JSON pointer; a provider whose output lacks
    it counts as not having produced. A missing required input (the default) stops the binding;
    a missing optional one is left out.
    """
    values: dict[str, Any] = {}
    dependencies: list[str] = []
    for name, spec in _specs(runtime).items():
        source = spec.get("from") or {}
        value: Any = _ABSENT
        if "kernel" in source:
            value = dict(digest) if source["kernel"] == TURN_DIGEST else list(operations)
        elif spec.get("scope") == "committed":
            for producer in _committed_producers(manifest, source, active):
                value = committed.get((producer, str(spec.get("recordAs"))), _ABSENT)
                if value is not _ABSENT:
                    break
        else:
            if "runtime" in source:
                ref = str(source["runtime"])
                target = manifest.runtime(ref) or manifest.runtime(ref.split("/")[-1])
                producers = [target.qualified_id] if target else [ref]
            else:
                producers = contract_providers(active, str(source.get("contract", "")))
            selected = []
            for producer in producers:
                if producer not in outputs:
                    continue
                produced = outputs[producer]
                if spec.get("select"):
                    try:
                        produced = resolve_pointer(produced, spec["select"])
                    except (KeyError, IndexError, TypeError, ValueError):
                        continue
                dependencies.append(producer)
                selected.append(produced)
            if selected:
                value = selected if source.get("cardinality") == "all" else selected[0]
        if value is _ABSENT:
            if spec.get("required", True):
                problem = (
                    f"{runtime.qualified_id} requires input {name}, which has no value this turn"
                )
                return Binding(problem=problem, dependencies=tuple(dependencies))
            continue
        values[name] = value
    return Binding(values=values, dependencies=tuple(dependencies))
