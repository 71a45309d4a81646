"""Run plugin code: load a package's entry and handlers, call tools, actions, handlers, validators.

Every function takes a catalogue Manifest (the loader's output), never YAML text. Results are
plain dataclasses; failures raise pluginhost.errors exceptions with a stable code.
"""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from catalogue.manifest.types import Manifest, RuntimeManifest, thaw

from .callbacks import HostCallbacks, RefusingCallbacks
from .errors import ExtensionFailure, PluginCallError, PluginLoadError, PluginTimeout
from .host import NodeHost
from .pool import approval_gate, author_code_consented, folder_trust, host_for, resolved

log = logging.getLogger("covel.pluginhost")

# A tool call's limit when the tool declares no timeoutMs (the SDK bounds a declared one).
DEFAULT_TOOL_TIMEOUT = 30.0
DEFAULT_FUNCTION_TIMEOUT = 60.0
# A guard only decides whether its runtime runs: it must be quick.
DEFAULT_GUARD_TIMEOUT = 10.0
# One hook handler's limit, as Covel's hook pipeline gives it (ms).
DEFAULT_HOOK_HANDLER_MS = 5000
LOAD_TIMEOUT = 15.0
# Node never frees an imported module; after this many (re)loads a host starts afresh.
MAX_LOADS_PER_HOST = 500
# Covel's limit of a provider call, per point (the compactor may ask a model, so it has a minute).
EXTENSION_TIMEOUTS = {"history.compact@2": 60.0}
DEFAULT_EXTENSION_TIMEOUT = 0.5
DECLARED_KEYS = ("tools", "actions", "services", "hooks", "wires", "forms", "extensions")


def rpc_timeout() -> float:
    """The spec's 30 s action limit; a setting so tests need not wait half a minute."""
    from django.conf import settings

    return float(getattr(settings, "COVEL_PLUGIN_RPC_TIMEOUT_MS", 30000)) / 1000.0


@dataclass(frozen=True)
class ToolEnvelope:
    """What a tool returned: content for code, the model's view of it, and the writes it asks for."""

    content: Any
    model_view: dict[str, Any] | None
    pending_proposals: list[dict[str, Any]]
    emitted_events: list[dict[str, Any]] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        return {
            "content": self.content,
            "modelView": self.model_view,
            "pendingProposals": self.pending_proposals,
            "emittedEvents": self.emitted_events,
        }


@dataclass(frozen=True)
class FunctionResult:
    """A function handler's return value, its plugin-data operations and its proposals (unsaved)."""

    result: Any
    operations: list[dict[str, Any]]
    proposals: list[dict[str, Any]]
    emitted_events: list[dict[str, Any]] = field(default_factory=list)

    @property
    def outcome(self) -> str | None:
        return self.result.get("outcome") if isinstance(self.result, dict) else None


@dataclass(frozen=True)
class ServiceResult:
    """A service's output and, for a write service, the plugin-data operations it staged."""

    output: Any
    operations: list[dict[str, Any]]


@dataclass(frozen=True)
class FormVerdict:
    ok: bool
    form_error: str | None
    field_errors: list[dict[str, str]]


@dataclass(frozen=True)
class LoadedPackage:
    package: str
    tools: list[dict[str, Any]]
    actions: list[str]
    forms: list[str]
    runtimes: list[str]
    extracted: dict[str, list[Any]]
    # Runtimes that could not load ({runtime, code, message, details}); with partial_runtimes
    # the others run and a call of one of these fails with its own error.
    failed_runtimes: list[dict[str, Any]] = field(default_factory=list)


# ------------------------------------------------------------------ manifest -> load request


def _handler_path(manifest: Manifest, runtime: RuntimeManifest) -> str | None:
    """The handler file of a function runtime, package-relative; None for an agent runtime."""
    function = runtime.data.get("function")
    if function is None:
        return None
    root = Path(manifest.path)
    manifest_dir = (root / runtime.file).parent
    written = function.get("handler") if isinstance(function, Mapping) else None
    candidates = []
    if written:
        # The loader makes it package-relative; the spec writes it relative to the runtime's
        # manifest. Try both, package-relative first.
        candidates += [root / written, manifest_dir / written]
    else:
        candidates.append(manifest_dir / "handler.js")
    for candidate in candidates:
        if candidate.is_file():
            return os.path.relpath(candidate, root)
    return os.path.relpath(candidates[0], root) if written else None


