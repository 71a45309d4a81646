"""Supervision of a running plugin host: its memory and idle CPU sampled by one watch thread per
Python process, heartbeats while it is idle (a thread blocked at 0 % CPU answers none), and the
address-space cap. HostProcess (pluginhost/process.py) takes these methods from Supervised."""

from __future__ import annotations

import logging
import os
import threading
import time
import weakref
from typing import Any

log = logging.getLogger("covel.pluginhost")

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
        self.processes: weakref.WeakSet[Supervised] = weakref.WeakSet()
        self.lock = threading.Lock()
        self.thread: threading.Thread | None = None
        self.pid = os.getpid()
        self.stopped = threading.Event()

    def add(self, process: Supervised) -> None:
        with self.lock:
            if self.pid != os.getpid():
                # After a fork the parent's hosts are not this process's to watch (or kill).
                self.processes = weakref.WeakSet()
                self.thread = None
                self.pid = os.getpid()
            self.processes.add(process)
            if self.thread is None or not self.thread.is_alive():
                self.stopped = threading.Event()  # the new thread's own: an old one still ends
                self.thread = threading.Thread(
                    target=self._run, args=(self.stopped,), name="pluginhost-watch", daemon=True
                )
                self.thread.start()

    def stop(self) -> None:
        """End the thread (the pool stops its hosts): at interpreter exit it would otherwise
        sample hosts being torn down, and log every failure while logging itself shuts down."""
        with self.lock:
            self.stopped.set()
            thread, self.thread = self.thread, None
        if thread is not None and thread is not threading.current_thread():
            thread.join(timeout=1.0)

    def _run(self, stopped: threading.Event) -> None:
        while not stopped.wait(WATCH_INTERVAL):
            with self.lock:
                watched = list(self.processes)
            for process in watched:
                try:
                    process.check_limits()
                except Exception:  # the watch must outlive any one host's oddity
                    log.exception("plugin host watch failed")


_watch = _Watch()


def watch_stop() -> None:
    """Stop this process's watch thread (HostPool.stop_all); the next host started restarts it."""
    if _watch.pid == os.getpid():
        _watch.stop()


class Supervised:
    """The limits half of HostProcess: calls in flight, memory, idle CPU, heartbeats, rlimits."""

    # Set by HostProcess.__init__.
    host: Any
    proc: Any
    pending: dict[int, Any]
    pending_lock: threading.Lock
    dead: bool
    ready: threading.Event
    rss_limit: int
    peak_rss: int
    idle_mark: tuple[float, float] | None
    last_active: float
    last_seen: float
    ping_lock: threading.Lock
    ping_id: int
    ping_sent: float | None
    pong: threading.Event

    def kill(self, reason: str = "", *, code: str = "host_crashed") -> None:
        raise NotImplementedError

    def send(self, message: dict[str, Any]) -> None:
        raise NotImplementedError

    def track(self, call_id: int, pending: Any) -> None:
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
        if pending is not None:
            with self.ping_lock:
                # A busy host is not judged by heartbeats: one sent while it was idle counts
                # again only from when it is idle next (its pong may queue behind the call).
                self.ping_sent = None

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
