"""References between runtimes: needs/after and input producers name runtimes that exist, and
the graph they make has no cycle.
"""

from __future__ import annotations

from collections.abc import Iterator

from catalogue.manifest.context import Context, RuntimeDoc
from catalogue.manifest.rules.common import as_dict, entries, items
from core.pointer import join

# ---------------------------------------------------------------- references between runtimes


def _runtime_refs(rt: RuntimeDoc) -> Iterator[tuple[str, str, str]]:
    """(kind, reference, path) for each runtime reference of rt; kind is needs/after/input."""
    schedule = as_dict(rt.data.get("schedule"))
    for key in ("needs", "after"):
        for i, dep in items(schedule.get(key)):
            if isinstance(dep, str) and "@" not in dep:
                yield key, dep, join(rt.base, "schedule", key, i)
            elif isinstance(dep, dict) and isinstance(dep.get("runtime"), str):
                yield key, dep["runtime"], join(rt.base, "schedule", key, i, "runtime")
    for name, binding in entries(as_dict(rt.data.get("io")).get("inputs")):
        binding = as_dict(binding)
        source = as_dict(binding.get("from"))
        if isinstance(source.get("runtime"), str):
            # A committed input reads an earlier execution's export: no ordering within the turn.
            kind = "committed-input" if binding.get("scope") == "committed" else "input"
            yield kind, source["runtime"], join(rt.base, "io", "inputs", name, "from", "runtime")


def check_graph(ctx: Context) -> None:
    by_id = {rt.qualified_id: rt for rt in ctx.runtimes}
    known = ", ".join(sorted(by_id)) or "none"
    edges: dict[str, list[tuple[str, str, str]]] = {rt.qualified_id: [] for rt in ctx.runtimes}
    for rt in ctx.runtimes:
        for kind, ref, where in _runtime_refs(rt):
            if ref not in by_id:
                ctx.error(
                    rt.file,
                    where,
                    "runtime-ref-unknown",
                    f"{ref!r} is no runtime of this package (its runtimes: {known})",
                )
            elif kind != "committed-input":
                edges[rt.qualified_id].append((ref, rt.file, where))
    # Depth-first search; each cycle is reported once, at the edge that closes it.
    state: dict[str, int] = {}
    reported: set[frozenset[str]] = set()

    def visit(node: str, stack: list[str]) -> None:
        state[node] = 1
        stack.append(node)
        for target, file, where in edges.get(node, []):
            if state.get(target) == 1:
                cycle = stack[stack.index(target) :]
                key = frozenset(cycle)
                if key not in reported:
                    reported.add(key)
                    chain = " -> ".join([*cycle, target])
                    ctx.error(file, where, "runtime-cycle", f"runtime order forms a cycle: {chain}")
            elif state.get(target) is None:
                visit(target, stack)
        stack.pop()
        state[node] = 2

    for node in sorted(edges):
        if node not in state:
            visit(node, [])