def _declared(manifest: Manifest) -> dict[str, list[Any]]:
    contributes = thaw(manifest.contributes)
    return {key: list(contributes.get(key) or []) for key in DECLARED_KEYS}


def _entry(manifest: Manifest) -> str | None:
    entry = manifest.entry
    if entry:
        return entry
    default = Path(manifest.path) / "server" / "index.js"
    return "./server/index.js" if default.is_file() else None


def code_root(manifest: Manifest) -> str:
    """The folder the host imports the package from: bundled code runs where it is; community
    code only from the verified copy of its approved files (approvals/store.py), which raises
    PluginLoadError (plugin_not_approved, plugin_code_changed) instead of loading anything else."""
    from approvals.code_roots import CodeNotRunnable, package_code_root

    if author_code_consented():  # test_runtime runs the author's folder as it is, contained
        return str(Path(manifest.path).resolve())
    try:
        return package_code_root(package_id=manifest.id, source_dir=manifest.path)
    except CodeNotRunnable as refused:
        raise PluginLoadError(str(refused), code=refused.code, details=refused.details) from None


def load_request(manifest: Manifest, root: str | None = None) -> dict[str, Any]:
    runtimes = []
    for runtime in manifest.runtimes:
        handler = _handler_path(manifest, runtime)
        # The loader has made the guard path package-relative and checked it stays inside.
        guard = runtime.data.get("guard")
        if handler is None and guard is None:
            continue
        function = thaw(runtime.data.get("function") or {})
        runtimes.append(
            {
                "id": runtime.id,
                "handler": handler,
                "guard": guard,
                "tools": function.get("tools") or {},
                "timeoutMs": function.get("timeoutMs"),
            }
        )
    return {
        "package": manifest.id,
        "root": root or code_root(manifest),
        "entry": _entry(manifest),
        "declared": _declared(manifest),
        "runtimes": runtimes,
        "singleRuntime": len(manifest.runtimes) == 1,
        "messages": message_catalogs(manifest),
        "mode": "run",
    }


def message_catalogs(manifest: Manifest) -> list[dict[str, Any]]:
    """The `messages:` section of each locales/<locale>.yaml, as [{file, messages}].

    The loader read them (Manifest.message_sections): no locale file is read again here. The
    host turns them into ctx.messages for the session's language (pluginhost/node/
    messages.mjs), which is also where a file not named after a known language is left out.
    """
    return thaw(manifest.message_sections)


_KEY_CACHE: dict[str, tuple[float, Any]] = {}
_KEY_TTL = 2.0  # seconds; a package edited on disk is picked up this soon, without a scan per call


def _load_key(manifest: Manifest) -> Any:
    """(the folder the host loads from, its newest mtime): changes when the files change.

    A community package's folder is its approved copy, which never changes: a new approval is
    a new folder, an edit is refused by code_root."""
    source = str(resolved(manifest.path))
    now = time.monotonic()
    cached = _KEY_CACHE.get(source)
    if cached and now - cached[0] < _KEY_TTL:
        return cached[1]
    root = code_root(manifest)
    newest = 0.0
    for path in Path(root).rglob("*"):
        if path.is_file():
            newest = max(newest, path.stat().st_mtime)
    key = (root, newest)
    _KEY_CACHE[source] = (now, key)
    return key


# ------------------------------------------------------------------ services


