"""One running Node plugin host process: its framed channel, reader threads and death.

Replaced wholesale on restart (NodeHost, pluginhost/host.py). Whatever a host sends is treated as
untrusted: its log lines are tagged with its package here, rate-limited and kept to one line; a
frame that is too large or cannot be decoded stops the host, and every call in flight fails at
once with the reason.
"""

from __future__ import annotations

import json
import logging
import os
import queue
import re
import shutil
import struct
import subprocess
import tempfile
import threading
import time
from collections import deque
from dataclasses import dataclass, field
from typing import Any

from .callbacks import HostCallbacks, dispatch_callback
from .errors import CallbackRefused
from .supervision import BASE_RSS_MB, Supervised
from .walls import HOST_SCRIPT

log = logging.getLogger("covel.pluginhost")
plugin_log = logging.getLogger("covel.plugins")
output_log = logging.getLogger("covel.plugins.output")

LEVELS = {
    "debug": logging.DEBUG,
    "info": logging.INFO,
    "warning": logging.WARNING,
    "error": logging.ERROR,
}
# The largest frame a host may send (a result, a callback's parameters). The host answers a
# bigger result with result_too_large itself; a frame past this (plus slack for the frame's own
# fields) means the host no longer follows the protocol, and it is stopped.
MAX_FRAME_BYTES = 8 * 1024 * 1024
FRAME_SLACK = 64 * 1024
# How deeply a host's frames may nest; Python's json gives up (RecursionError) near 1,000.
MAX_DEPTH = 200
LOG_LINES_PER_S = 200  # per package; the host drops more, Python drops what gets past it
MAX_LOG_CHARS = 8192
_RUNTIME_NAME = re.compile(r"[a-z0-9][a-z0-9._/-]{0,127}")
_CONTROL = re.compile("[\x00-\x08\x0a-\x1f\x7f\x85\u2028\u2029]")


def one_line(text: Any) -> str:
    """Plugin text as one log line: control characters (newlines, ANSI escapes) become escapes,
    so no plugin line can look like a second line, a host line or another package's line."""
    value = str(text)
    if len(value) > MAX_LOG_CHARS:
        value = f"{value[:MAX_LOG_CHARS]}… ({len(value) - MAX_LOG_CHARS} more characters cut)"
    return _CONTROL.sub(lambda m: json.dumps(m.group())[1:-1], value)


@dataclass
class _Pending:
    callbacks: HostCallbacks
    method: str = ""
    package: str | None = None
    inbox: queue.Queue[tuple[str, Any]] = field(default_factory=queue.Queue)


