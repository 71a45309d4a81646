"""Run one agent runtime of a package: prompt, tools, the loop, and what the tools wrote.

The turn executor (sessions.turns) and the offline case runner (sessions.cases) both call
run_agent_runtime with an AgentRuntimeContext: everything the run may read, and handles for
everything it may do (stage plugin-data writes, emit events, notify, ask with a form, call the
plugin host). The run never raises for model, tool or plugin trouble: it returns an AgentRun.

Writes are staged at once through context.data (a TurnOverlay in a turn), so a later tool call
of the same run reads them; they commit with the turn, or vanish when the caller marks the
runtime failed (TurnOverlay.complete(..., succeeded=False)).
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from jsonschema import validators

from agents.gateway import Endpoint, ModelError
from agents.loop import AgentRun, ToolOutcome, run_agent
from agents.prompt import DataEntry, PromptContext, Turn, assemble
from agents.tools import (
    LIST_LIMIT,
    LIST_MAX,
    ToolBinding,
    Toolset,
    build_toolset,
    event_catalog_line,
    form_problem,
    schema_error,
)
from catalogue.manifest.types import Manifest, RuntimeManifest, thaw
from pluginhost.callbacks import HostCallbacks, PackageCapabilities
from pluginhost.errors import CallbackRefused, PluginHostError, ToolFailure

logger = logging.getLogger("covel.agents")


class PluginDataHandle(Protocol):
    """Plugin data as this run sees it (stored values plus the turn's visible staged writes)."""

    def get(self, *, plugin: str, namespace: str, key: str) -> Any: ...

    def list(self, *, plugin: str, namespace: str) -> list[dict[str, Any]]: ...

    def update(
        self, *, plugin: str, namespace: str, key: str, ops: Sequence[Mapping[str, Any]]
    ) -> Any:
        """Stage ops on one key; returns the new value. Raises (WriteRefused) and stages nothing
        when they cannot apply, would break the dataset schema or exceed the size limit."""
        ...


@dataclass
class OverlayData:
    """A PluginDataHandle over sessions.operations.TurnOverlay, reading and writing as `runtime`."""

    overlay: Any  # sessions.operations.TurnOverlay (plain Python; typed loosely to keep agents free of it)
    runtime: str

    def get(self, *, plugin: str, namespace: str, key: str) -> Any:
        return self.overlay.get(runtime=self.runtime, plugin=plugin, namespace=namespace, key=key)

    def list(self, *, plugin: str, namespace: str) -> list[dict[str, Any]]:
        return self.overlay.list(runtime=self.runtime, plugin=plugin, namespace=namespace)

    def update(
        self, *, plugin: str, namespace: str, key: str, ops: Sequence[Mapping[str, Any]]
    ) -> Any:
        return self.overlay.stage(
            runtime=self.runtime, plugin=plugin, namespace=namespace, key=key, ops=ops
        )


@dataclass
class AgentRuntimeContext:
    """What one agent run reads, and the handles through which it acts."""

    data: PluginDataHandle
    callbacks_for: Callable[[str], HostCallbacks]  # plugin id -> ctx callbacks for its code
    session_id: str = ""
    turn_id: str = ""
    player_message: str = ""
    story_text: str | None = None  # this turn's story, for runtimes after the narrative
    history: Sequence[Turn] = ()
    history_windowed: bool = False  # history is already cut to agent.history (PromptContext)
    summary: str | None = None
    compacted: str | None = None  # history.compact@2 summaries (agents.prompt.PromptContext)
    inputs: Mapping[str, Any] = field(default_factory=dict)  # name -> bound value (unwrapped)
    payload: Any = None  # a manual trigger's payload (the model reads it in <trigger-payload>)
    # How an event woke the runtime, as Covel gives it to agents: {source: "event", detached,
    # payload: the event's data}, shown in <runtime-activation>. None for any other activation.
    activation: Mapping[str, Any] | None = None
    self_data: Mapping[str, Sequence[DataEntry]] | None = None  # None: read through `data`
    variables: Mapping[str, Any] = field(default_factory=dict)
    segments: Sequence[Mapping[str, Any]] = ()  # contributes.prompt of the active packages
    user_settings: Mapping[str, Any] = field(default_factory=dict)
    world: Mapping[str, Any] = field(default_factory=dict)
    locale: str = "en"
    seed: str | None = None
    events: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)  # tools.event_directory
    services: Mapping[str, Manifest] = field(default_factory=dict)  # tools.service_providers
    registered_services: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    can_write: Mapping[str, bool] = field(default_factory=dict)
    emit: Callable[[str, dict[str, Any]], None] | None = None
    notify: Callable[[dict[str, Any]], None] | None = None
    form: Callable[[dict[str, Any]], None] | None = None
    on_text: Callable[[str], None] | None = None
    tool_context: Mapping[str, Any] = field(default_factory=dict)  # extra ctx fields for tools
    # Bridges to the plugin host; None uses pluginhost.services directly.
    call_tool: Callable[..., Any] | None = None
    call_service: Callable[..., Any] | None = None
    registered_tools: Sequence[Mapping[str, Any]] | None = None  # None: ask the host (plugin_load)
    # Stages every proposal of one tool call, as the caller commits them (sessions.turns: plugin
    # data, batches, deletes, session lore, events), or refuses them all: (plugin, proposals)
    # -> the refusal's message, or None. Without it only plugin.data is staged.
    stage_proposals: Callable[[str, Sequence[Mapping[str, Any]]], str | None] | None = None
    # How a plugin.data proposal's payload becomes ops (sessions.operations.proposal_ops): the
    # caller's, as the data handle is, since agents sit below sessions and import none of it.
    proposal_ops: Callable[[Mapping[str, Any]], list[Mapping[str, Any]]] | None = None
    # The lifecycle hooks of the agent's points (sessions.hooks.AgentHooks): called with
    # (event, payload), it answers an outcome with .aborted, .reason and .replaced; .wants(event)
    # says whether any package hooks the event. None: no package hooks an agent event.
    hooks: Any = None


