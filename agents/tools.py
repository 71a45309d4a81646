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
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from jsonschema import exceptions as schema_exceptions
from jsonschema import validators as schema_validators

from agents.loop import LOAD_TOOLS, RUNTIME_DONE, ToolSpec
from catalogue.manifest.normalise import service_tool_name as default_service_tool_name
from catalogue.manifest.types import Manifest, RuntimeManifest, thaw

BUILTIN_TOOLS = ("emit-event", "create-notification", "create-form")
DATASET_TOOLS = ("get", "list", "upsert", "update")
OP_KINDS = ("set", "merge", "inc", "append", "insert", "remove", "upsertItem", "delete")
LIST_LIMIT = 50  # records a <dataset>-list call returns by default; at most LIST_MAX
LIST_MAX = 200
NOTIFICATION_LEVELS = ("info", "success", "warning", "error")
NOTIFICATION_TITLE_MAX = 120
# checkbox and toggle are both a boolean; a select needs options.
FORM_FIELD_TYPES = ("text", "textarea", "number", "integer", "checkbox", "toggle", "select")
# A form field name is a key of the submitted values; camelCase and kebab-case both read well.
FORM_FIELD_NAME = "^[A-Za-z][A-Za-z0-9_-]{0,63}$"
# A function's own interactionId travels in the submit URL, so it keeps to URL-safe characters.
FORM_ID = "^[A-Za-z0-9][A-Za-z0-9._:/-]{0,199}$"
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
            "index": {
                "type": "integer",
                "minimum": 0,
                "description": "insert, remove: the position.",
            },
            "match": {"description": "remove, upsertItem: fields an array item must have."},
            "key": {
                "type": "string",
                "description": "upsertItem: the item field that identifies it.",
            },
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
            {
                "type": "object",
                "required": ["key"],
                "additionalProperties": False,
                "properties": {"key": key},
            },
        )
    if action == "list":
        return ToolSpec(
            f"{info.name}-list",
            f"List records of the {info.name} dataset in key order, {LIST_LIMIT} at a time; pass the "
            f"last key you saw as after for the next page.{about}",
            {
                "type": "object",
                "additionalProperties": False,
                "properties": {
                    "after": {"type": "string", "description": "Only keys after this one."},
                    "limit": {"type": "integer", "minimum": 1, "maximum": LIST_MAX},
                },
            },
        )
    if action == "upsert":
        if info.key:
            # The key is a field of the record, so the model cannot write a mismatching one.
            return ToolSpec(
                f"{info.name}-upsert",
                f"Create or replace one whole record of the {info.name} dataset; its key is the "
                f"record's {info.key} field.{about}",
                {
                    "type": "object",
                    "required": ["value"],
                    "additionalProperties": False,
                    "properties": {"value": record},
                },
            )
        return ToolSpec(
            f"{info.name}-upsert",
            f"Create or replace one whole record of the {info.name} dataset under a key.{about}",
            {
                "type": "object",
                "required": ["key", "value"],
                "additionalProperties": False,
                "properties": {"key": key, "value": record},
            },
        )
    if action == "update":
        allowed = list(info.ops)
        return ToolSpec(
            f"{info.name}-update",
            f"Change one record of the {info.name} dataset with operations applied in order "
            f"(allowed: {', '.join(allowed)}); all apply or none.{about} Record schema: "
            + json.dumps(record, ensure_ascii=False)[:1500],
            {
                "type": "object",
                "required": ["key", "ops"],
                "additionalProperties": False,
                "properties": {
                    "key": key,
                    "ops": {
                        "type": "array",
                        "minItems": 1,
                        "maxItems": 20,
                        "items": _op_schema(allowed),
                    },
                },
            },
        )
    raise ValueError(f"unknown dataset tool {action!r}")


def notification_schema() -> dict[str, Any]:
    """A notice for the player: create-notification's arguments, and one entry of a function's
    effects.notifications."""
    return {
        "type": "object",
        "required": ["title"],
        "additionalProperties": False,
        "properties": {
            "title": {"type": "string", "minLength": 1, "maxLength": NOTIFICATION_TITLE_MAX},
            "body": {"type": "string", "maxLength": 1000},
            "level": {"type": "string", "enum": list(NOTIFICATION_LEVELS)},
        },
    }