class HostProcess(Supervised):
    """One running Node child and its reader threads. Replaced wholesale on restart."""

    def __init__(self, host: Any) -> None:  # a NodeHost (not imported: host.py imports this)
        self.host = host
        self.tmpdir = tempfile.mkdtemp(prefix="covel-host-")
        py_read, node_write = os.pipe()
        node_read, py_write = os.pipe()
        # Only what the host needs: no variable of the hub's (SECRET_KEY, DATABASE_URL, model
        # keys) ever reaches plugin code. The host reads COVEL_HOST_* and removes them.
        env = {
            "COVEL_HOST_IN_FD": str(node_read),
            "COVEL_HOST_OUT_FD": str(node_write),
            "COVEL_HOST_TRUST": host.trust,
            "COVEL_HOST_MAX_FRAME_BYTES": str(host.max_frame_bytes),
            "COVEL_HOST_LOG_LINES_PER_S": str(host.log_lines_per_s),
            "COVEL_HOST_MAX_DEPTH": str(host.max_depth),
            "NODE_OPTIONS": "",  # a developer's NODE_OPTIONS must not change the host
            "LANG": "C.UTF-8",
            "LC_ALL": "C.UTF-8",
            "TZ": "UTC",
            "TMPDIR": self.tmpdir,
        }
        if not host.freeze_realm:
            env["COVEL_HOST_FREEZE"] = "0"
        try:
            self.proc = subprocess.Popen(
                host.command(),
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                pass_fds=(node_read, node_write),
                env=env,
                cwd=str(HOST_SCRIPT.parent),
            )
        except BaseException:
            for fd in (py_read, node_write, node_read, py_write):
                os.close(fd)
            shutil.rmtree(self.tmpdir, ignore_errors=True)
            raise
        os.close(node_read)
        os.close(node_write)
        self.reader = os.fdopen(py_read, "rb", buffering=0)
        self.writer = os.fdopen(py_write, "wb", buffering=0)
        self.write_lock = threading.Lock()
        self.pending: dict[int, _Pending] = {}
        self.pending_lock = threading.Lock()
        self.dead = False
        self.death_reason = ""
        self.death_code = "host_crashed"
        self.ready = threading.Event()
        self.info: dict[str, Any] = {}
        self.loaded: dict[str, Any] = {}  # package id -> load key, for this process only
        self.tool_limits: dict[str, dict[str, int]] = {}  # package id -> {tool: timeoutMs}
        self.stderr_tail: deque[str] = deque(maxlen=20)
        self.log_buckets: dict[str, list[float]] = {}  # where -> [tokens, at, dropped]
        self.rss_limit = (host.memory_mb + BASE_RSS_MB) * 1024 * 1024
        self.peak_rss = 0
        self.idle_mark: tuple[float, float] | None = None  # (time, cpu seconds) when idle began
        self.last_active = time.monotonic()
        self.last_seen = time.monotonic()  # the last frame read from the host
        self.ping_lock = threading.Lock()
        self.ping_id = 0
        self.ping_sent: float | None = None  # when the unanswered heartbeat was sent
        self.pong = threading.Event()
        threading.Thread(target=self._read_frames, name="pluginhost-frames", daemon=True).start()
        for name, stream in (("stdout", self.proc.stdout), ("stderr", self.proc.stderr)):
            threading.Thread(
                target=self._pump_output,
                args=(name, stream),
                name="pluginhost-output",
                daemon=True,
            ).start()

    # -------------------------------------------------------------- reading

    def _read_exact(self, size: int) -> bytes | None:
        chunks = []
        while size:
            chunk = self.reader.read(size)
            if not chunk:
                return None
            chunks.append(chunk)
            size -= len(chunk)
        return b"".join(chunks)

    def _read_frames(self) -> None:
        try:
            while True:
                header = self._read_exact(4)
                if header is None:
                    break
                (size,) = struct.unpack(">I", header)
                if size > self.host.max_frame_bytes + FRAME_SLACK:
                    # Never read it: the host sends no frame this big, so whatever runs there no
                    # longer follows the protocol.
                    self.kill(
                        f"the plugin host {self.host.describe()} sent a frame of {size} bytes, "
                        f"over the {self.host.max_frame_bytes} byte limit, and was stopped",
                        code="host_output_exceeded",
                    )
                    return
                body = self._read_exact(size)
                if body is None:
                    break
                self.last_seen = time.monotonic()
                try:
                    message = json.loads(body)
                except (ValueError, RecursionError, MemoryError) as exc:
                    # The host caps nesting itself, so a frame that does not decode means it no
                    # longer follows the protocol: every call in flight fails now, not at its
                    # timeout, and the host restarts on the next call.
                    self.kill(
                        f"the plugin host {self.host.describe()} sent a frame that could not be "
                        f"read ({type(exc).__name__}), and was stopped",
                        code="host_frame_unreadable",
                    )
                    return
                if not isinstance(message, dict):
                    self.kill(
                        f"the plugin host {self.host.describe()} sent a frame that is not a "
                        "message, and was stopped",
                        code="host_frame_unreadable",
                    )
                    return
                self._route(message)
        except OSError as exc:
            log.warning("plugin host channel failed: %s", exc)
        except Exception:  # the reader must never die silently with calls waiting on it
            log.exception("plugin host reader failed")
            self.kill("the plugin host's reply reader failed", code="host_frame_unreadable")
            return
        code = self.proc.wait()
        reason = f"the Node plugin host exited (code {code})"
        fatal = [line for line in self.stderr_tail if "out of memory" in line.lower()]
        if fatal:
            reason += f": {fatal[-1]}"
        self._die(reason, code="host_memory_exceeded" if fatal else "host_crashed")

    def _admit_log(self, where: str) -> int | None:
        """A token bucket per package: None drops the line, else the lines dropped before it."""
        now = time.monotonic()
        rate = self.host.log_lines_per_s
        # A little above the host's own rate, so its "lines dropped" notes get through.
        capacity = rate * 2 + 10
        bucket = self.log_buckets.setdefault(where, [capacity, now, 0])
        bucket[0] = min(capacity, bucket[0] + (now - bucket[1]) * (rate + 5))
        bucket[1] = now
        if bucket[0] < 1:
            bucket[2] += 1
            return None
        bucket[0] -= 1
        dropped, bucket[2] = int(bucket[2]), 0
        return dropped

    def _plugin_line(self, level: int, where: str, text: Any) -> None:
        dropped = self._admit_log(where)
        if dropped is None:
            return
        if dropped:
            plugin_log.warning(
                "[%s] %s log lines dropped (over %s lines/s)",
                where,
                dropped,
                self.host.log_lines_per_s,
                extra={"plugin": where},
            )
        plugin_log.log(level, "[%s] %s", where, one_line(text), extra={"plugin": where})

    def _route(self, message: dict[str, Any]) -> None:
        kind = message.get("type")
        if kind == "log":
            if self.host.label is not None:
                # A community host runs one package: the line is that package's, whatever the
                # frame claims.
                where = self.host.label
            else:
                where = str(message.get("package") or "host")
            runtime = message.get("runtime")
            if isinstance(runtime, str) and _RUNTIME_NAME.fullmatch(runtime):
                where = f"{where}/{runtime}"
            level = message.get("level")
            self._plugin_line(
                LEVELS.get(level, logging.INFO) if isinstance(level, str) else logging.INFO,
                where,
                message.get("message"),
            )
            return
        if kind == "ready":
            self.info = message
            self.ready.set()
            return
        if kind == "pong":
            with self.ping_lock:
                if message.get("id") == self.ping_id:
                    self.ping_sent = None
                    self.pong.set()
            return
        if kind in ("result", "error"):
            target = self._pending(message.get("id"))
        elif kind == "call":
            target = self._pending(message.get("callId"))
            if target is None:
                self.send(
                    {
                        "type": "error",
                        "id": message.get("id"),
                        "error": {
                            "code": "call_closed",
                            "message": f"{message.get('method')} is refused: this call has ended",
                        },
                    }
                )
                return
        else:
            return
        if target is not None:
            target.inbox.put((kind, message))

    def _pending(self, call_id: Any) -> _Pending | None:
        with self.pending_lock:
            return self.pending.get(call_id)

    def _pump_output(self, name: str, stream: Any) -> None:
        # Plugins write to stand-in streams (log frames); what reaches the real pipes is Node's
        # own output (a fatal error, say), kept for the death reason and logged as one-liners.
        where = f"{self.host.label or 'plugin host'} ({name})"
        for raw in iter(stream.readline, b""):
            line = raw.decode("utf-8", "replace").rstrip()
            if name == "stderr":
                self.stderr_tail.append(line[:MAX_LOG_CHARS])
            if self._admit_log(where) is not None:
                output_log.info("[%s] %s", where, one_line(line))

    def _die(self, reason: str, *, code: str = "host_crashed") -> None:
        with self.pending_lock:
            if self.dead and self.death_reason:
                return
            self.dead = True
            self.death_reason = reason
            self.death_code = code
            waiting = list(self.pending.values())
        self.ready.set()
        for pending in waiting:
            pending.inbox.put(("crashed", (reason, code)))
        self._cleanup()

    def _cleanup(self) -> None:
        shutil.rmtree(self.tmpdir, ignore_errors=True)

    # -------------------------------------------------------------- writing

    def send(self, message: dict[str, Any]) -> None:
        body = json.dumps(message, separators=(",", ":"), ensure_ascii=False).encode("utf-8")
        with self.write_lock:
            self.writer.write(struct.pack(">I", len(body)) + body)

    def kill(
        self, reason: str = "the plugin host was stopped", *, code: str = "host_crashed"
    ) -> None:
        """Stop the process now; every call in flight fails with reason and code."""
        self._die(reason, code=code)
        try:
            self.proc.kill()
        except OSError:
            pass
        try:
            self.writer.close()
        except OSError:
            pass

    def close(self, timeout: float = 2.0) -> None:
        try:
            self.writer.close()  # end of input: the host exits on its own
        except OSError:
            pass
        try:
            self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        self._die("the plugin host was stopped")