def agent_slot(runtime: RuntimeManifest, user_settings: Mapping[str, Any]) -> str:
    """The model slot of an agent runtime: agent.model, or story / plugin by visibility.

    When the player picked a slot with a `type: slot` setting, its value names the slot; the
    setting is found by its key being the written slot name or "model" (affinity's convention).
    """
    agent = runtime.data.get("agent") or {}
    slot = str(agent.get("model") or ("story" if runtime.visibility == "story" else "plugin"))
    for key in (slot, "model"):
        chosen = user_settings.get(key)
        if isinstance(chosen, str) and chosen.strip():
            return chosen.strip()
    return slot


def _schema_path(manifest: Manifest, runtime: RuntimeManifest, written: str) -> Path | None:
    root = Path(manifest.path)
    for candidate in (root / written, (root / runtime.file).parent / written):
        if candidate.is_file():
            return candidate
    return None


def _load_schema(
    manifest: Manifest, runtime: RuntimeManifest
) -> tuple[dict[str, Any] | None, str | None]:
    written = (runtime.data.get("io") or {}).get("output", {}).get("schema")
    if not written:
        return None, None
    path = _schema_path(manifest, runtime, str(written))
    if path is None:
        return None, f"output schema {written} of {runtime.qualified_id} cannot be found"
    try:
        return json.loads(path.read_text(encoding="utf-8")), None
    except (OSError, ValueError) as exc:
        return None, f"output schema {written} of {runtime.qualified_id} cannot be read: {exc}"


def _schema_error(schema: Mapping[str, Any], value: Any) -> str | None:
    return schema_error(validators.validator_for(schema)(schema), value)


def _self_data(
    manifest: Manifest, runtime: RuntimeManifest, context: AgentRuntimeContext
) -> dict[str, list[DataEntry]]:
    if context.self_data is not None:
        return {k: list(v) for k, v in context.self_data.items()}
    found: dict[str, list[DataEntry]] = {}
    for spec in (runtime.data.get("io") or {}).get("selfData") or ():
        namespace = str(spec["namespace"])
        rows = context.data.list(plugin=manifest.id, namespace=namespace)
        found[namespace] = [
            DataEntry(str(r["key"]), r["value"], str(r.get("updatedAt") or "")) for r in rows
        ]
    return found