def form_schema(*, interaction: bool = False) -> dict[str, Any]:
    """The shape of a form: create-form's arguments, and (interaction=True) one entry of a
    function's effects.interactions, which also carries type "form" and its own interactionId.

    One schema for both paths, so an agent and a function can ask exactly the same things.
    """
    field_schema = {
        "type": "object",
        "required": ["name", "label"],
        "additionalProperties": False,
        "properties": {
            "name": {"type": "string", "pattern": FORM_FIELD_NAME},
            "label": {"type": "string", "minLength": 1, "maxLength": 120},
            "type": {"type": "string", "enum": list(FORM_FIELD_TYPES)},
            "required": {"type": "boolean"},
            "description": {"type": "string", "maxLength": 500},
            "placeholder": {"type": "string", "maxLength": 200},
            "default": {"description": "The value the field starts with."},
            "min": {"type": "number", "description": "number, integer: the smallest value."},
            "max": {"type": "number", "description": "number, integer: the largest value."},
            "step": {
                "type": "number",
                "exclusiveMinimum": 0,
                "description": "number, integer: values are min (or 0) plus a multiple of step.",
            },
            # select: a plain string is an option whose label is its value.
            "options": {
                "type": "array",
                "maxItems": 50,
                "items": {
                    "anyOf": [
                        {"type": "string", "maxLength": 200},
                        {
                            "type": "object",
                            "required": ["value", "label"],
                            "additionalProperties": False,
                            "properties": {
                                "value": {"type": "string", "maxLength": 200},
                                "label": {"type": "string", "maxLength": 200},
                            },
                        },
                    ]
                },
            },
        },
    }
    properties: dict[str, Any] = {
        "title": {"type": "string", "minLength": 1, "maxLength": 120},
        "description": {"type": "string", "maxLength": 1000},
        "notice": {
            "type": "string",
            "maxLength": 1000,
            "description": "A line above the fields, in the game's language.",
        },
        "submitLabel": {"type": "string", "maxLength": 40},
        "fields": {"type": "array", "minItems": 1, "maxItems": 20, "items": field_schema},
        "validation": {
            "type": "object",
            "required": ["name"],
            "additionalProperties": False,
            "properties": {"name": {"type": "string", "minLength": 1, "maxLength": 100}},
        },
    }
    required = ["title", "fields"]
    if interaction:
        properties = {
            "type": {"const": "form"},
            "interactionId": {"type": "string", "pattern": FORM_ID},
            **properties,
        }
        required = ["type", "interactionId", *required]
    return {
        "type": "object",
        "required": required,
        "additionalProperties": False,
        "properties": properties,
    }


def schema_error(validator: Any, value: Any, *, base: str = "") -> str | None:
    """None when value passes the JSON Schema validator; else "at <pointer>: <message> [<rule>]",
    the pointer prefixed with base (where the caller found value)."""
    error = schema_exceptions.best_match(validator.iter_errors(value))
    if error is None:
        return None
    where = base + "".join(f"/{p}" for p in error.absolute_path)
    return f"at {where or '/'}: {error.message} [{error.validator}]"


def _compiled(schema: Mapping[str, Any]) -> Any:
    return schema_validators.validator_for(schema)(schema)


# The built-in shapes never change: compiled once, not for every form or notice checked.
_FORM_VALIDATORS = {kind: _compiled(form_schema(interaction=kind)) for kind in (False, True)}
_NOTIFICATION_VALIDATOR = _compiled(notification_schema())


def notification_normalise(notice: Any) -> Any:
    """Covel's notification shape, {title?, message, level?}, in ours, {title, body?, level?}.

    Covel shows the title and the message, or whichever of them is given. Without a title the
    message's first line (cut to a title's length) is the title and the whole message the body.
    Anything else is left as it is, for notification_problem to name.
    """
    if not isinstance(notice, dict) or not isinstance(notice.get("message"), str):
        return notice
    out = {k: v for k, v in notice.items() if k != "message"}
    message = notice["message"].strip()
    title = out.get("title")
    if not (isinstance(title, str) and title.strip()):
        title = message.splitlines()[0][:NOTIFICATION_TITLE_MAX] if message else ""
        out["title"] = title
    if message and message != title and "body" not in out:
        out["body"] = message
    return out


def notification_problem(notice: Any, *, base: str = "") -> str | None:
    """None when notice is a usable notification; else where and why not (see schema_error)."""
    return schema_error(_NOTIFICATION_VALIDATOR, notice, base=base)