def serve_callback(process: HostProcess, pending: _Pending, message: dict[str, Any]) -> None:
    """Answer one ctx callback of a call, in the thread that made the call."""
    method = str(message.get("method"))
    # The package is the one this call was made for, whatever the frame says: plugin data is
    # always the caller's own.
    params = {**(message.get("params") or {}), "package": pending.package}
    try:
        if method == "pluginData.set" and pending.method != "rpc":
            raise CallbackRefused(
                "immediate writes are for RPC actions only", code="host_capability_refused"
            )
        result = dispatch_callback(pending.callbacks, method, params)
        reply: dict[str, Any] = {"type": "result", "id": message.get("id"), "result": result}
    except CallbackRefused as exc:
        error = {"code": exc.code, "message": exc.message}
        if exc.hint:
            error["hint"] = exc.hint
        reply = {"type": "error", "id": message.get("id"), "error": error}
    except Exception as exc:  # a callback bug must not leave the plugin waiting forever
        log.exception("plugin host callback %s failed", method)
        reply = {
            "type": "error",
            "id": message.get("id"),
            "error": {"code": "callback_failed", "message": str(exc)},
        }
    try:
        json.dumps(reply)
    except (TypeError, ValueError) as exc:
        reply = {
            "type": "error",
            "id": message.get("id"),
            "error": {"code": "callback_failed", "message": f"result is not JSON: {exc}"},
        }
    try:
        process.send(reply)
    except OSError:
        pass  # the reader thread reports the death to the waiting call