def _segments(runtime: RuntimeManifest, context: AgentRuntimeContext) -> list[Mapping[str, Any]]:
    segments = [thaw(s) for s in context.segments]
    if context.payload is not None:
        segments.append(
            {
                "id": "trigger-payload",
                "position": "system",
                "content": "<trigger-payload>\n"
                + json.dumps(context.payload, ensure_ascii=False, indent=2)
                + "\n</trigger-payload>",
            }
        )
    if context.activation is not None:
        # Covel's reserved block: the activation as compact JSON, with &, < and > escaped so
        # the event's data cannot close the tag.
        text = json.dumps(dict(context.activation), ensure_ascii=False, separators=(",", ":"))
        text = text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
        segments.append(
            {
                "id": "runtime-activation",
                "position": "system",
                "content": f"<runtime-activation>\n{text}\n</runtime-activation>",
            }
        )
    if (runtime.data.get("agent") or {}).get("advertiseEvents") and context.events:
        # Covel's segment 5 block: the catalogue of advertised topics and how to emit one
        # (packages/runtime context/prompt-assembler.ts, "<available-events>").
        lines = [
            event_catalog_line(topic, meta)
            for topic, meta in context.events.items()
            if meta.get("advertise", True)
        ]
        if lines:
            segments.append(
                {
                    "id": "available-events",
                    "position": "system",
                    "content": "<available-events>\nWhen this turn matches a topic's condition, "
                    "call the emit-event tool with {topic, data}, one topic per call:\n"
                    + "\n".join(lines)
                    + "\n</available-events>",
                }
            )
    return segments