def plugin_load(
    *,
    manifest: Manifest,
    host: NodeHost | None = None,
    callbacks: HostCallbacks | None = None,
    force: bool = False,
    partial_runtimes: bool = False,
) -> LoadedPackage | None:
    """Load (or reuse) the package in the host; None when it was already loaded and unchanged.

    Raises PluginLoadError: plugin_registration_invalid (with each undeclared or missing item in
    details), plugin_import_refused, entry_failed, ...
    """
    host = host or host_for(manifest)
    key = _load_key(manifest)
    if not force and host.is_loaded(manifest.id, key):
        return None
    request = load_request(manifest, root=key[0])
    # A session's calls load each runtime on its own; a check of the package (force, codecheck)
    # still fails on the first runtime that cannot load.
    request["partialRuntimes"] = partial_runtimes
    if host.trust == "community":
        # Nothing of the package is imported before staff approved its code, and its host reads
        # only the folder it loads from (a changed folder restarts the host).
        approval_gate(manifest)
        host.set_read_paths([request["root"]])
    host.forget(manifest.id)
    if host.loads >= MAX_LOADS_PER_HOST:
        host.restart()
    host.loads += 1
    answer = host.request(
        "load", request, callbacks=callbacks, timeout=LOAD_TIMEOUT, during_load=True
    )
    host.mark_loaded(
        manifest.id,
        key,
        tool_limits={t["name"]: t["timeoutMs"] for t in answer["tools"] if t.get("timeoutMs")},
    )
    return LoadedPackage(
        package=answer["package"],
        tools=answer["tools"],
        actions=answer["actions"],
        forms=answer["forms"],
        runtimes=answer["runtimes"],
        extracted=answer["extracted"],
        failed_runtimes=_log_failed_runtimes(manifest, answer.get("failedRuntimes") or []),
    )


def _log_failed_runtimes(manifest: Manifest, failed: list[dict[str, Any]]) -> list[dict[str, Any]]:
    for item in failed:
        log.warning("%s: %s [%s]", manifest.id, item.get("message"), item.get("code"))
    return failed


def _call(
    manifest: Manifest,
    host: NodeHost | None,
    callbacks: HostCallbacks,
    method: str,
    params: dict[str, Any],
    timeout: float | Callable[[NodeHost], float],
) -> Any:
    """Make sure the package is loaded, then call; a host that restarted in between reloads it.

    timeout may be a function of the host, asked once the package is loaded (a tool's limit
    comes from its registration).
    """
    host = host or host_for(manifest)
    for attempt in (1, 2):
        plugin_load(manifest=manifest, host=host, callbacks=callbacks, partial_runtimes=True)
        limit = timeout(host) if callable(timeout) else timeout
        try:
            return host.request(
                method, {"package": manifest.id, **params}, callbacks=callbacks, timeout=limit
            )
        except PluginCallError as exc:
            if exc.code != "package_not_loaded" or attempt == 2:
                raise
            host.forget(manifest.id)
    raise AssertionError("unreachable")


def plugin_tool_call(
    *,
    manifest: Manifest,
    tool: str,
    args: Mapping[str, Any],
    callbacks: HostCallbacks,
    context: Mapping[str, Any] | None = None,
    timeout: float | None = None,
    host: NodeHost | None = None,
) -> ToolEnvelope:
    """Run one tool. context: sessionId, turnId, runtimeId, locale, world, userSettings, seed.

    The limit is `timeout` when given, else the tool's own timeoutMs, else 30 s.
    Raises ToolFailure (invalid_tool_arguments with per-path details; tool_error with the
    plugin's code and hint), PluginTimeout, HostCrashed.
    """
    answer = _call(
        manifest,
        host,
        callbacks,
        "tool",
        {"tool": tool, "args": dict(args), "context": dict(context or {})},
        timeout or (lambda loaded: _tool_timeout(loaded, manifest.id, tool)),
    )
    return ToolEnvelope(
        content=answer["content"],
        model_view=answer.get("modelView"),
        pending_proposals=answer.get("pendingProposals") or [],
        emitted_events=answer.get("emittedEvents") or [],
    )


def _tool_timeout(host: NodeHost, package: str, tool: str) -> float:
    declared = host.tool_limit(package, tool)
    return declared / 1000.0 if declared else DEFAULT_TOOL_TIMEOUT


def plugin_rpc_call(
    *,
    manifest: Manifest,
    action: str,
    payload: Any,
    callbacks: HostCallbacks,
    context: Mapping[str, Any] | None = None,
    timeout: float | None = None,
    host: NodeHost | None = None,
) -> Any:
    """Run one RPC action (30 s by default: ctx.signal aborts, later ctx.store calls are refused)."""
    answer = _call(
        manifest,
        host,
        callbacks,
        "rpc",
        {"action": action, "payload": payload, "context": dict(context or {})},
        timeout or rpc_timeout(),
    )
    return answer["value"]