def form_problem(
    form: Any, *, validators: Iterable[str], interaction: bool = False, base: str = ""
) -> str | None:
    """None when form is a usable form; else "at <pointer>: <what is wrong> [<rule>]", the
    pointer prefixed with base (where the caller found the form).

    Beyond the schema: field names are unique, a select has options, min is not above max,
    and a named validation is one the package lists in contributes.forms.
    """
    problem = schema_error(_FORM_VALIDATORS[interaction], form, base=base)
    if problem:
        return problem
    seen: set[str] = set()
    for index, item in enumerate(form["fields"]):
        if item["name"] in seen:
            return f"at {base}/fields/{index}/name: the field name {item['name']!r} is used twice [uniqueFieldNames]"
        seen.add(item["name"])
        if item.get("type") == "select" and not item.get("options"):
            return f"at {base}/fields/{index}/options: a select field needs at least one option [selectOptions]"
        if "min" in item and "max" in item and item["min"] > item["max"]:
            return f"at {base}/fields/{index}/min: min {item['min']} is above max {item['max']} [minMax]"
    name = (form.get("validation") or {}).get("name")
    declared = [str(v) for v in validators]
    if name is not None and name not in declared:
        listed = ", ".join(declared) or "none"
        return (
            f"at {base}/validation/name: the validator {name!r} is not listed in contributes.forms "
            f"(listed: {listed}) [contributes.forms]"
        )
    return None


def event_catalog_line(topic: str, meta: Mapping[str, Any]) -> str:
    """One topic of the session's event directory as a model reads it: Covel's catalogue line,
    "- topic: description (required: field: type, ...)" (apps/server .../event-directory.ts)."""
    description = " ".join(str(meta.get("description") or "").split())
    schema = meta.get("schema") if isinstance(meta.get("schema"), Mapping) else {}
    properties = schema.get("properties") if isinstance(schema.get("properties"), Mapping) else {}
    required = [str(r) for r in schema.get("required") or () if isinstance(r, str)]
    fields = []
    for name in required:
        kind = (
            properties.get(name, {}).get("type")
            if isinstance(properties.get(name), Mapping)
            else None
        )
        fields.append(f"{name}: {kind}" if isinstance(kind, str) else name)
    line = f"- {topic}: {description}" if description else f"- {topic}"
    return f"{line} (required: {', '.join(fields)})" if fields else line


def builtin_tool(name: str, *, events: Mapping[str, Mapping[str, Any]]) -> ToolSpec | None:
    if name == "emit-event":
        directory = "\n".join(event_catalog_line(topic, meta) for topic, meta in events.items())
        # Covel's shape (packages/tools/src/builtin/emit-event.ts): {topic, data}, data an object
        # that defaults to {}. One topic per call; the same topic twice in a run is skipped.
        return ToolSpec(
            "emit-event",
            "Emit a domain event declared by an active package, one topic per call. data must "
            f"match the topic's schema. Topics:\n{directory or '(none are declared in this session)'}",
            {
                "type": "object",
                "required": ["topic"],
                "properties": {
                    "topic": {"type": "string", "enum": list(events)}
                    if events
                    else {"type": "string"},
                    "data": {"type": "object"},
                },
            },
        )
    if name == "create-notification":
        return ToolSpec(
            "create-notification",
            "Send the player a short notice shown beside the story.",
            notification_schema(),
        )
    if name == "create-form":
        return ToolSpec(
            "create-form",
            "Ask the player for structured input with a small form; the answer arrives later, as "
            "the player's input of a new turn. notice is a line above the fields (say why the form "
            "is shown again); validation names a validator the package declares.",
            form_schema(),
        )
    return None


def service_tool_name(entry: Any) -> tuple[str, str]:
    """(contract, tool name) of one agent.tools.services entry: `as`, or inventory.items@1 → inventory-items."""
    if isinstance(entry, Mapping):
        contract = str(entry["contract"])
        written = entry.get("as")
    else:
        contract, written = str(entry), None
    return contract, str(written) if written else default_service_tool_name(contract)


def service_spec(
    name: str, contract: str, provider: Manifest, registered: Mapping[str, Any] | None = None
) -> ToolSpec:
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
    return ToolSpec(
        name, f"{description} (service {contract} of {provider.id})", model_schema(schema)
    )


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
            toolset.warnings.append(
                f"tool {name} ({binding.kind}) is left out: the name is already taken"
            )
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
        add(
            ToolBinding(
                ToolSpec(
                    str(name),
                    str(item.get("description") or ""),
                    model_schema(item.get("jsonSchema") or {"type": "object"}),
                ),
                "plugin",
                str(name),
            )
        )

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
        (toolset.deferred if binding.spec.name in deferred_names else toolset.offered).append(
            binding
        )
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
            found.setdefault(
                str(entry["topic"]),
                {
                    "plugin": manifest.id,
                    "description": str(entry.get("description") or ""),
                    "schema": schema,
                    "advertise": entry.get("advertise", True) is not False,
                },
            )
    return found