class _Executor:
    """Answers the model's tool calls for one run."""

    def __init__(
        self,
        *,
        manifest: Manifest,
        runtime: RuntimeManifest,
        toolset: Toolset,
        context: AgentRuntimeContext,
        run_record: AgentRun,
    ) -> None:
        self.manifest = manifest
        self.runtime = runtime
        self.toolset = toolset
        self.context = context
        self.record = run_record

    def __call__(self, name: str, args: dict[str, Any]) -> ToolOutcome:
        binding = self.toolset.binding(name)
        if binding is None:
            return ToolOutcome(False, error=f"unknown tool {name!r}")
        schema_problem = (
            _schema_error(binding.spec.parameters, args) if binding.kind != "plugin" else None
        )
        if schema_problem:
            # Plugin tools check their own arguments with zod; the rest are checked here.
            return ToolOutcome(False, error=f"invalid arguments for {name} {schema_problem}")
        handler = getattr(self, f"_{binding.kind}")
        return handler(binding, args)

    # ---------------------------------------------------------------- builtin tools

    def _builtin(self, binding: ToolBinding, args: dict[str, Any]) -> ToolOutcome:
        if binding.target == "emit-event":
            return self._emit_event(args)
        if binding.target == "create-notification":
            notice = {
                "title": args["title"],
                "body": args.get("body", ""),
                "level": args.get("level", "info"),
                "plugin": self.manifest.id,
                "runtime": self.runtime.qualified_id,
            }
            self.record.notifications.append(notice)
            if self.context.notify is not None:
                self.context.notify(notice)
            return ToolOutcome(True, {"notified": True})
        if binding.target == "create-form":
            return _create_form(self, args)
        return ToolOutcome(False, error=f"builtin tool {binding.target} is not available")

    def _emit_event(self, args: dict[str, Any]) -> ToolOutcome:
        """Covel's emit-event: {topic, data}. A topic this run already emitted is skipped (Covel
        keeps one event per topic and tool loop); an unknown topic or data its schema refuses is
        a failed call the model can correct (Covel answers those with text only: we fail them,
        so that PostToolUse's result.success says the event was not recorded)."""
        topic = str(args["topic"])
        data = args.get("data")
        if data is None:
            data = args.get("payload")  # the hub's earlier name, still read
        data = dict(data or {})
        if any(e["topic"] == topic for e in self.record.events):
            return ToolOutcome(True, f'event "{topic}" already emitted this turn — skipped')
        meta = self.context.events.get(topic)
        if meta is None:
            known = ", ".join(self.context.events) or "none"
            return ToolOutcome(
                False,
                error=f"emit-event: topic {topic!r} is not in the session's event directory (known: {known})",
            )
        problem = _schema_error(meta.get("schema") or {}, data)
        if problem:
            return ToolOutcome(
                False,
                error=f"emit-event: the data of {topic} does not match its schema {problem}",
            )
        self._emit(topic, data)
        return ToolOutcome(True, f'event "{topic}" emitted')

    def _emit(self, topic: str, data: dict[str, Any]) -> None:
        self.record.events.append(
            {"topic": topic, "data": data, "payload": data, "runtime": self.runtime.qualified_id}
        )
        if self.context.emit is not None:
            self.context.emit(topic, data)

    # ---------------------------------------------------------------- plugin tools

    def _tool_context(self) -> dict[str, Any]:
        return {
            "sessionId": self.context.session_id,
            "turnId": self.context.turn_id,
            "runtimeId": self.runtime.id,
            "locale": self.context.locale,
            "world": dict(self.context.world),
            "userSettings": dict(self.context.user_settings),
            "seed": self.context.seed,
            # Covel's tool ctx (plugin-handlers-utils PluginToolContext).
            "emittedEventTopics": list(dict.fromkeys(e["topic"] for e in self.record.events)),
            "pendingProposals": [dict(p) for p in self.record.proposals],
            "inputSlots": {name: {"value": value} for name, value in self.context.inputs.items()},
            **dict(self.context.tool_context),
        }

    def _plugin(self, binding: ToolBinding, args: dict[str, Any]) -> ToolOutcome:
        callbacks = self.context.callbacks_for(self.manifest.id)
        try:
            if self.context.call_tool is not None:
                envelope = self.context.call_tool(
                    manifest=self.manifest,
                    tool=binding.target,
                    args=args,
                    callbacks=callbacks,
                    context=self._tool_context(),
                )
            else:
                from pluginhost.services import plugin_tool_call

                envelope = plugin_tool_call(
                    manifest=self.manifest,
                    tool=binding.target,
                    args=args,
                    callbacks=callbacks,
                    context=self._tool_context(),
                )
        except ToolFailure as exc:
            hint = f" Hint: {exc.hint}" if exc.hint else ""
            return ToolOutcome(False, error=f"{exc.message}{hint}")
        except PluginHostError as exc:
            return ToolOutcome(False, error=f"{binding.target} failed: {exc.message} [{exc.code}]")
        refused = self._stage_proposals(envelope.pending_proposals)
        if refused:
            return ToolOutcome(False, error=f"{binding.target}: its write was refused: {refused}")
        for event in envelope.emitted_events:
            if isinstance(event, Mapping) and event.get("topic"):
                # withEmittedEvents carries Covel's {topic, data}; payload is the older name.
                data = event.get("data") if event.get("data") is not None else event.get("payload")
                self._emit(str(event["topic"]), dict(data or {}))
        return ToolOutcome(
            True, envelope.model_view if envelope.model_view is not None else envelope.content
        )

    def _stage_proposals(self, proposals: Sequence[Mapping[str, Any]]) -> str | None:
        if self.context.stage_proposals is not None and proposals:
            refused = self.context.stage_proposals(self.manifest.id, proposals)
            if refused is None:
                self.record.proposals.extend(dict(p) for p in proposals)
            return refused
        for proposal in proposals:
            if proposal.get("type") != "plugin.data":
                continue  # other proposal kinds are the caller's (kept in run.proposals)
            payload = proposal.get("payload") or {}
            namespace, key = str(payload.get("namespace")), str(payload.get("key"))
            if self.context.proposal_ops is None:
                return "plugin.data proposals cannot be staged here (no proposal_ops given)"
            try:
                ops = self.context.proposal_ops(payload)
                self.context.data.update(
                    plugin=self.manifest.id, namespace=namespace, key=key, ops=ops
                )
            # Operation errors (sessions.errors.OperationError) are ValueErrors.
            except ValueError as exc:
                return str(exc)
            self.record.proposals.append(dict(proposal))
        return None

    # ---------------------------------------------------------------- dataset tools

    def _dataset(self, binding: ToolBinding, args: dict[str, Any]) -> ToolOutcome:
        dataset, action = binding.target.split(":")
        info = self.toolset.datasets[dataset]
        plugin = self.manifest.id
        if action == "get":
            value = self.context.data.get(plugin=plugin, namespace=dataset, key=str(args["key"]))
            return ToolOutcome(
                True, {"key": args["key"], "value": value, "found": value is not None}
            )
        if action == "list":
            rows = sorted(
                self.context.data.list(plugin=plugin, namespace=dataset),
                key=lambda r: str(r["key"]),
            )
            after = args.get("after")
            if after is not None:
                rows = [r for r in rows if str(r["key"]) > str(after)]
            limit = min(int(args.get("limit") or LIST_LIMIT), LIST_MAX)
            page = rows[:limit]
            return ToolOutcome(
                True,
                {
                    "records": [{"key": r["key"], "value": r["value"]} for r in page],
                    "hasMore": len(rows) > limit,
                },
            )
        if action == "upsert":
            value = args["value"]
            key = (
                str(value.get(info.key))
                if info.key and isinstance(value, Mapping)
                else str(args.get("key"))
            )
            if info.key and not (
                isinstance(value, Mapping) and isinstance(value.get(info.key), str)
            ):
                return ToolOutcome(
                    False,
                    error=f"{dataset}-upsert: the record needs a string {info.key} field (its key)",
                )
            return self._write(dataset, key, [{"op": "set", "value": value}])
        ops = [dict(op) for op in args["ops"]]
        refused = [str(op.get("op")) for op in ops if op.get("op") not in info.ops]
        if refused:
            return ToolOutcome(
                False,
                error=f"{dataset}-update: op {', '.join(refused)} is not allowed on dataset {dataset}; it allows {', '.join(info.ops)}",
            )
        return self._write(dataset, str(args["key"]), ops)

    def _write(self, namespace: str, key: str, ops: list[dict[str, Any]]) -> ToolOutcome:
        try:
            value = self.context.data.update(
                plugin=self.manifest.id, namespace=namespace, key=key, ops=ops
            )
        except ValueError as exc:  # OperationError and WriteRefused are ValueErrors
            return ToolOutcome(False, error=f"{namespace}/{key}: the write was refused: {exc}")
        return ToolOutcome(True, {"key": key, "value": value, "staged": True})

    # ---------------------------------------------------------------- imported services

    def _service(self, binding: ToolBinding, args: dict[str, Any]) -> ToolOutcome:
        provider = self.context.services[binding.target]
        callbacks = self.context.callbacks_for(provider.id)
        try:
            if self.context.call_service is not None:
                result = self.context.call_service(
                    manifest=provider,
                    contract=binding.target,
                    input=args,
                    callbacks=callbacks,
                    caller=self.manifest.id,
                )
            else:
                from pluginhost.services import plugin_service_call

                result = plugin_service_call(
                    manifest=provider,
                    contract=binding.target,
                    input=args,
                    callbacks=callbacks,
                    caller=self.manifest.id,
                )
        except PluginHostError as exc:
            return ToolOutcome(
                False,
                error=f"{binding.spec.name} ({binding.target}) failed: {exc.message} [{exc.code}]",
            )
        # A write service's operations change the provider's data and commit with this run.
        for op in result.operations:
            kind = op.get("kind")
            if kind == "set":
                ops = (
                    [{"op": "delete"}]
                    if op.get("value") is None
                    else [{"op": "set", "value": op.get("value")}]
                )
            elif kind == "update":
                ops = list(op.get("ops") or [])
            elif kind == "delete":
                ops = [{"op": "delete"}]
            else:
                continue
            try:
                self.context.data.update(
                    plugin=provider.id, namespace=str(op["namespace"]), key=str(op["key"]), ops=ops
                )
            except ValueError as exc:  # OperationError and WriteRefused are ValueErrors
                return ToolOutcome(
                    False, error=f"{binding.spec.name}: the service's write was refused: {exc}"
                )
        return ToolOutcome(True, result.output)