def function_timeout(runtime: RuntimeManifest | None) -> float:
    """A function runtime's limit in seconds: function.timeoutMs, else 60 s."""
    written = (runtime.data.get("function") or {}).get("timeoutMs") if runtime else None
    return float(written) / 1000.0 if written else DEFAULT_FUNCTION_TIMEOUT


def plugin_function_call(
    *,
    manifest: Manifest,
    runtime: str,
    callbacks: HostCallbacks,
    context: Mapping[str, Any] | None = None,
    timeout: float | None = None,
    host: NodeHost | None = None,
) -> FunctionResult:
    """Run a function runtime's handler with the spec's ctx.

    context: inputs, playerMessage, playerActions, manualPayload, world, userSettings, locale,
    seed (ctx.random; the same seed draws the same numbers), sourceTurnId, sessionId, turnId,
    recursionDepth, nestedCalls (true: ctx.recursiveCall goes to callbacks.recursive_call).
    """
    runtime_manifest = manifest.runtime(runtime)
    runtime_id = runtime_manifest.id if runtime_manifest else runtime
    if timeout is None:
        timeout = function_timeout(runtime_manifest)
    answer = _call(
        manifest,
        host,
        callbacks,
        "function",
        {"runtime": runtime_id, "context": dict(context or {})},
        timeout,
    )
    return FunctionResult(
        result=answer["result"],
        operations=answer.get("operations") or [],
        proposals=answer.get("proposals") or [],
        emitted_events=answer.get("emittedEvents") or [],
    )


@dataclass(frozen=True)
class GuardResult:
    skip: bool
    reason: str | None = None


def plugin_guard_call(
    *,
    manifest: Manifest,
    runtime: str,
    callbacks: HostCallbacks,
    context: Mapping[str, Any] | None = None,
    timeout: float = DEFAULT_GUARD_TIMEOUT,
    host: NodeHost | None = None,
) -> GuardResult:
    """Run a runtime's guard module before the runtime: it may skip it, with a reason.

    The guard gets a read-only ctx (inputs, playerMessage, playerActions, manualPayload, world,
    userSettings, locale, store reads); it answers { skip: true, reason } to skip, anything
    else lets the runtime run.
    """
    runtime_manifest = manifest.runtime(runtime)
    runtime_id = runtime_manifest.id if runtime_manifest else runtime
    answer = _call(
        manifest,
        host,
        callbacks,
        "guard",
        {"runtime": runtime_id, "context": dict(context or {})},
        timeout,
    )
    return GuardResult(skip=bool(answer.get("skip")), reason=answer.get("reason"))


def plugin_form_validate(
    *,
    manifest: Manifest,
    name: str,
    values: Mapping[str, Any],
    data: Any = None,
    context: Mapping[str, Any] | None = None,
    timeout: float = 5.0,
    host: NodeHost | None = None,
) -> FormVerdict:
    """Run a form validator (synchronous by rule; no host capabilities)."""
    answer = _call(
        manifest,
        host,
        RefusingCallbacks(),
        "validateForm",
        {"name": name, "values": dict(values), "data": data, "context": dict(context or {})},
        timeout,
    )
    return FormVerdict(
        ok=answer["ok"],
        form_error=answer.get("formError"),
        field_errors=answer.get("fieldErrors") or [],
    )


def plugin_service_call(
    *,
    manifest: Manifest,
    contract: str,
    input: Any,
    callbacks: HostCallbacks,
    caller: str | None = None,
    timeout: float = DEFAULT_TOOL_TIMEOUT,
    host: NodeHost | None = None,
) -> ServiceResult:
    """Call a service the package registered; input and output go through its zod schemas.

    A write service gets ctx.pluginData; its writes come back as operations, not saved.
    Raises PluginCallError invalid_service_input / invalid_service_output with per-path details.
    """
    answer = _call(
        manifest,
        host,
        callbacks,
        "service",
        {"contract": contract, "input": input, "callerPluginId": caller},
        timeout,
    )
    return ServiceResult(output=answer["output"], operations=answer.get("operations") or [])


