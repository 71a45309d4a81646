"""Which Node process runs a package: hosts by trust.

Bundled packages (found in COVEL_BUNDLED_PLUGINS_DIR) are trusted and share one host per worker
process. Every community package version (any other folder) gets a host of its own, started on
its first call and stopped when idle, so no community package shares a process, a global or a
prototype with bundled code or with another community package. A community package is loaded
only once staff approved its code (approval_gate), unless a developer command says it runs the
author's code (author_code_consent).
"""

from __future__ import annotations

import atexit
import contextlib
import contextvars
import os
import threading
import time
from collections import OrderedDict
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from catalogue.manifest.types import Manifest

from .errors import PluginHostError, PluginLoadError
from .host import NodeHost
from .supervision import watch_stop

_CONSENT: contextvars.ContextVar[str | None] = contextvars.ContextVar(
    "covel_author_code_consent", default=None
)


def _setting(name: str, default: Any) -> Any:
    from django.conf import settings

    return getattr(settings, name, default)


# Folders with their symlinks followed, for a few seconds: every plugin call (several a turn,
# one a job) asks for its package's trust, and resolving a path costs a system call or more per
# component. A folder re-pointed on disk takes this long to be seen, like a package's files
# (services._load_key); changing what the bundled folder holds needs the server's own disk.
RESOLVE_TTL_SECONDS = 2.0
_RESOLVED: dict[tuple[str, str], tuple[float, Path]] = {}


def resolved(path: str | Path) -> Path:
    """Path(path).resolve(), remembered for RESOLVE_TTL_SECONDS."""
    text = str(path)
    key = (text, "" if os.path.isabs(text) else os.getcwd())
    now = time.monotonic()
    hit = _RESOLVED.get(key)
    if hit is not None and now - hit[0] < RESOLVE_TTL_SECONDS:
        return hit[1]
    found = Path(text).resolve()
    if len(_RESOLVED) > 4096:  # many throw-away folders (tests): start afresh
        _RESOLVED.clear()
    _RESOLVED[key] = (now, found)
    return found


def folder_trust(path: str | Path) -> str:
    """ "bundled" for a folder inside the bundled plugins folder (after symlinks), else
    "community": trust comes from where a package is found, as the catalogue records it."""
    bundled = resolved(_setting("COVEL_BUNDLED_PLUGINS_DIR", "plugins"))
    folder = resolved(path)
    return "bundled" if folder == bundled or bundled in folder.parents else "community"


def manifest_trust(manifest: Manifest) -> str:
    return folder_trust(manifest.path)


@contextlib.contextmanager
def author_code_consent(command: str) -> Iterator[None]:
    """Within this block, unapproved community code may load (still in a contained host): for
    developer commands (test_runtime) that run a package's code on purpose."""
    token = _CONSENT.set(command)
    try:
        yield
    finally:
        _CONSENT.reset(token)


def author_code_consented() -> bool:
    return _CONSENT.get() is not None


def approval_gate(manifest: Manifest) -> None:
    """Refuse to import a community package's modules before staff approved its code.

    The Approvals app decides (approvals.selectors.package_usability, imported on first use);
    without it nothing community loads.
    """
    if author_code_consented():
        return
    try:
        from approvals.selectors import package_usability
    except ImportError as exc:
        raise PluginLoadError(
            f"{manifest.id} is community code and this hub has no approvals to allow it",
            code="plugin_not_approved",
        ) from exc
    verdict = package_usability(
        package_id=manifest.id, version=manifest.version, path=manifest.path
    )
    if not verdict.usable and _runs_last_approval(manifest):
        return
    if not verdict.usable:
        raise PluginLoadError(
            f"{manifest.id}@{manifest.version} is community code that staff have not approved, "
            f"so none of its modules is loaded: {verdict.reason}",
            code="plugin_not_approved",
            details={"state": verdict.state},
        )


def _runs_last_approval(manifest: Manifest) -> bool:
    """A change to the package folder found during this turn (its manifest was resolved before):
    the folder now waits for staff, and code_root hands the host the copy of the approval that
    still stands, never the folder's files. The next turn resolves that approved version."""
    from approvals.selectors import approval_in_force
    from approvals.store import snapshot_hash

    if snapshot_hash(manifest.path) is not None:
        return False  # a kept version is judged by its own approval (package_usability)
    return approval_in_force(package_key=manifest.id) is not None


