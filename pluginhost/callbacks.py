"""What plugin code may ask of Python while it runs (its ctx), as a Protocol.

The Sessions app implements HostCallbacks over the database; InMemoryCallbacks serves tests and
benchmarks; RefusingCallbacks serves plugin_extract, which must not reach any host capability.
"""

from __future__ import annotations

import base64
import copy
import importlib
from collections.abc import Callable
from typing import Any, Protocol, runtime_checkable

from .errors import CallbackRefused


@runtime_checkable
class HostCallbacks(Protocol):
    """Every method is called in the thread that made the plugin call, with keyword arguments.

    package is the calling package's ID and runtime its runtime ID (None outside a runtime): data
    is always scoped to the caller, never to a package the plugin names. Raise CallbackRefused to
    refuse; the plugin's promise rejects with that code and message.

    One more method is optional, for callbacks that serve a turn: recursive_call(*, package,
    runtime, runtime_id, player_message, payload, operations, proposals) -> {outcome, ...}, which
    runs ctx.recursiveCall. Without it the call is refused (recursive_call_unavailable).
    """

    def plugin_data_get(
        self, *, package: str, runtime: str | None, namespace: str, key: str
    ) -> Any: ...

    def plugin_data_list(
        self, *, package: str, runtime: str | None, namespace: str
    ) -> list[dict[str, Any]]: ...

    def plugin_data_set(
        self, *, package: str, runtime: str | None, namespace: str, key: str, value: Any
    ) -> None: ...

    def store_get_session(self, *, package: str, runtime: str | None) -> dict[str, Any]: ...

    def store_read_turn_messages(
        self, *, package: str, runtime: str | None, after: str | None, limit: int
    ) -> dict[str, Any]: ...

    def tool_call(
        self, *, package: str, runtime: str | None, name: str, args: dict[str, Any]
    ) -> Any: ...

    def http_request(
        self,
        *,
        package: str,
        runtime: str | None,
        method: str,
        url: str,
        headers: dict[str, str],
        body: bytes | None,
        timeout: float,
    ) -> dict[str, Any]: ...


def dispatch_callback(callbacks: HostCallbacks, method: str, params: dict[str, Any]) -> Any:
    """Route one ctx call from the host to the callbacks object."""
    package = str(params.get("package") or "")
    runtime = params.get("runtime")
    if method == "pluginData.get":
        return callbacks.plugin_data_get(
            package=package, runtime=runtime, namespace=params["namespace"], key=params["key"]
        )
    if method == "pluginData.list":
        return callbacks.plugin_data_list(
            package=package, runtime=runtime, namespace=params["namespace"]
        )
    if method == "pluginData.set":
        callbacks.plugin_data_set(
            package=package,
            runtime=runtime,
            namespace=params["namespace"],
            key=params["key"],
            value=params.get("value"),
        )
        return None
    if method == "store.getSession":
        return callbacks.store_get_session(package=package, runtime=runtime)
    if method == "store.readTurnMessages":
        return callbacks.store_read_turn_messages(
            package=package,
            runtime=runtime,
            after=params.get("after"),
            limit=int(params.get("limit") or 100),
        )
    if method in STORE_READS:
        return _store_read(callbacks, method, package, runtime, params)
    if method == "tools.call":
        return callbacks.tool_call(
            package=package, runtime=runtime, name=params["name"], args=params.get("args") or {}
        )
    if method == "runtime.recursiveCall":
        recursive_call = getattr(callbacks, "recursive_call", None)
        if recursive_call is None:
            raise CallbackRefused(
                "recursiveCall runs only inside a session's turn; this run has none",
                code="recursive_call_unavailable",
            )
        return recursive_call(
            package=package,
            runtime=runtime,
            runtime_id=str(params.get("runtimeId") or ""),
            player_message=params.get("playerMessage"),
            payload=params.get("payload"),
            operations=list(params.get("operations") or []),
            proposals=list(params.get("proposals") or []),
        )
    if method == "http":
        raw = params.get("body")
        response = callbacks.http_request(
            package=package,
            runtime=runtime,
            method=str(params.get("method") or "GET"),
            url=str(params["url"]),
            headers=dict(params.get("headers") or {}),
            body=base64.b64decode(raw) if raw else None,
            timeout=float(params.get("timeout") or 30.0),
        )
        body = response.get("body") or b""
        if isinstance(body, str):
            body = body.encode("utf-8")
        return {
            "status": int(response.get("status", 0)),
            "headers": dict(response.get("headers") or {}),
            "body": base64.b64encode(body).decode("ascii"),
        }
    raise CallbackRefused(f"unknown host capability {method}", code="unknown_capability")