def plugin_hook_call(
    *,
    manifest: Manifest,
    event: str,
    payload: Any,
    callbacks: HostCallbacks,
    context: Mapping[str, Any] | None = None,
    enforce: str | None = None,
    sequential: bool = False,
    handler_timeout_ms: int = DEFAULT_HOOK_HANDLER_MS,
    timeout: float = DEFAULT_TOOL_TIMEOUT,
    host: NodeHost | None = None,
) -> list[dict[str, Any]]:
    """Run the package's hooks for one lifecycle event, in registration order; their results.

    enforce: only the hooks of that phase (pre, normal, post); None runs them all.
    sequential: each handler sees the payload the previous one replaced, and an abort ends the
    chain. A handler that throws, outlasts handler_timeout_ms or answers no hook result is
    reported in its result as `failure` ("error", "timeout", "invalid") with a `reason`.
    """
    params: dict[str, Any] = {
        "event": event,
        "payload": payload,
        "context": dict(context or {}),
        "sequential": sequential,
        "handlerTimeoutMs": handler_timeout_ms,
    }
    if enforce is not None:
        params["enforce"] = enforce
    answer = _call(manifest, host, callbacks, "hook", params, timeout)
    return answer["results"]


def extension_timeout(point: str) -> float:
    """A provider's limit in seconds: Covel's per point, times COVEL_EXTENSION_TIMEOUT_PERCENT
    (a slow machine's setting; the spec names no limit)."""
    from django.conf import settings

    percent = int(getattr(settings, "COVEL_EXTENSION_TIMEOUT_PERCENT", 100))
    return EXTENSION_TIMEOUTS.get(point, DEFAULT_EXTENSION_TIMEOUT) * percent / 100


def plugin_extension_call(
    *,
    manifest: Manifest,
    point: str,
    id: str,
    input: Any,
    callbacks: HostCallbacks,
    context: Mapping[str, Any] | None = None,
    slot: str | None = None,
    timeout: float | None = None,
    host: NodeHost | None = None,
) -> Any:
    """Call one extension provider of the package; its input and output go through the point's
    schema (pluginhost/node/extension_points.mjs). context: sessionId, turnId, locale, world.

    Community packages run in their own contained host, and only once their code is approved
    (host_for, plugin_load). Every failure raises ExtensionFailure (the host's code kept:
    extension_not_found, extension_output_invalid, the plugin's own...), PluginTimeout past
    the point's limit, or PluginLoadError when the package cannot load.
    """
    try:
        answer = _call(
            manifest,
            host,
            callbacks,
            "extension",
            {
                "point": point,
                "id": id,
                "input": input,
                "slot": slot,
                "context": dict(context or {}),
            },
            timeout or extension_timeout(point),
        )
    except (ExtensionFailure, PluginTimeout, PluginLoadError):
        raise
    except PluginCallError as exc:
        raise ExtensionFailure(
            f"{manifest.id}'s extension {point}/{id} failed: {exc.message}",
            code=exc.code,
            details=exc.details,
        ) from exc
    return answer["output"]


def plugin_registrations_extract(
    *, root: Path, entry: str | None, package: str, timeout: float = LOAD_TIMEOUT
) -> dict[str, list[Any]]:
    """Run only the entry factory in a fresh host and return what it registered, in order.

    No handler runs and every host capability is refused (covel.http fails the extraction).
    A folder outside the bundled one runs in a community host (permission model, no network).
    """
    folder = str(root.resolve())
    host = (
        NodeHost(grace=1.0, trust="community", label=package, read_paths=[folder])
        if folder_trust(folder) == "community"
        else NodeHost(grace=1.0)
    )
    try:
        answer = host.request(
            "load",
            {
                "package": package,
                "root": folder,
                "entry": entry,
                "declared": {},
                "runtimes": [],
                "mode": "extract",
            },
            callbacks=RefusingCallbacks(),
            timeout=timeout,
            during_load=True,
        )
    finally:
        host.stop()
    return answer["extracted"]
