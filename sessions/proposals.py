"""The write requests (proposals) a function run hands back, checked and sorted for the commit.

Plain Python, no Django. A proposal is `{type, payload, source?}`, as Covel's SDK makes them
(makeProposal, a tool's pendingProposals); a function's `effects.pluginData` becomes proposals
too. Every proposal type Covel's commit accepts is named here and has a home: plugin-data
writes, session lore, events, story text appended to the turn, forms, UI blocks of the turn,
and the session-level records (characters, state, working memory) kept under SESSION_DATA.
asset.generate is refused by name (the hub has no media store its ref could name), and a type
Covel does not know is refused with unknown-proposal-type, never dropped. See docs/play.md
("Proposals and effects") for the table of types, homes, checks and codes.

The checks are Covel's (packages/runtime/src/commit/): non-empty namespace and key, no
framework (`_`) namespace except the package's own `_hidden.*` ones, a batch that is a non-empty
list, lore entries with an id, text content and a known strategy, an owner that is the writing
package, a state patch's table and field, a working-memory scope, key and value, a character's
id, name, type and version, a UI block's parts. Size limits and dataset schemas are checked when
the overlay stages the write (sessions.operations), as for ctx.pluginData.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
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

# The owner of the session-level records Covel keeps per session, not per package: characters
# (character.upsert), state (state.patch) and working memory (working_memory.set). No package id
# starts with "_", so no package can read or write them through its own plugin data; they stage
# and commit in the turn's overlay like plugin data, so a dropped runtime keeps none of them.
SESSION_DATA = "_session"
CHARACTERS = "characters"
STATE = "state"
WORKING_MEMORY = "working_memory"
MEMORY_SCOPES = ("player", "story", "shared")
# Covel's character types when the world names none of its own, plus the one player character.
CHARACTER_TYPES = ("player", "npc", "companion")
CHARACTER_KEYS = {"id", "name", "type", "description", "fields", "version", "expectedVersion"}
CHARACTER_KEYS |= {"createdAt", "mirrorPluginId", "mirrorPluginIds"}
INTERACTION_TYPES = ("form", "choice", "confirmation")

# The Covel types the hub cannot commit: (code, why). asset.generate's commit shows a picture or
# sound already in Covel's media store ({ref: {id, mime, size}}); the hub has no media store.
UNSUPPORTED = {
    "asset.generate": (
        "asset-store-unavailable",
        "the hub has no media store, so the asset its ref names cannot be shown",
    ),
    # Types of newer Covel commits the hub has no model for yet: refused by name, not as
    # unknown, so a package learns which of its writes is not taken here.
    "character.schema.set": (
        "character-schema-unsupported",
        "the character field definitions are the world's data/world.data.yaml characterSchema",
    ),
    "dimension.initialize": (
        "dimensions-unsupported",
        "the hub has no world dimensions; keep the values in plugin data",
    ),
    "dimension.update": (
        "dimensions-unsupported",
        "the hub has no world dimensions; keep the values in plugin data",
    ),
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
    narrative: list[dict[str, Any]] = field(default_factory=list)  # {content, kind}
    forms: list[tuple[str, dict[str, Any]]] = field(default_factory=list)  # (where, form entry)
    blocks: list[dict[str, Any]] = field(default_factory=list)  # ui.render: {id, data}
    characters: list[tuple[str, dict[str, Any]]] = field(default_factory=list)  # (where, payload)
    state: list[dict[str, Any]] = field(default_factory=list)  # {table, field, value, reason?}
    memory: list[dict[str, Any]] = field(default_factory=list)  # {scope, key, value, schemaRef?}


def reserved_namespace(namespace: str) -> bool:
    """Covel's rule: `_` namespaces are the framework's, except a package's `_hidden.*` ones."""
    return namespace.startswith("_") and not namespace.startswith(HIDDEN_PREFIX)


def _name(value: Any, what: str, where: str) -> str:
    if not isinstance(value, str) or not value:
        raise ProposalRefused("proposal-invalid", f"{where}: {what} must be a non-empty string")
    return value


def _text(payload: Mapping[str, Any], name: str, code: str, at: str, *, strip: bool = False) -> str:
    """payload[name] as a non-empty string (not only blanks, with strip), or ProposalRefused."""
    value = payload.get(name)
    if not isinstance(value, str) or not (value.strip() if strip else value):
        raise ProposalRefused(code, f"{at}/{name}: must be a non-empty string")
    return value