def _create_form(run: _Executor, args: dict[str, Any]) -> ToolOutcome:
    """The builtin create-form: checked against the package's forms, kept on the run's record."""
    problem = form_problem(args, validators=run.manifest.contributes.get("forms") or ())
    if problem:
        return ToolOutcome(False, error=f"create-form {problem}")
    # The id is the form's interactionId, unique in the session: a turn's forms carry
    # its turn id, so the same runtime can ask again on a later turn.
    turn = f"{run.context.turn_id}:" if run.context.turn_id else ""
    form_id = f"{run.runtime.qualified_id}:{turn}{len(run.record.forms) + 1}"
    form = {
        "id": form_id,
        "plugin": run.manifest.id,
        "runtime": run.runtime.qualified_id,
        **{k: v for k, v in args.items()},
    }
    run.record.forms.append(form)
    if run.context.form is not None:
        run.context.form(form)
    return ToolOutcome(
        True,
        {
            "formId": form_id,
            "status": "pending",
            "note": "The player answers later; do not wait for it.",
        },
    )


def registered_tools_of(manifest: Manifest, callbacks: HostCallbacks) -> list[Mapping[str, Any]]:
    """The package's tools as the host registered them (name, description, jsonSchema)."""
    from pluginhost.services import plugin_load

    if not manifest.contributes.get("tools"):
        return []
    # Partial: a function runtime of the package that cannot load does not stop its tools.
    loaded = plugin_load(manifest=manifest, callbacks=callbacks, partial_runtimes=True)
    if loaded is None:
        loaded = _LOADED.get(manifest.id)
        if loaded is None:
            loaded = plugin_load(
                manifest=manifest, callbacks=callbacks, force=True, partial_runtimes=True
            )
    _LOADED[manifest.id] = loaded
    return list(loaded.tools) if loaded else []