# ctx.store reads a callbacks object may offer (sessions/callbacks.py does): method -> (its
# callback, the params it takes). Optional: without the callback the read is refused.
STORE_READS = {
    "store.getWorld": ("store_get_world", {"world_id": "worldId"}),
    "store.listCharacters": ("store_list_characters", {}),
    "store.getCharacter": ("store_get_character", {"character_id": "characterId"}),
    "store.listPlayerInputs": ("store_list_player_inputs", {}),
}


def _store_read(
    callbacks: HostCallbacks, method: str, package: str, runtime: Any, params: dict[str, Any]
) -> Any:
    name, wanted = STORE_READS[method]
    read = getattr(callbacks, name, None)
    if read is None:
        raise CallbackRefused(
            f"ctx.{method} reads a session, and this run has none", code="store_unavailable"
        )
    args = {
        arg: (None if params.get(key) is None else str(params[key])) for arg, key in wanted.items()
    }
    return read(package=package, runtime=runtime, **args)


def approved_http_request(
    *,
    package: str,
    runtime: str | None,
    method: str,
    url: str,
    headers: dict[str, str],
    body: bytes | None,
    timeout: float,
) -> dict[str, Any]:
    """covel.http through the Approvals app's approved-only client, imported on first use."""
    try:
        module = importlib.import_module("approvals.http")
        request = module.plugin_http_request
    except (ImportError, AttributeError) as exc:
        raise CallbackRefused(
            "covel.http is not available on this hub yet", code="http_unavailable"
        ) from exc
    refused = getattr(module, "HttpRefused", None)
    failed = getattr(module, "HttpFailed", None)
    try:
        return request(
            package=package,
            runtime=runtime,
            method=method,
            url=url,
            headers=headers,
            body=body,
            timeout=timeout,
        )
    except Exception as exc:
        # The client's messages are written to be shown to the plugin; pass them on with a code.
        if refused is not None and isinstance(exc, refused):
            raise CallbackRefused(str(exc), code="http_refused") from exc
        if failed is not None and isinstance(exc, failed):
            # http_timeout for a passed deadline, http_failed for other network failures.
            raise CallbackRefused(str(exc), code=getattr(exc, "code", "http_failed")) from exc
        raise


class RefusingCallbacks:
    """For plugin_extract: the entry factory may register, nothing else."""

    reason = "host capabilities are not available while plugin_extract runs the entry factory"

    def _refuse(self, *args: Any, **kwargs: Any) -> Any:
        raise CallbackRefused(self.reason)

    plugin_data_get = plugin_data_list = plugin_data_set = _refuse
    store_get_session = store_read_turn_messages = tool_call = http_request = _refuse


class PackageCapabilities:
    """The builtin emit-event tool and covel.http, for callbacks that serve one package.

    A subclass sets `package` (the package it serves: never the one a frame names) and
    `on_emit` (where emitted events go, or None when the caller offers no event sink).
    """

    package: str
    on_emit: Callable[[str, dict[str, Any]], None] | None = None

    def tool_call(
        self, *, package: str, runtime: str | None, name: str, args: dict[str, Any]
    ) -> Any:
        if name == "emit-event" and self.on_emit is not None:
            topic = str(args.get("topic") or "")
            if not topic:
                raise CallbackRefused("emit-event needs a topic", code="invalid_tool_arguments")
            self.on_emit(topic, dict(args.get("payload") or {}))
            return {"emitted": topic}
        raise CallbackRefused(f"builtin tool {name} is not available", code="tool_unavailable")

    def http_request(
        self,
        *,
        package: str,
        runtime: str | None,
        method: str,
        url: str,
        headers: dict[str, str],
        body: bytes | None,
        timeout: float,
    ) -> dict[str, Any]:
        return approved_http_request(
            package=self.package,
            runtime=runtime,
            method=method,
            url=url,
            headers=headers,
            body=body,
            timeout=timeout,
        )