def _present(payload: Mapping[str, Any], name: str, code: str, at: str) -> None:
    if name not in payload:
        raise ProposalRefused(code, f"{at}/{name}: is missing")


def _string_or_none(payload: Mapping[str, Any], name: str, code: str, at: str) -> None:
    if payload.get(name) is not None and not isinstance(payload[name], str):
        raise ProposalRefused(code, f"{at}/{name}: must be a string when given")


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
    entry_id = _text(raw, "id", "lore-entry-invalid", where)
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


def _narrative_append(
    batch: ProposalBatch, payload: Mapping[str, Any], where: str, package: str
) -> None:
    content, kind = payload.get("content"), payload.get("kind", "plugin")
    if not isinstance(content, str):
        raise ProposalRefused("narrative-invalid", f"{where}/payload/content: must be a string")
    if not isinstance(kind, str) or not kind:
        raise ProposalRefused(
            "narrative-invalid", f"{where}/payload/kind: must be a non-empty string"
        )
    batch.narrative.append({"content": content, "kind": kind})


def _interaction_request(
    batch: ProposalBatch, payload: Mapping[str, Any], where: str, package: str
) -> None:
    """A form to ask the player. Covel's normalizer spreads an effects.interactions entry into
    the payload; its typed payload nests the form under `data`: both are taken."""
    at = f"{where}/payload"
    _text(payload, "interactionId", "interaction-invalid", at)
    kind = payload.get("type", "form")
    if kind not in INTERACTION_TYPES:
        raise ProposalRefused(
            "interaction-invalid",
            f"{at}/type: {kind!r} is not one of {', '.join(INTERACTION_TYPES)}",
        )
    if kind != "form":
        raise ProposalRefused(
            "interaction-type-unsupported",
            f"{at}/type: the hub shows forms only, not a {kind} (ask it as a form with a "
            "select or checkbox field)",
        )
    data = payload.get("data")
    if data is not None and not isinstance(data, Mapping):
        raise ProposalRefused("interaction-invalid", f"{at}/data: must be an object")
    rest = {k: v for k, v in payload.items() if k not in ("data", "narrativeTemplate")}
    batch.forms.append((at, {**dict(data or {}), **rest, "type": "form"}))


def _ui_render(batch: ProposalBatch, payload: Mapping[str, Any], where: str, package: str) -> None:
    parts = payload.get("parts")
    if not isinstance(parts, list) or not parts:
        raise ProposalRefused(
            "ui-render-invalid", f"{where}/payload/parts: must be a non-empty array"
        )
    for index, part in enumerate(parts):
        if not isinstance(part, Mapping):
            raise ProposalRefused(
                "ui-render-invalid", f"{where}/payload/parts/{index}: must be an object"
            )
    batch.blocks.append({"id": f"ui-{len(batch.blocks) + 1}", "data": dict(payload)})


def _state_patch(
    batch: ProposalBatch, payload: Mapping[str, Any], where: str, package: str
) -> None:
    at, code = f"{where}/payload", "state-patch-invalid"
    for name in ("table", "field"):
        _text(payload, name, code, at)
    _present(payload, "value", code, at)
    _string_or_none(payload, "reason", code, at)
    batch.state.append(dict(payload))


def _working_memory_set(
    batch: ProposalBatch, payload: Mapping[str, Any], where: str, package: str
) -> None:
    at = f"{where}/payload"
    scope = payload.get("scope")
    if scope not in MEMORY_SCOPES:
        raise ProposalRefused(
            "working-memory-invalid",
            f"{at}/scope: {scope!r} is not one of {', '.join(MEMORY_SCOPES)}",
        )
    _text(payload, "key", "working-memory-invalid", at)
    _present(payload, "value", "working-memory-invalid", at)
    _string_or_none(payload, "schemaRef", "working-memory-invalid", at)
    batch.memory.append(dict(payload))


