"""The model gateway: OpenAI-compatible chat completions with tools, streaming, time limits and retries.

Plain Python over http.client, so the limits are ours to enforce exactly:
- call_timeout_ms bounds a whole non-streamed call;
- first_token_timeout_ms bounds the wait for the first streamed chunk (every attempt alike);
- idle_timeout_ms bounds the silence between chunks once a stream has started to write.
Transient failures (connection errors, 408/409/429/5xx, a time-out) are retried up to
max_retries times with a short exponential back-off; anything else fails at once.

Reasoning: OpenAI-compatible APIs share no switch that turns a model's reasoning off, so a slot
may carry its own "reasoning off" fragment (e.g. {"reasoning_effort": "none"}), merged into the
request body of runtimes that declare `agent.reasoning: false`.
"""

from __future__ import annotations

import http.client
import json
import socket
import ssl
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

TRANSIENT_STATUSES = {408, 409, 429, 500, 502, 503, 504}
# Body keys the gateway writes itself; a slot's reasoning-off fragment may not replace them.
RESERVED_BODY_KEYS = ("model", "messages", "tools", "tool_choice", "stream")


def reasoning_off_problem(fragment: Any) -> str | None:
    """Why a slot's reasoning-off fragment is refused, or None when it may be merged."""
    if not isinstance(fragment, Mapping):
        return "the reasoning-off fragment must be a JSON object"
    for key in fragment:
        if key in RESERVED_BODY_KEYS:
            return (
                f"the reasoning-off fragment may not set {key!r}: the gateway writes "
                f"{', '.join(RESERVED_BODY_KEYS)} itself"
            )
    return None


class ModelError(Exception):
    """A model call that did not produce a reply. code is stable; message is for people."""

    def __init__(self, code: str, message: str, *, transient: bool = False):
        super().__init__(message)
        self.code = code
        self.message = message
        self.transient = transient


@dataclass(frozen=True)
class Endpoint:
    """Where a slot's calls go. api_key is read from the environment by the caller, never stored."""

    slot: str
    base_url: str
    model: str
    api_key: str = ""
    max_output_tokens: int | None = None
    # Merged into the request body when a runtime turns reasoning off; None: the slot has none.
    reasoning_off: Mapping[str, Any] | None = field(default=None, hash=False)


@dataclass(frozen=True)
class Limits:
    call_timeout_ms: int = 60_000
    first_token_timeout_ms: int = 120_000
    idle_timeout_ms: int = 120_000
    max_retries: int = 3
    retry_backoff_ms: int = 200


@dataclass(frozen=True)
class ToolCall:
    id: str
    name: str
    arguments: str  # the raw JSON text the model wrote; the loop parses and validates it


@dataclass
class ChatResult:
    content: str | None
    tool_calls: list[ToolCall]
    finish_reason: str | None
    attempts: int = 1
    usage: dict[str, Any] = field(default_factory=dict)

    @property
    def truncated(self) -> bool:
        return self.finish_reason == "length"


def chat(
    endpoint: Endpoint,
    *,
    messages: list[dict[str, Any]],
    tools: list[dict[str, Any]] | None = None,
    tool_choice: str | dict[str, Any] | None = None,
    stream: bool = False,
    limits: Limits = Limits(),
    on_text: Callable[[str], None] | None = None,
    sleep: Callable[[float], None] = time.sleep,
    reasoning: bool = True,
) -> ChatResult:
    """One model reply, retried on transient failures. on_text receives streamed text as it comes.

    reasoning False merges the slot's reasoning-off fragment into the body (top-level keys);
    without a fragment the body goes out unchanged and the caller says so in its trace.
    """
    body: dict[str, Any] = {"model": endpoint.model, "messages": messages, "stream": stream}
    if tools:
        body["tools"] = tools
        if tool_choice is not None:
            body["tool_choice"] = _tool_choice(tool_choice)
    if endpoint.max_output_tokens:
        body["max_tokens"] = endpoint.max_output_tokens
    if not reasoning and endpoint.reasoning_off:
        # Checked again here: an Endpoint can be built without going through the slot's checks.
        problem = reasoning_off_problem(endpoint.reasoning_off)
        if problem:
            raise ModelError("model-endpoint-invalid", f"slot {endpoint.slot}: {problem}")
        body.update(endpoint.reasoning_off)
    attempt = 0
    while True:
        attempt += 1
        try:
            result = (
                _stream_once(endpoint, body, limits, on_text)
                if stream
                else _call_once(endpoint, body, limits)
            )
            result.attempts = attempt
            return result
        except ModelError as error:
            if not error.transient or attempt > limits.max_retries:
                if error.transient and attempt > 1:
                    error.message = f"{error.message} (after {attempt} attempts)"
                    error.args = (error.message,)
                raise
            sleep(limits.retry_backoff_ms * (2 ** (attempt - 1)) / 1000)


def _tool_choice(choice: str | dict[str, Any]) -> Any:
    if isinstance(choice, dict) and "name" in choice:
        return {"type": "function", "function": {"name": choice["name"]}}
    return choice


def _connection(endpoint: Endpoint, timeout: float) -> tuple[http.client.HTTPConnection, str]:
    parts = urlsplit(endpoint.base_url)
    if parts.scheme not in {"http", "https"} or not parts.hostname:
        raise ModelError(
            "model-endpoint-invalid", f"slot {endpoint.slot}: bad endpoint {endpoint.base_url!r}"
        )
    path = parts.path.rstrip("/") + "/chat/completions"
    if parts.scheme == "https":
        conn: http.client.HTTPConnection = http.client.HTTPSConnection(
            parts.hostname, parts.port, timeout=timeout, context=ssl.create_default_context()
        )
    else:
        conn = http.client.HTTPConnection(parts.hostname, parts.port, timeout=timeout)
    return conn, path


