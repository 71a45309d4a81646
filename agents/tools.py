"""The tools an agent runtime's model may call, built from its manifest.

Four families, all named in `runtime.agent.tools`:

    builtin   emit-event, create-notification, create-form (the hub's own tools)
    plugin    the package's registered tools (`plugin`, or every contributed tool of a
              single-runtime package when `plugin` is omitted)
    dataset   <dataset>-get / -list / -upsert / -update, generated from contributes.datasets
              as each dataset's ops allow, with JSON Schemas taken from the dataset schema
    service   model-facing services of active providers (`services`), named by `as` or the
              contract without its version, dots as dashes

`defer` holds tools back: they are listed in the description of the builtin `load-tools` and
sent to the model only after it loads them (agents.loop). This module only describes tools;
agents.runtime executes them.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from agents.loop import LOAD_TOOLS, RUNTIME_DONE, ToolSpec
from catalogue.manifest.types import Manifest, RuntimeManifest, thaw

BUILTIN_TOOLS = ("emit-event", "create-notification", "create-form")
DATASET_TOOLS = ("get", "list", "upsert", "update")
OP_KINDS = ("set", "merge", "inc", "append", "insert", "remove", "upsertItem", "delete")
LIST_LIMIT = 50  # records a <dataset>-list call returns by default; at most LIST_MAX
LIST_MAX = 200
NOTIFICATION_LEVELS = ("info", "success", "warning", "error")
FORM_FIELD_TYPES = ("text", "textarea", "number", "integer", "toggle", "select")
KEBAB = "^[a-z0-9]+(-[a-z0-9]+)*$"


@dataclass(frozen=True)
class ToolBinding:
    """One tool the model may see, and what answers it.

    kind:   builtin | plugin | dataset | service
    target: the builtin or plugin tool name, "<dataset>:<action>", or the service contract
    """

    spec: ToolSpec
    kind: str
    target: str
    provider: str | None = None  # the package answering a service tool


@dataclass(frozen=True)
class DatasetInfo:
    name: str
    schema: Mapping[str, Any]
    key: str | None
    ops: tuple[str, ...]
    tools: tuple[str, ...]
    description: str


@dataclass
class Toolset:
    offered: list[ToolBinding] = field(default_factory=list)
    deferred: list[ToolBinding] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    datasets: dict[str, DatasetInfo] = field(default_factory=dict)

    def binding(self, name: str) -> ToolBinding | None:
        for item in (*self.offered, *self.deferred):
            if item.spec.name == name:
                return item
        return None

    @property
    def names(self) -> list[str]:
        return [b.spec.name for b in (*self.offered, *self.deferred)]


# ----------------------------------------------------------------------------- schemas


def _read_json(root: str, written: str) -> Any:
    with open(os.path.normpath(os.path.join(root, written)), encoding="utf-8") as handle:
        return json.load(handle)


def model_schema(schema: Any) -> dict[str, Any]:
    """A JSON Schema as a model reads it: without $schema and $id, which some APIs refuse."""
    if not isinstance(schema, Mapping):
        return {"type": "object"}
    return {k: v for k, v in thaw(schema).items() if k not in ("$schema", "$id")}


def dataset_infos(manifest: Manifest) -> dict[str, DatasetInfo]:
    """contributes.datasets with the schema files read and the spec's tool defaults applied."""
    found: dict[str, DatasetInfo] = {}
    for name, decl in thaw(manifest.contributes.get("datasets") or {}).items():
        try:
            schema = _read_json(manifest.path, decl["schema"])
        except (OSError, ValueError):
            # An unreadable schema refuses every write at commit (sessions.operations); the model
            # still gets the tools, with an honest schema-free description.
            schema = {}
        ops = tuple(decl.get("ops") or OP_KINDS)
        if decl.get("tools"):
            tools = tuple(decl["tools"])
        else:
            # Defaults: get and list, upsert when ops allow set, update when any other op is allowed.
            tools = ("get", "list")
            if "set" in ops:
                tools += ("upsert",)
            if any(op != "set" for op in ops):
                tools += ("update",)
        found[name] = DatasetInfo(
            name=name,
            schema=schema,
            key=decl.get("key"),
            ops=ops,
            tools=tools,
            description=str(decl.get("description") or ""),
        )
    return found