class InMemoryCallbacks:
    """A whole session in a few dicts, for tests, benchmarks and offline runs.

    data:     {(package, namespace): {key: value}}
    session:  what ctx.store.getSession() returns
    messages: saved turn messages, oldest first; each a dict with at least "id"
    tools:    builtin tools by name: callable(args) -> content
    http:     optional callable with approved_http_request's signature
    calls:    every capability used, as (method name, kwargs), for assertions
    """

    def __init__(
        self,
        *,
        data: dict[tuple[str, str], dict[str, Any]] | None = None,
        session: dict[str, Any] | None = None,
        messages: list[dict[str, Any]] | None = None,
        tools: dict[str, Callable[[dict[str, Any]], Any]] | None = None,
        http: Callable[..., dict[str, Any]] | None = None,
    ) -> None:
        self.data = data if data is not None else {}
        self.session = (
            session if session is not None else {"phase": "play", "turnCount": 0, "locale": "en"}
        )
        self.messages = messages if messages is not None else []
        self.tools = tools or {}
        self.http = http
        self.calls: list[tuple[str, dict[str, Any]]] = []

    def plugin_data_get(
        self, *, package: str, runtime: str | None, namespace: str, key: str
    ) -> Any:
        self.calls.append(
            ("plugin_data_get", {"package": package, "namespace": namespace, "key": key})
        )
        return copy.deepcopy(self.data.get((package, namespace), {}).get(key))

    def plugin_data_list(
        self, *, package: str, runtime: str | None, namespace: str
    ) -> list[dict[str, Any]]:
        self.calls.append(("plugin_data_list", {"package": package, "namespace": namespace}))
        rows = self.data.get((package, namespace), {})
        return [{"key": k, "value": copy.deepcopy(v)} for k, v in rows.items()]

    def plugin_data_set(
        self, *, package: str, runtime: str | None, namespace: str, key: str, value: Any
    ) -> None:
        self.calls.append(
            ("plugin_data_set", {"package": package, "namespace": namespace, "key": key})
        )
        rows = self.data.setdefault((package, namespace), {})
        if value is None:
            rows.pop(key, None)
        else:
            rows[key] = copy.deepcopy(value)

    def store_get_session(self, *, package: str, runtime: str | None) -> dict[str, Any]:
        self.calls.append(("store_get_session", {"package": package}))
        return copy.deepcopy(self.session)

    def store_read_turn_messages(
        self, *, package: str, runtime: str | None, after: str | None, limit: int
    ) -> dict[str, Any]:
        self.calls.append(
            ("store_read_turn_messages", {"package": package, "after": after, "limit": limit})
        )
        limit = max(1, min(int(limit), 500))
        start = 0
        if after is not None:
            ids = [str(m.get("id")) for m in self.messages]
            start = ids.index(after) + 1 if after in ids else len(self.messages)
        page = self.messages[start : start + limit]
        cursor = str(page[-1]["id"]) if page else after
        return {
            "messages": copy.deepcopy(page),
            "cursor": cursor,
            "hasMore": start + limit < len(self.messages),
        }

    def tool_call(
        self, *, package: str, runtime: str | None, name: str, args: dict[str, Any]
    ) -> Any:
        self.calls.append(("tool_call", {"package": package, "name": name, "args": args}))
        if name not in self.tools:
            raise CallbackRefused(f"builtin tool {name} is not available", code="tool_unavailable")
        return self.tools[name](args)

    def http_request(
        self,
        *,
        package: str,
        runtime: str | None,
        method: str,
        url: str,
        headers: dict[str, str],
        body: bytes | None,
        timeout: float,
    ) -> dict[str, Any]:
        self.calls.append(("http_request", {"package": package, "method": method, "url": url}))
        handler = self.http or approved_http_request
        return handler(
            package=package,
            runtime=runtime,
            method=method,
            url=url,
            headers=headers,
            body=body,
            timeout=timeout,
        )