def _send(
    endpoint: Endpoint, body: dict[str, Any], timeout: float
) -> tuple[http.client.HTTPConnection, http.client.HTTPResponse, socket.socket]:
    """Send the request; also return the socket, whose timeout the readers move as limits change."""
    conn, path = _connection(endpoint, timeout)
    headers = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}
    if endpoint.api_key:
        headers["Authorization"] = f"Bearer {endpoint.api_key}"
    try:
        conn.request("POST", path, body=json.dumps(body).encode(), headers=headers)
        # Taken before getresponse(): a "Connection: close" reply detaches it from conn.
        sock = conn.sock
        response = conn.getresponse()
    except TimeoutError as exc:
        conn.close()
        raise ModelError(
            "model-timeout",
            f"slot {endpoint.slot}: no answer within {timeout:.1f}s",
            transient=True,
        ) from exc
    except OSError as exc:
        conn.close()
        raise ModelError(
            "model-unreachable", f"slot {endpoint.slot}: {exc}", transient=True
        ) from exc
    if response.status >= 400:
        detail = response.read(2000).decode("utf-8", "replace")
        conn.close()
        raise ModelError(
            "model-http-error",
            f"slot {endpoint.slot}: HTTP {response.status}: {detail}",
            transient=response.status in TRANSIENT_STATUSES,
        )
    return conn, response, sock


def _call_once(endpoint: Endpoint, body: dict[str, Any], limits: Limits) -> ChatResult:
    deadline = time.monotonic() + limits.call_timeout_ms / 1000
    conn, response, sock = _send(endpoint, body, limits.call_timeout_ms / 1000)
    try:
        raw = _read_until(sock, response, deadline, endpoint, limits.call_timeout_ms)
    finally:
        conn.close()
    try:
        payload = json.loads(raw)
        choice = payload["choices"][0]
        message = choice.get("message") or {}
    except (ValueError, KeyError, IndexError, TypeError) as exc:
        raise ModelError(
            "model-bad-reply", f"slot {endpoint.slot}: reply is not a chat completion"
        ) from exc
    calls = [
        ToolCall(
            id=c.get("id", ""),
            name=c["function"]["name"],
            arguments=c["function"].get("arguments") or "",
        )
        for c in message.get("tool_calls") or []
    ]
    return ChatResult(
        message.get("content"), calls, choice.get("finish_reason"), usage=payload.get("usage") or {}
    )


def _read_until(
    sock: socket.socket,
    response: http.client.HTTPResponse,
    deadline: float,
    endpoint: Endpoint,
    limit_ms: int,
) -> bytes:
    chunks = []
    while True:
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            raise ModelError(
                "model-timeout",
                f"slot {endpoint.slot}: call exceeded {limit_ms} ms",
                transient=True,
            )
        sock.settimeout(remaining)
        try:
            chunk = response.read1(65536)
        except TimeoutError as exc:
            raise ModelError(
                "model-timeout",
                f"slot {endpoint.slot}: call exceeded {limit_ms} ms",
                transient=True,
            ) from exc
        if not chunk:
            return b"".join(chunks)
        chunks.append(chunk)


def _stream_once(
    endpoint: Endpoint, body: dict[str, Any], limits: Limits, on_text: Callable[[str], None] | None
) -> ChatResult:
    conn, response, sock = _send(endpoint, body, limits.first_token_timeout_ms / 1000)
    content: list[str] = []
    calls: dict[int, dict[str, str]] = {}
    finish: str | None = None
    try:
        for event in _sse_events(sock, response, endpoint, limits):
            if event == "[DONE]":
                break
            try:
                choice = json.loads(event)["choices"][0]
            except (ValueError, KeyError, IndexError, TypeError) as exc:
                raise ModelError(
                    "model-bad-reply", f"slot {endpoint.slot}: bad stream chunk"
                ) from exc
            delta = choice.get("delta") or {}
            if delta.get("content"):
                content.append(delta["content"])
                if on_text:
                    on_text(delta["content"])
            for part in delta.get("tool_calls") or []:
                slot = calls.setdefault(
                    part.get("index", 0), {"id": "", "name": "", "arguments": ""}
                )
                slot["id"] = part.get("id") or slot["id"]
                function = part.get("function") or {}
                slot["name"] += function.get("name") or ""
                slot["arguments"] += function.get("arguments") or ""
            finish = choice.get("finish_reason") or finish
    finally:
        conn.close()
    tool_calls = [ToolCall(**calls[i]) for i in sorted(calls)]
    return ChatResult("".join(content) if content else None, tool_calls, finish)


def _sse_events(
    sock: socket.socket, response: http.client.HTTPResponse, endpoint: Endpoint, limits: Limits
) -> Iterator[str]:
    """The data fields of a server-sent event stream, with the first-token and idle limits."""
    started = False
    buffer = b""
    while True:
        sock.settimeout(
            (limits.idle_timeout_ms if started else limits.first_token_timeout_ms) / 1000
        )
        try:
            line = response.readline()
        except TimeoutError as exc:
            if started:
                raise ModelError(
                    "model-idle-timeout",
                    f"slot {endpoint.slot}: stream silent for {limits.idle_timeout_ms} ms",
                    transient=True,
                ) from exc
            raise ModelError(
                "model-first-token-timeout",
                f"slot {endpoint.slot}: no first token within {limits.first_token_timeout_ms} ms",
                transient=True,
            ) from exc
        if not line:
            return
        if line.startswith(b"data:"):
            started = True
            buffer += line[5:].strip()
        elif line in (b"\n", b"\r\n") and buffer:
            yield buffer.decode("utf-8")
            buffer = b""