def _op_schema(ops: Sequence[str]) -> dict[str, Any]:
    """One operation of a <dataset>-update call, limited to the op kinds the dataset allows."""
    return {
        "type": "object",
        "required": ["op"],
        "properties": {
            "op": {"type": "string", "enum": list(ops)},
            "path": {
                "type": "string",
                "description": "JSON pointer inside the record, e.g. /quantity; omit for the whole record.",
            },
            "value": {"description": "set, merge, append, insert, upsertItem: the value."},
            "by": {"type": "number", "description": "inc: the amount (negative to decrease)."},
            "min": {"type": "number", "description": "inc: refuse a result below this."},
            "max": {"type": "number", "description": "inc: refuse a result above this."},
            "index": {"type": "integer", "minimum": 0, "description": "insert, remove: the position."},
            "match": {"description": "remove, upsertItem: fields an array item must have."},
            "key": {"type": "string", "description": "upsertItem: the item field that identifies it."},
        },
    }


def dataset_tool(info: DatasetInfo, action: str) -> ToolSpec:
    about = f" The dataset holds: {info.description}" if info.description else ""
    record = model_schema(info.schema)
    key = {"type": "string", "minLength": 1, "maxLength": 200, "description": "The record's key."}
    if action == "get":
        return ToolSpec(
            f"{info.name}-get",
            f"Read one record of the {info.name} dataset by key; null when there is none.{about}",
            {"type": "object", "required": ["key"], "additionalProperties": False,
             "properties": {"key": key}},
        )
    if action == "list":
        return ToolSpec(
            f"{info.name}-list",
            f"List records of the {info.name} dataset in key order, {LIST_LIMIT} at a time; pass the "
            f"last key you saw as after for the next page.{about}",
            {"type": "object", "additionalProperties": False, "properties": {
                "after": {"type": "string", "description": "Only keys after this one."},
                "limit": {"type": "integer", "minimum": 1, "maximum": LIST_MAX},
            }},
        )
    if action == "upsert":
        if info.key:
            # The key is a field of the record, so the model cannot write a mismatching one.
            return ToolSpec(
                f"{info.name}-upsert",
                f"Create or replace one whole record of the {info.name} dataset; its key is the "
                f"record's {info.key} field.{about}",
                {"type": "object", "required": ["value"], "additionalProperties": False,
                 "properties": {"value": record}},
            )
        return ToolSpec(
            f"{info.name}-upsert",
            f"Create or replace one whole record of the {info.name} dataset under a key.{about}",
            {"type": "object", "required": ["key", "value"], "additionalProperties": False,
             "properties": {"key": key, "value": record}},
        )
    if action == "update":
        allowed = list(info.ops)
        return ToolSpec(
            f"{info.name}-update",
            f"Change one record of the {info.name} dataset with operations applied in order "
            f"(allowed: {', '.join(allowed)}); all apply or none.{about} Record schema: "
            + json.dumps(record, ensure_ascii=False)[:1500],
            {"type": "object", "required": ["key", "ops"], "additionalProperties": False,
             "properties": {"key": key, "ops": {"type": "array", "minItems": 1, "maxItems": 20,
                                                "items": _op_schema(allowed)}}},
        )
    raise ValueError(f"unknown dataset tool {action!r}")


