"""The write requests (proposals) a function run hands back, checked and sorted for the commit.

Plain Python, no Django. A proposal is `{type, payload, source?}`, as Covel's SDK makes them
(makeProposal, a tool's pendingProposals); a function's `effects.pluginData` becomes proposals
too. Every proposal type Covel's commit accepts is named here: the ones the hub has a home for
are turned into plugin-data writes, session lore entries or events; the others, and any type
Covel does not know, are refused with a named code, never dropped. See docs/play.md
("Proposals and effects") for the table of types, checks and codes.

The checks are Covel's (packages/runtime/src/commit/): non-empty namespace and key, no
framework (`_`) namespace except the package's own `_hidden.*` ones, a batch that is a non-empty
list, lore entries with an id, text content and a known strategy, and an owner that is the
writing package. Size limits and dataset schemas are checked when the overlay stages the write
(sessions.operations), as for ctx.pluginData.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from sessions.errors import OperationError
from sessions.operations import proposal_ops

# The reserved namespace, per package, that holds its session lore (lorebook.upsert). A package
# cannot write it through ctx.pluginData or plugin.data: `_` namespaces are the framework's.
LORE_NAMESPACE = "_lorebook"
HIDDEN_PREFIX = "_hidden."
LORE_STRATEGIES = ("constant", "selective")
LORE_DEFAULTS = {"position": "after_char_defs", "insertionOrder": 100, "enabled": True}

# Types Covel's commit accepts that the hub has no store for: refused by name, so a package
# sees why its write went nowhere. Forms and notices go in effects.interactions/notifications.
UNSUPPORTED = {
    "narrative.append": "the story comes from the narrative-engine@2 runtime's narrativeOutput",
    "interaction.request": "return forms in effects.interactions",
    "ui.render": "the hub has no message blocks; use a panel",
    "state.patch": "the hub has no state tables; write plugin data",
    "character.upsert": "characters come from the world's characters/characters.json",
    "working_memory.set": "the hub has no working memory; write plugin data",
    "asset.generate": "the hub has no generated assets",
}


class ProposalRefused(ValueError):
    """A proposal the commit cannot take; code is stable kebab-case, message names the runtime."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(f"{message} [{code}]")
        self.code = code
        self.message = f"{message} [{code}]"


@dataclass
class ProposalBatch:
    """What a run's proposals ask for, sorted by where each goes."""

    writes: list[tuple[str, str, list[Mapping[str, Any]]]] = field(default_factory=list)
    lore: list[dict[str, Any]] = field(default_factory=list)
    events: list[tuple[str, dict[str, Any]]] = field(default_factory=list)


def reserved_namespace(namespace: str) -> bool:
    """Covel's rule: `_` namespaces are the framework's, except a package's `_hidden.*` ones."""
    return namespace.startswith("_") and not namespace.startswith(HIDDEN_PREFIX)


def _name(value: Any, what: str, where: str) -> str:
    if not isinstance(value, str) or not value:
        raise ProposalRefused("proposal-invalid", f"{where}: {what} must be a non-empty string")
    return value


def _namespace(value: Any, where: str) -> str:
    namespace = _name(value, "namespace", where)
    if reserved_namespace(namespace):
        raise ProposalRefused(
            "namespace-reserved",
            f"{where}: namespace {namespace!r} is reserved for the framework and cannot be "
            "written by plugins (only the package's own _hidden.* namespaces can)",
        )
    return namespace


def _ops(payload: Mapping[str, Any], where: str) -> list[Mapping[str, Any]]:
    try:
        return proposal_ops(payload)
    except OperationError as exc:
        raise ProposalRefused("proposal-invalid", f"{where}: {exc}") from None


def _payload(proposal: Mapping[str, Any], where: str) -> Mapping[str, Any]:
    payload = proposal.get("payload")
    if not isinstance(payload, Mapping):
        raise ProposalRefused("proposal-invalid", f"{where}/payload: must be an object")
    return payload