_LOADED: dict[str, Any] = {}


def _assembled(
    context: AgentRuntimeContext, runtime: RuntimeManifest, messages: list[dict[str, Any]]
) -> list[dict[str, Any]]:
    """PostContextAssembly (once per run, after the prompt is assembled): a hook may replace
    the system prompt and/or the messages after it; an abort changes nothing (as in Covel)."""
    if context.hooks is None or not context.hooks.wants("PostContextAssembly"):
        return messages
    head = messages[0] if messages and messages[0].get("role") == "system" else None
    rest = messages[1:] if head is not None else list(messages)
    outcome = context.hooks(
        "PostContextAssembly",
        {
            "systemPrompt": head["content"] if head is not None else "",
            "messages": rest,
            "outputKind": "story" if runtime.visibility == "story" else "plugin",
            "locale": context.locale,
        },
    )
    replaced = {} if outcome.aborted else outcome.replaced
    system = replaced.get("systemPrompt", head["content"] if head is not None else None)
    after = replaced.get("messages", rest)
    if not isinstance(after, list):
        after = rest
    return ([{"role": "system", "content": str(system)}] if system else []) + [
        dict(m) for m in after if isinstance(m, dict)
    ]


def run_agent_runtime(
    *,
    manifest: Manifest,
    runtime: RuntimeManifest,
    context: AgentRuntimeContext,
    endpoint: Endpoint | None = None,
) -> AgentRun:
    """Run one agent runtime to completion or failure; never raises for model or plugin trouble.

    endpoint None resolves the runtime's model slot (agent_slot) through agents.selectors.
    """
    if runtime.is_function:
        return AgentRun().fail("not-an-agent", f"{runtime.qualified_id} is a function runtime")
    if endpoint is None:
        from agents.selectors import endpoint_for_slot

        slot = agent_slot(runtime, context.user_settings)
        try:
            endpoint = endpoint_for_slot(slot=slot)
        except ModelError as exc:
            return AgentRun().fail(
                exc.code,
                f"{runtime.qualified_id}: no model is configured for the {slot!r} slot; staff set one in the admin",
            )
    schema, problem = _load_schema(manifest, runtime)
    if problem:
        return AgentRun().fail("output-schema-unavailable", problem)
    try:
        registered = (
            list(context.registered_tools)
            if context.registered_tools is not None
            else registered_tools_of(manifest, context.callbacks_for(manifest.id))
        )
    except PluginHostError as exc:
        return AgentRun().fail(exc.code, f"{manifest.id} could not be loaded: {exc.message}")
    toolset = build_toolset(
        manifest=manifest,
        runtime=runtime,
        registered_tools=registered,
        services=context.services,
        registered_services=context.registered_services,
        events=context.events,
        can_write=context.can_write,
    )
    data = thaw(runtime.data)
    prompt = assemble(
        body=runtime.prompt,
        runtime=data,
        context=PromptContext(
            player_message=context.player_message,
            story_text=context.story_text,
            history=context.history,
            history_windowed=context.history_windowed,
            summary=context.summary,
            compacted=context.compacted,
            inputs=context.inputs,
            self_data=_self_data(manifest, runtime, context),
            variables=context.variables,
            segments=_segments(runtime, context),
        ),
    )
    messages = _assembled(context, runtime, prompt.messages)
    story = runtime.visibility == "story"
    record = AgentRun()
    execute = _Executor(
        manifest=manifest, runtime=runtime, toolset=toolset, context=context, run_record=record
    )
    run = run_agent(
        runtime=data,
        endpoint=endpoint,
        messages=messages,
        tools=[b.spec for b in toolset.offered],
        deferred=[b.spec for b in toolset.deferred],
        execute=execute,
        # A story runtime writes prose; its output is {"narrativeOutput": text}, checked below.
        output_schema=None if story else schema,
        on_text=context.on_text,
        hooks=context.hooks,
    )
    run.events, run.notifications, run.forms, run.proposals = (
        record.events,
        record.notifications,
        record.forms,
        record.proposals,
    )
    run.warnings[:0] = toolset.warnings + [
        f"prompt variable {name} has no value" for name in prompt.missing_variables
    ]
    if run.status == "success" and story:
        text = (
            run.text
            if run.text is not None
            else (run.output if isinstance(run.output, str) else "")
        )
        run.output = {"narrativeOutput": text}
        if schema:
            mismatch = _schema_error(schema, run.output)
            if mismatch:
                run.fail(
                    "output-invalid", f"the story output does not match io.output.schema {mismatch}"
                )
        elif not text.strip():
            run.fail("output-invalid", "the story runtime produced no text")
    for warning in run.warnings:
        logger.info("%s: %s", runtime.qualified_id, warning)
    return run