def builtin_tool(name: str, *, events: Mapping[str, Mapping[str, Any]]) -> ToolSpec | None:
    if name == "emit-event":
        directory = "\n".join(
            f"- {topic}: {str(meta.get('description') or '').strip()}" for topic, meta in events.items()
        )
        return ToolSpec(
            "emit-event",
            "Emit a session event other runtimes can react to. The payload must match the "
            f"topic's schema. Topics:\n{directory or '(none are declared in this session)'}",
            {"type": "object", "required": ["topic"], "additionalProperties": False, "properties": {
                "topic": {"type": "string", "enum": list(events)} if events else {"type": "string"},
                "payload": {"type": "object"},
            }},
        )
    if name == "create-notification":
        return ToolSpec(
            "create-notification",
            "Send the player a short notice shown beside the story.",
            {"type": "object", "required": ["title"], "additionalProperties": False, "properties": {
                "title": {"type": "string", "minLength": 1, "maxLength": 120},
                "body": {"type": "string", "maxLength": 1000},
                "level": {"type": "string", "enum": list(NOTIFICATION_LEVELS)},
            }},
        )
    if name == "create-form":
        return ToolSpec(
            "create-form",
            "Ask the player for structured input with a small form; the answer arrives later.",
            {"type": "object", "required": ["title", "fields"], "additionalProperties": False,
             "properties": {
                 "title": {"type": "string", "minLength": 1, "maxLength": 120},
                 "description": {"type": "string", "maxLength": 1000},
                 "submitLabel": {"type": "string", "maxLength": 40},
                 "fields": {"type": "array", "minItems": 1, "maxItems": 20, "items": {
                     "type": "object", "required": ["name", "label"], "additionalProperties": False,
                     "properties": {
                         "name": {"type": "string", "pattern": KEBAB, "maxLength": 64},
                         "label": {"type": "string", "minLength": 1, "maxLength": 120},
                         "type": {"type": "string", "enum": list(FORM_FIELD_TYPES)},
                         "required": {"type": "boolean"},
                         "options": {"type": "array", "maxItems": 50, "items": {
                             "type": "object", "required": ["value", "label"],
                             "properties": {"value": {"type": "string"}, "label": {"type": "string"}},
                         }},
                     },
                 }},
             }},
        )
    return None


def service_tool_name(entry: Any) -> tuple[str, str]:
    """(contract, tool name) of one agent.tools.services entry: `as`, or inventory.items@1 → inventory-items."""
    if isinstance(entry, Mapping):
        contract = str(entry["contract"])
        written = entry.get("as")
    else:
        contract, written = str(entry), None
    return contract, str(written) if written else re.sub(r"@\d+$", "", contract).replace(".", "-")


def service_spec(name: str, contract: str, provider: Manifest,
                 registered: Mapping[str, Any] | None = None) -> ToolSpec:
    """The tool for a model-facing service: the registration's schema when the host reports it,
    else the contract's published schema (contracts.<id>.schema of the provider)."""
    registered = registered or {}
    schema: Any = registered.get("jsonSchema")
    description = str(registered.get("description") or "")
    if not schema:
        decl = thaw((provider.data.get("contracts") or {}).get(contract) or {})
        try:
            schema = _read_json(provider.path, decl["schema"]) if decl.get("schema") else {}
        except (OSError, ValueError):
            schema = {}
        description = description or str(decl.get("description") or "")
        if not description and isinstance(schema, Mapping):
            description = str(schema.get("description") or schema.get("title") or "")
    description = description or f"Call the {contract} service."
    return ToolSpec(name, f"{description} (service {contract} of {provider.id})", model_schema(schema))


# ----------------------------------------------------------------------------- the toolset


def tool_whitelist(runtime: RuntimeManifest) -> Mapping[str, Any]:
    return thaw((runtime.data.get("agent") or {}).get("tools") or {})