def _character_upsert(
    batch: ProposalBatch, payload: Mapping[str, Any], where: str, package: str
) -> None:
    """Covel's payload checks (@covel/shared characterUpsertPayloadSchema, strict): the record
    checks that need the session's characters run when it is staged (character_writes)."""
    at = f"{where}/payload"
    extra = sorted(set(payload) - CHARACTER_KEYS)
    if extra:
        raise ProposalRefused(
            "character-invalid",
            f"{at}/{extra[0]}: is not a character field ({', '.join(sorted(CHARACTER_KEYS))})",
        )
    for name in ("id", "name"):
        _text(payload, name, "character-invalid", at, strip=True)
    kind = payload.get("type")
    if kind is not None and (not isinstance(kind, str) or not kind.strip()):
        raise ProposalRefused(
            "character-invalid", f"{at}/type: must be a non-empty string when given"
        )
    for name in ("description", "createdAt"):
        if name in payload and not isinstance(payload[name], str):
            raise ProposalRefused("character-invalid", f"{at}/{name}: must be a string when given")
    for name in ("version", "expectedVersion"):
        value = payload.get(name)
        if name in payload and (isinstance(value, bool) or not isinstance(value, int) or value < 1):
            raise ProposalRefused(
                "character-invalid", f"{at}/{name}: must be a positive integer when given"
            )
    mirrors = payload.get("mirrorPluginIds", [])
    if not isinstance(mirrors, list) or not all(isinstance(m, str) for m in mirrors):
        raise ProposalRefused(
            "character-invalid", f"{at}/mirrorPluginIds: must be an array of strings when given"
        )
    if "mirrorPluginId" in payload and not isinstance(payload["mirrorPluginId"], str):
        raise ProposalRefused(
            "character-invalid", f"{at}/mirrorPluginId: must be a string when given"
        )
    # Covel copies the record into each mirror package's `characters` data; here a package
    # writes only its own data, so a mirror of another package is refused, not skipped.
    other = next((m for m in [payload.get("mirrorPluginId"), *mirrors] if m and m != package), None)
    if other:
        raise ProposalRefused(
            "character-mirror-not-owned",
            f"{at}: {package} cannot mirror character {payload['id']!r} into the data of "
            f"{other!r}; a package writes only its own data",
        )
    batch.characters.append((at, dict(payload)))


def merge_characters(
    world: Sequence[Mapping[str, Any]], session: Sequence[Mapping[str, Any]]
) -> list[dict[str, Any]]:
    """The characters a run sees: the world's (characters/characters.json), each replaced by the
    session's record of the same id, then the session's others, oldest first."""
    own = {str(c.get("id")): dict(c) for c in session}
    merged = [own.pop(str(c.get("id")), None) or dict(c) for c in world]
    rest = sorted(own.values(), key=lambda c: (str(c.get("createdAt") or ""), str(c.get("id"))))
    return [*merged, *rest]


def character_record(
    payload: Mapping[str, Any], live: Mapping[str, Any] | None, *, where: str, now: str
) -> dict[str, Any]:
    """The session's record after one character.upsert, as Covel materialises it: with
    expectedVersion it patches the live record (no more than its version, fields merged, the
    version one up); without, it replaces the record."""
    expected = payload.get("expectedVersion")
    if expected is not None:
        if live is None or expected > int(live.get("version") or 1):
            raise ProposalRefused(
                "character-version-conflict",
                f"{where}/expectedVersion: {expected} for character {payload['id']!r}, whose "
                + (f"version is {live.get('version') or 1}" if live else "record does not exist"),
            )
    else:
        live = None
    record: dict[str, Any] = {
        "id": payload["id"],
        "name": live["name"] if live else payload["name"],
        "type": (live or {}).get("type") or payload.get("type") or "npc",
    }
    description = payload.get("description", (live or {}).get("description"))
    if description is not None:
        record["description"] = description
    fields = payload.get("fields")
    if live is not None:
        before = live.get("fields")
        if fields is None:
            fields = before
        elif isinstance(fields, Mapping) and isinstance(before, Mapping):
            fields = {**before, **fields}
    if fields is not None:
        record["fields"] = fields
    record["version"] = int(live.get("version") or 1) + 1 if live else payload.get("version", 1)
    record["createdAt"] = (live or {}).get("createdAt") or payload.get("createdAt") or now
    record["updatedAt"] = now
    return record