def _plugin_data(
    batch: ProposalBatch, payload: Mapping[str, Any], where: str, package: str
) -> None:
    namespace = _namespace(payload.get("namespace"), f"{where}/payload")
    key = _name(payload.get("key"), "key", f"{where}/payload")
    batch.writes.append((namespace, key, _ops(payload, f"{where}/payload")))


def _plugin_data_batch(
    batch: ProposalBatch, payload: Mapping[str, Any], where: str, package: str
) -> None:
    items = payload.get("items")
    if not isinstance(items, list) or not items:
        raise ProposalRefused(
            "proposal-invalid", f"{where}/payload/items: must be a non-empty array"
        )
    for index, item in enumerate(items):
        at = f"{where}/payload/items/{index}"
        if not isinstance(item, Mapping):
            raise ProposalRefused("proposal-invalid", f"{at}: must be an object")
        namespace = _namespace(item.get("namespace"), at)
        key = _name(item.get("key"), "key", at)
        batch.writes.append((namespace, key, _ops(item, at)))


def _plugin_data_delete(
    batch: ProposalBatch, payload: Mapping[str, Any], where: str, package: str
) -> None:
    namespace = _namespace(payload.get("namespace"), f"{where}/payload")
    key = _name(payload.get("key"), "key", f"{where}/payload")
    batch.writes.append((namespace, key, [{"op": "delete"}]))


def lore_entry(raw: Any, *, package: str, where: str) -> dict[str, Any]:
    """One lorebook.upsert entry as the session stores it, or ProposalRefused."""
    if not isinstance(raw, Mapping):
        raise ProposalRefused("lore-entry-invalid", f"{where}: must be an object")
    entry_id = raw.get("id")
    if not isinstance(entry_id, str) or not entry_id:
        raise ProposalRefused("lore-entry-invalid", f"{where}/id: must be a non-empty string")
    if not isinstance(raw.get("content"), str):
        raise ProposalRefused(
            "lore-entry-invalid", f"{where}/content: entry {entry_id!r} needs text content"
        )
    if raw.get("strategy") not in LORE_STRATEGIES:
        raise ProposalRefused(
            "lore-entry-invalid",
            f"{where}/strategy: entry {entry_id!r} has strategy {raw.get('strategy')!r}; "
            f"it is one of {', '.join(LORE_STRATEGIES)}",
        )
    owner = raw.get("owner")
    if owner is not None and (
        not isinstance(owner, Mapping)
        or owner.get("kind") != "plugin"
        or owner.get("pluginId") != package
    ):
        raise ProposalRefused(
            "lore-owner-mismatch",
            f"{where}/owner: {package} cannot modify another owner's entry {entry_id!r}",
        )
    keys = raw.get("keys")
    entry: dict[str, Any] = {
        "id": entry_id,
        "pluginId": package,
        "keys": [k for k in keys if isinstance(k, str)] if isinstance(keys, list) else [],
        "content": raw["content"],
        "strategy": raw["strategy"],
    }
    for name, default in LORE_DEFAULTS.items():
        given = raw.get(name)
        kind = bool if isinstance(default, bool) else (int if name == "insertionOrder" else str)
        ok = isinstance(given, kind) and not (kind is int and isinstance(given, bool))
        entry[name] = given if ok else default
    if "extra" in raw:
        entry["extra"] = raw["extra"]
    return entry


def _lorebook_upsert(
    batch: ProposalBatch, payload: Mapping[str, Any], where: str, package: str
) -> None:
    entries = payload.get("entries")
    if not isinstance(entries, list) or not entries:
        raise ProposalRefused(
            "proposal-invalid", f"{where}/payload/entries: must be a non-empty array"
        )
    for index, raw in enumerate(entries):
        batch.lore.append(
            lore_entry(raw, package=package, where=f"{where}/payload/entries/{index}")
        )