def build_toolset(
    *,
    manifest: Manifest,
    runtime: RuntimeManifest,
    registered_tools: Iterable[Mapping[str, Any]],
    services: Mapping[str, Manifest] | None = None,
    registered_services: Mapping[str, Mapping[str, Any]] | None = None,
    events: Mapping[str, Mapping[str, Any]] | None = None,
    can_write: Mapping[str, bool] | None = None,
) -> Toolset:
    """Every tool the runtime's model may call, split into offered and deferred.

    registered_tools: the package's tools as the plugin host reported them
                      ({name, description, jsonSchema}).
    services:         contract -> the one active provider that offers it to models.
    events:           the session's event directory, topic -> {description, schema, plugin}.
    can_write:        plugin -> whether this run may change that plugin's data (a write
                      service is left out of a run that cannot; default: yes).
    """
    whitelist = tool_whitelist(runtime)
    agent = thaw(runtime.data.get("agent") or {})
    toolset = Toolset(datasets=dataset_infos(manifest))
    bindings: list[ToolBinding] = []

    def add(binding: ToolBinding) -> None:
        name = binding.spec.name
        if name in (RUNTIME_DONE, LOAD_TOOLS) or any(b.spec.name == name for b in bindings):
            toolset.warnings.append(f"tool {name} ({binding.kind}) is left out: the name is already taken")
            return
        bindings.append(binding)

    for name in whitelist.get("builtin") or ():
        spec = builtin_tool(str(name), events=events or {})
        if spec is None:
            toolset.warnings.append(f"builtin tool {name} is not available on this hub")
            continue
        add(ToolBinding(spec, "builtin", str(name)))

    registered = {str(t["name"]): t for t in registered_tools}
    contributed = [str(t) for t in manifest.contributes.get("tools") or ()]
    listed = whitelist.get("plugin")
    if listed is None:
        listed = contributed if len(manifest.runtimes) == 1 else []
    for name in listed:
        item = registered.get(str(name))
        if item is None:
            toolset.warnings.append(f"plugin tool {name} is not registered by {manifest.id}")
            continue
        add(ToolBinding(
            ToolSpec(str(name), str(item.get("description") or ""),
                     model_schema(item.get("jsonSchema") or {"type": "object"})),
            "plugin", str(name),
        ))

    for entry in whitelist.get("datasets") or ():
        dataset = str(entry["dataset"] if isinstance(entry, Mapping) else entry)
        info = toolset.datasets.get(dataset)
        if info is None:
            toolset.warnings.append(f"dataset {dataset} is not declared in contributes.datasets")
            continue
        wanted = entry.get("tools") if isinstance(entry, Mapping) else info.tools
        for action in wanted:
            if action not in info.tools:
                toolset.warnings.append(f"dataset {dataset} does not offer the {action} tool")
                continue
            add(ToolBinding(dataset_tool(info, str(action)), "dataset", f"{dataset}:{action}"))

    for entry in whitelist.get("services") or ():
        contract, name = service_tool_name(entry)
        provider = (services or {}).get(contract)
        if provider is None:
            toolset.warnings.append(
                f"service {contract} has no active provider that offers it to models; tool {name} is left out"
            )
            continue
        decl = _service_decl(provider, contract)
        if decl.get("access") == "write" and not (can_write or {}).get(provider.id, True):
            toolset.warnings.append(
                f"service {contract} writes {provider.id}'s data, which this run cannot change; tool {name} is left out"
            )
            continue
        spec = service_spec(name, contract, provider, (registered_services or {}).get(contract))
        add(ToolBinding(spec, "service", contract, provider=provider.id))

    defer = whitelist.get("defer")
    forced = agent.get("toolChoice")
    keep = {str(forced["name"])} if isinstance(forced, Mapping) and forced.get("name") else set()
    if defer is True:
        deferred_names = {b.spec.name for b in bindings} - keep
    elif defer:
        deferred_names = {str(n) for n in defer} - keep
        for name in sorted(deferred_names - {b.spec.name for b in bindings}):
            toolset.warnings.append(f"defer names {name}, which is not a tool of this runtime")
    else:
        deferred_names = set()
    for binding in bindings:
        (toolset.deferred if binding.spec.name in deferred_names else toolset.offered).append(binding)
    return toolset


def _service_decl(provider: Manifest, contract: str) -> dict[str, Any]:
    for entry in thaw(provider.contributes.get("services") or ()):
        if isinstance(entry, Mapping) and entry.get("contract") == contract:
            return dict(entry)
        if entry == contract:
            return {"contract": contract}
    return {"contract": contract}


def service_providers(manifests: Iterable[Manifest]) -> dict[str, Manifest]:
    """contract -> the package that registers it as a model-facing service (first wins)."""
    found: dict[str, Manifest] = {}
    for manifest in manifests:
        for entry in thaw(manifest.contributes.get("services") or ()):
            if isinstance(entry, Mapping) and entry.get("modelFacing") is True:
                found.setdefault(str(entry["contract"]), manifest)
    return found


def event_directory(manifests: Iterable[Manifest]) -> dict[str, dict[str, Any]]:
    """The session's event directory: topic -> {plugin, description, schema, advertise}."""
    found: dict[str, dict[str, Any]] = {}
    for manifest in manifests:
        for entry in thaw(manifest.contributes.get("events") or ()):
            try:
                schema = _read_json(manifest.path, entry["schema"])
            except (OSError, ValueError, KeyError):
                schema = {"not": {}, "description": "the event's schema cannot be read"}
            found.setdefault(str(entry["topic"]), {
                "plugin": manifest.id,
                "description": str(entry.get("description") or ""),
                "schema": schema,
                "advertise": entry.get("advertise", True) is not False,
            })
    return found