def character_writes(
    characters: Sequence[tuple[str, Mapping[str, Any]]],
    *,
    package: str,
    visible: Callable[[], list[Mapping[str, Any]]],
    now: str,
) -> list[tuple[str, str, str, list[Mapping[str, Any]]]]:
    """The (plugin, namespace, key, ops) writes of a run's character upserts: the SESSION_DATA
    record, and its copy in the package's own `characters` data when it mirrors itself.
    visible() lists the characters the run sees (the world's, the session's over them); Covel's
    world checks follow: a known type, at most one player character."""
    writes: list[tuple[str, str, str, list[Mapping[str, Any]]]] = []
    if not characters:
        return writes
    seen = {str(c.get("id")): dict(c) for c in visible()}
    for where, payload in characters:
        record = character_record(payload, seen.get(payload["id"]), where=where, now=now)
        if record["type"] not in CHARACTER_TYPES:
            raise ProposalRefused(
                "character-type-unknown",
                f"{where}/type: {record['type']!r} is not a character type here "
                f"({', '.join(CHARACTER_TYPES)})",
            )
        seen[record["id"]] = record
        players = [c["id"] for c in seen.values() if c.get("type") == "player"]
        if len(players) > 1:
            raise ProposalRefused(
                "character-player-taken",
                f"{where}/type: a session has at most one player character "
                f"({', '.join(str(p) for p in players)} would be)",
            )
        writes.append((SESSION_DATA, CHARACTERS, record["id"], [{"op": "set", "value": record}]))
        if package in [payload.get("mirrorPluginId"), *payload.get("mirrorPluginIds", [])]:
            writes.append((package, CHARACTERS, record["id"], [{"op": "set", "value": record}]))
    return writes


def record_writes(
    batch: ProposalBatch, *, changed_by: str, turn_id: str, now: str
) -> list[tuple[str, str, list[Mapping[str, Any]]]]:
    """The SESSION_DATA writes of a run's state patches and working memory: the current value
    of each (table, field) and (scope, key), saying who changed it on which turn."""
    writes: list[tuple[str, str, list[Mapping[str, Any]]]] = []
    for patch in batch.state:
        record = {
            "table": patch["table"],
            "field": patch["field"],
            "value": patch["value"],
            **({"reason": patch["reason"]} if patch.get("reason") is not None else {}),
            "changedBy": changed_by,
            "turnId": turn_id,
            "updatedAt": now,
        }
        key = f"{patch['table']}/{patch['field']}"
        writes.append((STATE, key, [{"op": "set", "value": record}]))
    for memory in batch.memory:
        record = {
            "scope": memory["scope"],
            "key": memory["key"],
            "value": memory["value"],
            **({"schemaRef": memory["schemaRef"]} if memory.get("schemaRef") is not None else {}),
            "changedBy": changed_by,
            "updatedAt": now,
        }
        key = f"{memory['scope']}/{memory['key']}"
        writes.append((WORKING_MEMORY, key, [{"op": "set", "value": record}]))
    return writes


def session_writes(
    overlay: Any,
    batch: ProposalBatch,
    *,
    runtime: str,
    package: str,
    world_characters: Sequence[Mapping[str, Any]],
    turn_id: str,
    now: str,
) -> list[tuple[str, str, str, list[Mapping[str, Any]]]]:
    """The (plugin, namespace, key, ops) writes of a run's session records: its characters
    (checked against the world's and those the run sees through the overlay), state patches
    and working memory; ProposalRefused names the first that cannot be."""

    def visible() -> list[dict[str, Any]]:
        staged = overlay.list(runtime=runtime, plugin=SESSION_DATA, namespace=CHARACTERS)
        own = [row["value"] for row in staged if isinstance(row["value"], dict)]
        return merge_characters(world_characters, own)

    characters = character_writes(batch.characters, package=package, visible=visible, now=now)
    records = record_writes(batch, changed_by=runtime, turn_id=turn_id, now=now)
    return characters + [(SESSION_DATA, *w) for w in records]


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
            code, why = UNSUPPORTED[kind]
            raise ProposalRefused(code, f"{where}: the hub does not commit {kind} proposals: {why}")
        handler = _HANDLERS.get(kind) if isinstance(kind, str) else None
        if handler is None:
            raise ProposalRefused(
                "unknown-proposal-type", f"{where}: unknown proposal type {kind!r}"
            )
        before = len(batch.blocks)
        handler(batch, _payload(proposal, where), where, package)
        if len(batch.blocks) > before and isinstance(proposal.get("id"), str) and proposal["id"]:
            batch.blocks[-1]["id"] = proposal["id"]  # Covel's block id is its proposal's
    return batch


_HANDLERS: dict[str, Any] = {
    "plugin.data": _plugin_data,
    "plugin.data.batch": _plugin_data_batch,
    "plugin.data.delete": _plugin_data_delete,
    "lorebook.upsert": _lorebook_upsert,
    "event.emit": _event_emit,
    "narrative.append": _narrative_append,
    "interaction.request": _interaction_request,
    "ui.render": _ui_render,
    "state.patch": _state_patch,
    "character.upsert": _character_upsert,
    "working_memory.set": _working_memory_set,
}