def _event_emit(batch: ProposalBatch, payload: Mapping[str, Any], where: str, package: str) -> None:
    topic = _name(payload.get("topic"), "topic", f"{where}/payload")
    data = payload.get("data")
    if data is not None and not isinstance(data, Mapping):
        raise ProposalRefused("proposal-invalid", f"{where}/payload/data: must be an object")
    batch.events.append((topic, dict(data or {})))


def lore_writes(
    overlay: Any, *, runtime: str, plugin: str, lore: Sequence[Mapping[str, Any]], now: str
) -> list[tuple[str, str, list[Mapping[str, Any]]]]:
    """The writes that store lore entries in the package's LORE_NAMESPACE: each a whole record,
    keeping the createdAt of the entry it replaces (read through the overlay, as runtime)."""
    writes: list[tuple[str, str, list[Mapping[str, Any]]]] = []
    for entry in lore:
        before = overlay.get(
            runtime=runtime, plugin=plugin, namespace=LORE_NAMESPACE, key=entry["id"]
        )
        created = before.get("createdAt") if isinstance(before, Mapping) else None
        record = {**entry, "createdAt": created or now, "updatedAt": now}
        writes.append((LORE_NAMESPACE, str(entry["id"]), [{"op": "set", "value": record}]))
    return writes


class _FromEffects(dict):
    """A proposal the hub made from effects.pluginData (its refusals name that, not an index).
    A type of its own: a plugin cannot mark its own proposals so."""


def effects_proposals(entries: Any) -> list[dict[str, Any]]:
    """A function's effects.pluginData ([{namespace, key, value}]) as proposals, as Covel's
    normalizer makes them: one entry a plugin.data, several one plugin.data.batch. Unlike
    Covel's, a malformed entry is not skipped: it is refused by the proposal checks."""
    if entries is None:
        return []
    if not isinstance(entries, list):
        raise ProposalRefused("effects-invalid", "effects.pluginData: must be an array")
    if len(entries) == 1 and isinstance(entries[0], Mapping):
        return [_FromEffects(type="plugin.data", payload=dict(entries[0]))]
    if not entries:
        return []
    return [_FromEffects(type="plugin.data.batch", payload={"items": entries})]


def proposal_batch(proposals: Sequence[Any], *, package: str, runtime: str) -> ProposalBatch:
    """Check a run's proposals and sort them; ProposalRefused names the first bad one."""
    batch = ProposalBatch()
    for index, proposal in enumerate(proposals):
        where = f"{runtime}: proposal {index}"
        if not isinstance(proposal, Mapping):
            raise ProposalRefused("proposal-invalid", f"{where}: must be an object")
        if isinstance(proposal, _FromEffects):
            where = f"{runtime}: effects.pluginData"
        kind = proposal.get("type")
        source = proposal.get("source")
        claimed = source.get("pluginId") if isinstance(source, Mapping) else None
        if claimed not in (None, package):
            raise ProposalRefused(
                "proposal-not-owned",
                f"{where} ({kind}): its source is plugin {claimed!r}; a package writes only "
                f"as itself ({package})",
            )
        if kind in UNSUPPORTED:
            raise ProposalRefused(
                "proposal-type-unsupported",
                f"{where}: the hub does not commit {kind} proposals ({UNSUPPORTED[kind]})",
            )
        handler = _HANDLERS.get(kind) if isinstance(kind, str) else None
        if handler is None:
            raise ProposalRefused(
                "unknown-proposal-type", f"{where}: unknown proposal type {kind!r}"
            )
        handler(batch, _payload(proposal, where), where, package)
    return batch


_HANDLERS: dict[str, Any] = {
    "plugin.data": _plugin_data,
    "plugin.data.batch": _plugin_data_batch,
    "plugin.data.delete": _plugin_data_delete,
    "lorebook.upsert": _lorebook_upsert,
    "event.emit": _event_emit,
}
