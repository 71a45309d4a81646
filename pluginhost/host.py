"""The supervised Node.js child processes that run plugin code, and their framed channel.

A NodeHost is one supervised Node process (restarted on demand). Bundled packages share one host
per worker process; every community package version gets a host of its own (pluginhost/pool.py).
Python and Node talk over two dedicated pipes (never the child's stdout/stderr). A frame is a
4-byte big-endian length and UTF-8 JSON. Calls are multiplexed: several threads may call at once;
each waits for its own answer and serves the ctx callbacks that belong to its call in its own
thread, so database work from callbacks happens where the caller's transaction is.

Containment (docs/plugin-host.md, "Threat model"): every host starts with a minimal environment
and a temp dir of its own, under an address-space limit, watched for resident memory and idle
CPU; a community host also runs under Node's permission model (read: the host's files, its
node_modules and the package; write: nowhere) and, where Linux allows, in an empty network
namespace. Whatever a community host sends is treated as untrusted: its log lines are tagged
with its package here, rate-limited, kept to one line, and an oversized frame stops the host.
"""

from __future__ import annotations

import itertools
import logging
import os
import queue
import threading
import time
from pathlib import Path
from typing import Any

from .callbacks import HostCallbacks, RefusingCallbacks
from .errors import HostCrashed, PluginTimeout, error_from_frame
from .process import (
    LOG_LINES_PER_S,
    MAX_DEPTH,
    MAX_FRAME_BYTES,
    HostProcess,
    _Pending,
    one_line,
    serve_callback,
)
from .supervision import HEARTBEAT_BEFORE_CALL, HEARTBEAT_TIMEOUT, _watch
from .walls import (
    HOST_SCRIPT,
    SOCKWALL,
    TRUSTS,
    containment_problem,
    host_command,
    host_read_paths,
    network_namespace_prefix,
    node_binary,
)

__all__ = [
    "HEARTBEAT_TIMEOUT",
    "HOST_SCRIPT",
    "SOCKWALL",
    "NodeHost",
    "host_read_paths",
    "network_namespace_prefix",
    "node_binary",
    "one_line",
]

log = logging.getLogger("covel.pluginhost")


