"""A local OpenAI-compatible stand-in for a paid model API, served over real HTTP on loopback.

It replays scripted replies in order, the shape runtime cases use:
    {"content": "...", "finishReason": "stop", "toolCalls": [{"id", "name", "arguments"}]}
plus knobs for failure tests: "status" (answer with that HTTP error), "delayMs" (before the
headers), "firstTokenDelayMs" and "chunkDelayMs" (streaming), "stallMs" (silence mid-stream).
A scripted reply may also be a function of the request body that returns such a reply: the
stand-in then answers per request (a model that reads its prompt). Every request body it
received is kept in .requests for assertions.
"""

from __future__ import annotations

import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


class StandInModel:
    def __init__(
        self, replies: list[Any] | None = None, *, exhausted_status: int = 500, repeat: bool = False
    ) -> None:
        self.replies: list[Any] = list(replies or [])
        # repeat: the script's last reply answers every request that reaches it, for ever (a
        # benchmark's model); otherwise each reply answers once.
        self.repeat = repeat
        # What a request past the script gets: 500 by default; runtime cases use a non-transient
        # 400 so that a run asking for more than was scripted fails at once, without retries.
        self.exhausted_status = exhausted_status
        self.requests: list[dict[str, Any]] = []
        self.headers: list[dict[str, str]] = []
        self._lock = threading.Lock()
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def base_url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}/v1"

    def __enter__(self) -> StandInModel:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()

    def _next(self, body: dict[str, Any]) -> dict[str, Any]:
        with self._lock:
            self.requests.append(body)
            if not self.replies:
                return {
                    "status": self.exhausted_status,
                    "content": "stand-in: no scripted reply left",
                }
            reply = (
                self.replies[0] if self.repeat and len(self.replies) == 1 else self.replies.pop(0)
            )
        # A reply may be a function of the request: a model that reads its prompt and answers.
        return reply(body) if callable(reply) else reply

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        model = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: object) -> None:  # keep test output clean
                pass

            def handle(self) -> None:
                # A client that gave up (a time-out test) closes its end; that is not our error.
                try:
                    super().handle()
                except (BrokenPipeError, ConnectionResetError):
                    pass

            def do_POST(self) -> None:  # noqa: N802 (http.server's naming)
                length = int(self.headers.get("Content-Length") or 0)
                body = json.loads(self.rfile.read(length) or b"{}")
                model.headers.append(dict(self.headers))
                reply = model._next(body)
                time.sleep(reply.get("delayMs", 0) / 1000)
                if reply.get("status", 200) >= 400:
                    payload = json.dumps(
                        {"error": {"message": reply.get("content", "error")}}
                    ).encode()
                    self._send(reply["status"], "application/json", payload)
                    return
                if body.get("stream"):
                    self._stream(reply)
                else:
                    self._send(200, "application/json", json.dumps(_completion(reply)).encode())

            def _send(self, status: int, kind: str, payload: bytes) -> None:
                self.send_response(status)
                self.send_header("Content-Type", kind)
                self.send_header("Content-Length", str(len(payload)))
                self.send_header("Connection", "close")
                self.end_headers()
                self.wfile.write(payload)

            def _stream(self, reply: dict[str, Any]) -> None:
                self.send_response(200)
                self.send_header("Content-Type", "text/event-stream")
                self.send_header("Connection", "close")
                self.end_headers()
                self.wfile.flush()
                time.sleep(reply.get("firstTokenDelayMs", 0) / 1000)
                for index, chunk in enumerate(_chunks(reply)):
                    if index and reply.get("chunkDelayMs"):
                        time.sleep(reply["chunkDelayMs"] / 1000)
                    if index == 1 and reply.get("stallMs"):
                        time.sleep(reply["stallMs"] / 1000)
                    self.wfile.write(f"data: {json.dumps(chunk)}\n\n".encode())
                    self.wfile.flush()
                self.wfile.write(b"data: [DONE]\n\n")
                self.wfile.flush()

        return Handler


def _tool_calls(reply: dict[str, Any]) -> list[dict[str, Any]]:
    return [
        {
            "id": c.get("id", f"call-{i}"),
            "type": "function",
            "function": {"name": c["name"], "arguments": c.get("arguments", "{}")},
        }
        for i, c in enumerate(reply.get("toolCalls") or [])
    ]


def _completion(reply: dict[str, Any]) -> dict[str, Any]:
    message: dict[str, Any] = {"role": "assistant", "content": reply.get("content")}
    if reply.get("toolCalls"):
        message["tool_calls"] = _tool_calls(reply)
    finish = reply.get("finishReason") or ("tool_calls" if reply.get("toolCalls") else "stop")
    return {
        "id": "standin",
        "object": "chat.completion",
        "choices": [{"index": 0, "message": message, "finish_reason": finish}],
    }


def _chunks(reply: dict[str, Any]) -> list[dict[str, Any]]:
    """The reply cut into stream chunks: the text word by word, then each tool call in two halves."""
    chunks: list[dict[str, Any]] = []
    words = (reply.get("content") or "").split(" ")
    for i, word in enumerate(w for w in words if w or len(words) == 1):
        text = word if i == 0 else " " + word
        if text:
            chunks.append(
                {"choices": [{"index": 0, "delta": {"content": text}, "finish_reason": None}]}
            )
    for index, call in enumerate(_tool_calls(reply)):
        arguments = call["function"]["arguments"]
        half = len(arguments) // 2
        first = {
            "index": index,
            "id": call["id"],
            "type": "function",
            "function": {"name": call["function"]["name"], "arguments": arguments[:half]},
        }
        chunks.append(
            {"choices": [{"index": 0, "delta": {"tool_calls": [first]}, "finish_reason": None}]}
        )
        chunks.append(
            {
                "choices": [
                    {
                        "index": 0,
                        "delta": {
                            "tool_calls": [
                                {"index": index, "function": {"arguments": arguments[half:]}}
                            ]
                        },
                        "finish_reason": None,
                    }
                ]
            }
        )
    finish = reply.get("finishReason") or ("tool_calls" if reply.get("toolCalls") else "stop")
    chunks.append({"choices": [{"index": 0, "delta": {}, "finish_reason": finish}]})
    return chunks