class HostPool:
    """The hosts of one worker process: the shared bundled host and one per community package.

    max_community: community hosts kept at once; past it the least recently used idle one
    stops. idle_seconds: a community host with no call for this long stops (it restarts, and
    reloads its package, on the next call).
    """

    def __init__(
        self,
        *,
        memory_mb: int = 256,
        idle_seconds: float = 300.0,
        max_community: int = 16,
        network_namespace: str = "auto",
        max_frame_bytes: int | None = None,
        log_lines_per_s: int | None = None,
        walls: dict[str, bool] | None = None,
    ) -> None:
        self.memory_mb = memory_mb
        # NodeHost's socket_filter / require_os_layer / freeze_realm for community hosts; the
        # defaults (every wall on, an OS layer required) are what production runs.
        self.walls = dict(walls or {})
        self.idle_seconds = idle_seconds
        self.max_community = max_community
        self.network_namespace = network_namespace
        self.limits: dict[str, Any] = {}
        if max_frame_bytes is not None:
            self.limits["max_frame_bytes"] = max_frame_bytes
        if log_lines_per_s is not None:
            self.limits["log_lines_per_s"] = log_lines_per_s
        self._bundled: NodeHost | None = None
        self._community: OrderedDict[tuple[str, str, str], NodeHost] = OrderedDict()
        self._lock = threading.Lock()
        self._pid = os.getpid()
        self._reaper: threading.Thread | None = None
        self._stopped = threading.Event()

    def bundled(self) -> NodeHost:
        with self._lock:
            if self._bundled is None:
                self._bundled = NodeHost(memory_mb=self.memory_mb, trust="bundled", **self.limits)
            return self._bundled

    def community(self, *, package: str, version: str, folder: str) -> NodeHost:
        """The host of one community package version, created on first use."""
        key = (package, version, folder)
        stale: list[NodeHost] = []
        with self._lock:
            host = self._community.get(key)
            if host is None:
                # A new version (or folder) of the package supersedes the old one's host.
                for other in [k for k in self._community if k[0] == package and k != key]:
                    if not self._community[other].busy:
                        stale.append(self._community.pop(other))
                host = NodeHost(
                    memory_mb=self.memory_mb,
                    trust="community",
                    label=package,
                    network_namespace=False if self.network_namespace == "off" else None,
                    require_network_namespace=self.network_namespace == "require",
                    **self.walls,
                    **self.limits,
                )
                self._community[key] = host
                stale += self._evict()
            self._community.move_to_end(key)
            self._start_reaper()
        for old in stale:  # outside the lock: a stop may wait for the process to exit
            old.stop()
        return host

    def host_for(self, manifest: Manifest) -> NodeHost:
        if manifest_trust(manifest) == "bundled":
            return self.bundled()
        return self.community(
            package=manifest.id,
            version=manifest.version,
            folder=str(Path(manifest.path).resolve()),
        )

    def community_hosts(self) -> list[NodeHost]:
        with self._lock:
            return list(self._community.values())

    def _evict(self) -> list[NodeHost]:
        # Called with the lock held: the least recently used idle hosts past the limit leave
        # the pool; the caller stops them.
        excess = len(self._community) - self.max_community
        evicted = []
        for key in list(self._community):
            if excess <= 0:
                break
            if self._community[key].busy:
                continue
            evicted.append(self._community.pop(key))
            excess -= 1
        return evicted

    def reap(self, now_idle: float | None = None) -> int:
        """Stop community hosts idle for idle_seconds (or now_idle); how many stopped."""
        limit = self.idle_seconds if now_idle is None else now_idle
        # The entry stays: a caller holding the host restarts it on its next call, still
        # known to the pool (and reaped again later).
        with self._lock:
            idle_hosts = [
                host
                for host in self._community.values()
                if host.running and (host.idle_for() or 0.0) >= limit and not host.busy
            ]
        for host in idle_hosts:
            host.stop()
        return len(idle_hosts)

    def _start_reaper(self) -> None:
        if self._reaper is not None and self._reaper.is_alive():
            return
        self._reaper = threading.Thread(
            target=self._reap_loop, name="pluginhost-reaper", daemon=True
        )
        self._reaper.start()

    def _reap_loop(self) -> None:
        interval = max(0.2, min(self.idle_seconds / 4, 5.0))
        while not self._stopped.wait(interval):
            try:
                self.reap()
            except (OSError, PluginHostError):
                pass

    def stop_all(self) -> None:
        self._stopped.set()
        # The hosts' watch first: it must not sample (and log about) hosts while they stop.
        watch_stop()
        with self._lock:
            hosts = [self._bundled, *self._community.values()]
            self._bundled = None
            self._community.clear()
        for host in hosts:
            if host is not None:
                try:
                    host.stop()
                except (OSError, PluginHostError):
                    pass


_pool: HostPool | None = None
_pool_lock = threading.Lock()


def host_pool() -> HostPool:
    """This process's pool, created on first use (after a fork, a new one: threads do not survive)."""
    global _pool
    with _pool_lock:
        if _pool is None or _pool._pid != os.getpid():
            _pool = HostPool(
                memory_mb=int(_setting("COVEL_PLUGIN_HOST_MEMORY_MB", 256)),
                idle_seconds=float(_setting("COVEL_PLUGIN_HOST_IDLE_SECONDS", 300)),
                max_community=int(_setting("COVEL_PLUGIN_COMMUNITY_HOSTS", 16)),
                network_namespace=str(_setting("COVEL_PLUGIN_HOST_NETNS", "auto")),
                max_frame_bytes=int(_setting("COVEL_PLUGIN_MAX_RESULT_BYTES", 8 * 1024 * 1024)),
                log_lines_per_s=int(_setting("COVEL_PLUGIN_LOG_LINES_PER_S", 200)),
            )
        return _pool


def host_for(manifest: Manifest) -> NodeHost:
    """The host that runs this package: shared for bundled code, its own for community code."""
    return host_pool().host_for(manifest)


@atexit.register
def stop_hosts() -> None:
    pool = _pool
    if pool is not None and pool._pid == os.getpid():
        pool.stop_all()


def get_host() -> NodeHost:
    """This process's shared host of bundled packages (host_for picks per trust)."""
    return host_pool().bundled()
