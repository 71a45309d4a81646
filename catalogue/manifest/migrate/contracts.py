"""The contracts a package requires that the hub has in no or only another major: reported."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from catalogue.manifest.migrate.docs import _Doc
from catalogue.manifest.migrate.model import _CONTRACT, CONTRACT_MISSING, Plan
from catalogue.manifest.types import Issue

# ------------------------------------------------------------------ contracts


def _contract_needs(data: Mapping[str, Any], file: str, base: str = ""):
    """(file, pointer, contract) for every contract the manifest depends on."""
    for key in ("requires", "optional"):
        for i, value in enumerate(data.get(key) or [] if base == "" else []):
            if isinstance(value, str):
                yield file, f"/{key}/{i}", value
    schedule = data.get("schedule")
    if isinstance(schedule, Mapping):
        for key in ("needs", "after"):
            for i, value in enumerate(schedule.get(key) or []):
                if isinstance(value, Mapping) and isinstance(value.get("contract"), str):
                    yield file, f"{base}/schedule/{key}/{i}/contract", value["contract"]
    io_ = data.get("io")
    inputs = io_.get("inputs") if isinstance(io_, Mapping) else None
    if isinstance(inputs, Mapping):
        for name, binding in inputs.items():
            source = binding.get("from") if isinstance(binding, Mapping) else None
            if isinstance(source, Mapping) and isinstance(source.get("contract"), str):
                yield file, f"{base}/io/inputs/{name}/from/contract", source["contract"]


def _report_contracts(
    plan: Plan, docs: list[_Doc], provided: Mapping[str, set[str]] | None, own: set[str]
) -> None:
    if provided is None:
        return
    by_name: dict[str, list[str]] = {}
    for contract in provided:
        match = _CONTRACT.match(contract)
        if match:
            by_name.setdefault(match.group(1), []).append(contract)
    seen: set[tuple[str, str, str]] = set()
    for doc in docs:
        found = list(_contract_needs(doc.data, doc.new_path))
        runtime = doc.data.get("runtime")
        if isinstance(runtime, Mapping):
            found += list(_contract_needs(runtime, doc.new_path, "/runtime"))
        for file, pointer, contract in found:
            if contract in provided or contract in own or (file, pointer, contract) in seen:
                continue
            seen.add((file, pointer, contract))
            match = _CONTRACT.match(contract)
            others = sorted(by_name.get(match.group(1), [])) if match else []
            if others:
                listing = "; ".join(
                    f"{other} (from {', '.join(sorted(provided[other]))})" for other in others
                )
                message = (
                    f"{contract} is provided by no installed package; the hub has another major: "
                    f"{listing}. Left as written: a new major is a different contract"
                )
            else:
                message = f"{contract} is provided by no installed package. Left as written"
            plan.contracts.append(Issue(file, pointer, CONTRACT_MISSING, message))