class NodeHost:
    """A supervised Node process: start/stop/restart, and request() for calls in both directions.

    trust "bundled" (trusted code, several packages may share the host) or "community" (one
    package version; Node's permission model, an empty network namespace where Linux allows,
    and `label` tags every log line whatever the host says). memory_mb caps plugin memory: the
    V8 heap (--max-old-space-size) and, with Node's own BASE_RSS_MB, the whole process's resident
    memory, watched from here (heap and buffers alike). grace is how much longer than a call's
    own limit Python waits before it decides the host is hung (e.g. a synchronous infinite
    loop), kills it and fails the call. read_paths: folders a community host may read besides
    host_read_paths() (its package's root; see package_root()). network_namespace: None means
    "when this machine allows it" for a community host, never for a bundled one.
    """

    def __init__(
        self,
        *,
        memory_mb: int = 256,
        grace: float = 2.0,
        start_timeout: float = 15.0,
        node: str | None = None,
        trust: str = "bundled",
        label: str | None = None,
        read_paths: tuple[str, ...] | list[str] = (),
        network_namespace: bool | None = None,
        require_network_namespace: bool = False,
        max_frame_bytes: int = MAX_FRAME_BYTES,
        log_lines_per_s: int = LOG_LINES_PER_S,
        socket_filter: bool | None = None,
        require_os_layer: bool | None = None,
        freeze_realm: bool = True,
        max_depth: int = MAX_DEPTH,
    ) -> None:
        if trust not in TRUSTS:
            raise ValueError(f"trust must be one of {TRUSTS}, got {trust!r}")
        self.node = node or node_binary()
        self.memory_mb = memory_mb
        self.grace = grace
        self.start_timeout = start_timeout
        self.trust = trust
        self.label = label if trust == "community" else None
        self.read_paths = tuple(str(Path(p).resolve()) for p in read_paths)
        self.network_namespace = network_namespace
        self.require_network_namespace = require_network_namespace
        self.max_frame_bytes = max_frame_bytes
        self.log_lines_per_s = log_lines_per_s
        # The walls of docs/plugin-host.md "Threat model". A community host starts only with an
        # OS layer that refuses sockets; switching one off is for the tests of each wall alone.
        self.socket_filter = trust == "community" if socket_filter is None else socket_filter
        self.require_os_layer = (
            trust == "community" if require_os_layer is None else require_os_layer
        )
        self.freeze_realm = freeze_realm
        self.max_depth = max_depth
        self._ids = itertools.count(1)
        self._lock = threading.RLock()
        self._process: HostProcess | None = None
        self.restarts = 0
        self.loads = 0  # package loads into the current process (ES modules are never unloaded)
        self.started_at = 0.0
        self._pid = os.getpid()

    def describe(self) -> str:
        return f"of {self.label}" if self.label else f"({self.trust})"

    # -------------------------------------------------------------- lifecycle

    def command(self) -> list[str]:
        """The argv of a new host process (walls.host_command): the socket filter, the network
        namespace and Node's permission model for community code."""
        community = self.trust == "community"
        return host_command(
            self.node,
            prefix=self.netns_prefix() if community else None,
            socket_filter=self.socket_filter,
            read_paths=(*host_read_paths(), *self.read_paths) if community else None,
            memory_mb=self.memory_mb,
        )

    def netns_prefix(self) -> tuple[str, ...] | None:
        if self.trust != "community" or self.network_namespace is False:
            return None
        prefix = network_namespace_prefix()
        if prefix is None and (self.network_namespace or self.require_network_namespace):
            raise HostCrashed(
                "a network namespace was required for community plugin hosts, but this machine "
                "offers none (run as root, or enable unprivileged user namespaces)"
            )
        return prefix

    def set_read_paths(self, paths: tuple[str, ...] | list[str]) -> None:
        """Change what a community host may read; a running host restarts on its next call."""
        resolved = tuple(str(Path(p).resolve()) for p in paths)
        with self._lock:
            if resolved == self.read_paths:
                return
            self.read_paths = resolved
            if self._process is not None:
                self._process.close()
                self._process = None

    @property
    def running(self) -> bool:
        process = self._process
        return process is not None and not process.dead and process.proc.poll() is None

    @property
    def pid(self) -> int | None:
        return self._process.proc.pid if self._process else None

    @property
    def info(self) -> dict[str, Any]:
        """The host's ready frame: node version, trust, permission and network interfaces."""
        return dict(self._process.info) if self._process else {}

    @property
    def busy(self) -> bool:
        process = self._process
        return bool(process and process.busy)

    def idle_for(self) -> float | None:
        """Seconds since the last call ended, None while a call is in flight or not running."""
        process = self._process
        if process is None or process.dead or process.busy:
            return None
        return time.monotonic() - process.last_active

    def start(self) -> None:
        with self._lock:
            if self.running:
                return
            if self._process is not None:
                self._process.kill()
                self.restarts += 1
            started = time.monotonic()
            command = self.command()
            try:
                process = HostProcess(self)
            except OSError as exc:
                raise HostCrashed(
                    f"the Node plugin host could not be started ({self.node}): {exc}"
                ) from exc
            if not process.ready.wait(self.start_timeout) or process.dead:
                process.kill()
                raise HostCrashed(
                    f"the Node plugin host did not start: {process.death_reason or 'no ready frame'}"
                )
            problem = self._contained(process.info, netns="--net" in command)
            if problem:
                process.kill()
                raise HostCrashed(f"the plugin host {self.describe()} is not contained: {problem}")
            process.apply_rlimits()
            self._process = process
            self.loads = 0
            self.started_at = time.monotonic() - started
            _watch.add(process)
            log.debug(
                "plugin host started (pid %s, node %s, %s)",
                process.proc.pid,
                process.info.get("node"),
                self.trust,
            )

    def _contained(self, info: dict[str, Any], *, netns: bool) -> str | None:
        return containment_problem(
            info, trust=self.trust, netns=netns, require_os_layer=self.require_os_layer
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

    def _ensure(self) -> HostProcess:
        with self._lock:
            if not self.running:
                self.start()
            assert self._process is not None
            return self._process

    def _ensure_answering(self) -> HostProcess:
        """The running process, checked with a heartbeat when it has been quiet and idle: a host
        blocked after its last call is restarted before it is handed this one."""
        process = self._ensure()
        quiet = time.monotonic() - process.last_seen
        if (
            process.busy
            or quiet < HEARTBEAT_BEFORE_CALL
            or process.answers_heartbeat(HEARTBEAT_TIMEOUT)
        ):
            return process
        self._kill(
            process,
            f"the plugin host {self.describe()} did not answer a heartbeat within "
            f"{HEARTBEAT_TIMEOUT:g} s before a call (its thread is blocked), and was stopped",
            code="host_unresponsive",
        )
        return self._ensure()

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
        process = self._ensure_answering()
        call_id = next(self._ids)
        pending = _Pending(
            callbacks or RefusingCallbacks(), method=method, package=params.get("package")
        )
        process.track(call_id, pending)
        try:
            payload = {**params, "timeoutMs": int(timeout * 1000)}
            try:
                process.send({"type": "call", "id": call_id, "method": method, "params": payload})
            except OSError as exc:
                self._kill(process, f"could not reach the Node plugin host: {exc}")
                raise HostCrashed(f"could not reach the Node plugin host: {exc}") from exc
            deadline = time.monotonic() + timeout + self.grace
            while True:
                kind, message = _next_message(self, process, pending, deadline, timeout, params)
                if kind == "result":
                    return message.get("result")
                if kind == "error":
                    raise error_from_frame(message.get("error") or {}, during_load=during_load)
                if kind == "crashed":
                    reason, code = message
                    raise HostCrashed(
                        f"{reason}; the call failed and the host will restart on the next call",
                        code=code,
                    )
                if kind == "call":
                    serve_callback(process, pending, message)
        finally:
            process.track(call_id, None)

    def _kill(
        self,
        process: HostProcess,
        reason: str = "the plugin host was stopped",
        *,
        code: str = "host_crashed",
    ) -> None:
        with self._lock:
            process.kill(reason, code=code)
            if self._process is process:
                self.restarts += 1
                self._process = None

    def echo(self, value: Any, *, timeout: float = 10.0) -> Any:
        """A bare round trip: the floor of every call's cost."""
        return self.request("echo", {"value": value}, timeout=timeout)["value"]


def _next_message(
    host: NodeHost,
    process: HostProcess,
    pending: _Pending,
    deadline: float,
    timeout: float,
    params: dict[str, Any],
) -> tuple[str, Any]:
    """The call's next message; past the deadline the silent host is killed (PluginTimeout)."""
    try:
        return pending.inbox.get(timeout=max(deadline - time.monotonic(), 0.0))
    except queue.Empty:
        pass
    method = pending.method
    what = f"{method} {params.get('tool') or params.get('action') or params.get('runtime') or ''}"
    host._kill(
        process,
        f"the plugin host {host.describe()} was stopped: {what.strip()} did not answer "
        f"within {timeout:g} s",
    )
    raise PluginTimeout(
        f"{method} did not answer within {timeout:g} s; the plugin host was stopped and will "
        "restart",
        details={"killed": True},
    ) from None