# ----------------------------------------------------------------------------- offline callbacks


class OverlayCallbacks(PackageCapabilities):
    """HostCallbacks over a TurnOverlay without a database: offline runs and tests.

    The package is the one this object serves (never the one a frame names); reads go through
    the overlay as `runtime`; immediate writes (RPC actions) are refused, as inside a turn.
    """

    def __init__(
        self,
        *,
        overlay: Any,
        package: str,
        runtime: str,
        session: Mapping[str, Any] | None = None,
        messages: Sequence[Mapping[str, Any]] = (),
        on_emit: Callable[[str, dict[str, Any]], None] | None = None,
    ) -> None:
        self.overlay = overlay
        self.package = package
        self.runtime = runtime
        self.session = dict(session or {"phase": "playing", "turnCount": 0, "locale": "en"})
        self.messages = list(messages)
        self.on_emit = on_emit

    def plugin_data_get(
        self, *, package: str, runtime: str | None, namespace: str, key: str
    ) -> Any:
        return self.overlay.get(
            runtime=self.runtime, plugin=self.package, namespace=namespace, key=key
        )

    def plugin_data_list(
        self, *, package: str, runtime: str | None, namespace: str
    ) -> list[dict[str, Any]]:
        return self.overlay.list(runtime=self.runtime, plugin=self.package, namespace=namespace)

    def plugin_data_set(
        self, *, package: str, runtime: str | None, namespace: str, key: str, value: Any
    ) -> None:
        raise CallbackRefused(
            "a runtime's writes commit with its turn; use ctx.pluginData", code="not_allowed"
        )

    def store_get_session(self, *, package: str, runtime: str | None) -> dict[str, Any]:
        return dict(self.session)

    def store_read_turn_messages(
        self, *, package: str, runtime: str | None, after: str | None, limit: int
    ) -> dict[str, Any]:
        limit = max(1, min(int(limit), 500))
        ids = [str(m.get("id")) for m in self.messages]
        start = (ids.index(after) + 1 if after in ids else len(ids)) if after is not None else 0
        page = [dict(m) for m in self.messages[start : start + limit]]
        return {
            "messages": page,
            "cursor": page[-1]["id"] if page else after,
            "hasMore": start + limit < len(self.messages),
        }
