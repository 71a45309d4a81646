"""Issue #29, the escape: an approved community package patches a shared built-in prototype
(EventEmitter.prototype.emit), catches the host's own channel socket on the next call, and opens
a Unix socket with its class, as it opened PostgreSQL's. A Unix socket server of this test stands
in for the database and counts what arrives.

Each wall is tried alone and together (docs/plugin-host.md, "Threat model"): the frozen realm
(freeze.mjs: the patch throws) and the OS socket filter (sockwall.py: socket() answers EPERM). A
control run with both walls off shows that the attack is real: there the connection arrives.

The package goes the real path: a community folder, indexed, approved by Bob (staff), then called
through pluginhost.pool.host_for, whose pool is built with the walls under test.
"""

from __future__ import annotations

import json
import shutil
import socket
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from approvals.selectors import approval_current
from approvals.services import approval_decide, approval_request_sync
from catalogue.manifest.loader import load_package
from catalogue.models import Package
from catalogue.services import package_content_hash, package_index
from pluginhost import pool as pool_module
from pluginhost.callbacks import InMemoryCallbacks
from pluginhost.errors import HostCrashed
from pluginhost.host import NodeHost
from pluginhost.pool import HostPool
from pluginhost.services import plugin_rpc_call

pytestmark = pytest.mark.django_db

SAPPER = r"""
import { EventEmitter } from "node:events";

let captured = null;
let patch = "applied";
try {
  const original = EventEmitter.prototype.emit;
  EventEmitter.prototype.emit = function (...args) {
    if (!captured && this && this.constructor && this.constructor.name === "Socket") captured = this;
    return original.apply(this, args);
  };
} catch (error) {
  patch = `${error.constructor.name}: ${error.message}`;
}

// A second road to the same objects: a setter on Object.prototype that Node's stream code would
// call with the host's socket as `this`.
let setter = "applied";
try {
  Object.defineProperty(Object.prototype, "covelSapper", { set() { captured ??= this; }, configurable: true });
} catch (error) {
  setter = error.constructor.name;
}

// A third: Node's streams call process.nextTick(fn, stream) with the host's socket.
let nextTick = "applied";
try {
  const original = process.nextTick;
  process.nextTick = function (fn, ...args) {
    for (const arg of args) if (!captured && arg?.constructor?.name === "Socket") captured = arg;
    return original.call(process, fn, ...args);
  };
} catch (error) {
  nextTick = error.constructor.name;
}

export default function register(covel) {
  covel.registerRpc("strike", async (payload) => {
    const out = { patch, setter, nextTick, captured: captured ? captured.constructor.name : null };
    if (!captured) return out;
    const Socket = captured.constructor;
    out.connect = await new Promise((resolve) => {
      const timer = setTimeout(() => resolve("timeout"), 2000);
      try {
        const s = new Socket();
        s.on("error", (error) => { clearTimeout(timer); resolve(`error ${error.code}`); });
        s.connect(payload.path, () => { s.write("SELECT 1"); clearTimeout(timer); resolve("connected"); });
      } catch (error) {
        clearTimeout(timer);
        resolve(`threw ${error.code ?? error.message}`);
      }
    });
    return out;
  });
}
"""


class UnixServer:
    """A Unix socket server standing in for the database: counts every connection that arrives."""

    def __init__(self) -> None:
        # A short path of its own (a Unix socket path has at most 107 bytes).
        self.folder = tempfile.mkdtemp(prefix="covel-h29-", dir="/tmp")
        self.path = str(Path(self.folder) / ".s.PGSQL.5432")
        self.connections = 0
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.bind(self.path)
        self.sock.listen(8)
        self.sock.settimeout(0.1)
        self.stopped = threading.Event()
        self.thread = threading.Thread(target=self._accept, daemon=True)
        self.thread.start()

    def _accept(self) -> None:
        while not self.stopped.is_set():
            try:
                conn, _ = self.sock.accept()
            except OSError:
                continue
            self.connections += 1
            conn.close()

    def close(self) -> None:
        self.stopped.set()
        self.thread.join()
        self.sock.close()
        shutil.rmtree(self.folder, ignore_errors=True)


@pytest.fixture
def database_stand_in() -> Iterator[UnixServer]:
    server = UnixServer()
    # The server is reachable from this process: a plain connection counts.
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as probe:
        probe.connect(server.path)
    deadline = time.monotonic() + 2
    while server.connections < 1 and time.monotonic() < deadline:
        time.sleep(0.01)
    assert server.connections == 1
    server.connections = 0
    yield server
    server.close()


@pytest.fixture
def sapper(tmp_path: Path, settings: Any, bob: Any) -> Any:
    """The community package, indexed from the user folder and approved by staff."""
    settings.COVEL_USER_PLUGINS_DIR = tmp_path / "user"
    folder = tmp_path / "user" / "sapper"
    (folder / "server").mkdir(parents=True)
    frontmatter = {
        "id": "sapper",
        "version": "1.0.0",
        "description": "A package that looks harmless.",
        "contributes": {"actions": ["strike"]},
    }
    (folder / "PLUGIN.md").write_text(f"---\n{json.dumps(frontmatter)}\n---\nA package.\n")
    (folder / "server" / "index.js").write_text(SAPPER, encoding="utf-8")
    result = load_package(folder, host_version="0.1.0")
    assert result.ok, [str(e) for e in result.errors]
    package = package_index(
        result=result,
        source="user",
        content_hash=package_content_hash(path=folder),
        host_version="0.1.0",
    )
    assert package.trust == Package.Trust.COMMUNITY
    approval_request_sync(package=package)
    request = approval_current(package_key="sapper")
    assert request is not None
    approval_decide(request_id=request.pk, decision="allow", actor=bob)
    return result.manifest


def with_walls(monkeypatch: pytest.MonkeyPatch, **walls: bool) -> HostPool:
    pool = HostPool(walls=walls)
    monkeypatch.setattr(pool_module, "_pool", pool)
    return pool


def strike(manifest: Any, path: str) -> dict[str, Any]:
    # Two calls: the first frame's arrival is what a patched emit would catch.
    args = {"manifest": manifest, "action": "strike", "callbacks": InMemoryCallbacks()}
    plugin_rpc_call(payload={"path": path}, **args)
    return plugin_rpc_call(payload={"path": path}, **args)


WALLS = {
    "realm alone": {"freeze_realm": True, "socket_filter": False, "require_os_layer": False},
    "socket filter alone": {"freeze_realm": False, "socket_filter": True},
    "both": {"freeze_realm": True, "socket_filter": True},
}


@pytest.mark.parametrize("walls", list(WALLS), ids=list(WALLS))
def test_no_connection_arrives_with_each_wall(walls, monkeypatch, sapper, database_stand_in):
    pool = with_walls(monkeypatch, **WALLS[walls])
    try:
        out = strike(sapper, database_stand_in.path)
        time.sleep(0.2)
        assert database_stand_in.connections == 0, out
        if WALLS[walls]["freeze_realm"]:
            # The realm wall: the patch itself throws, so the host's socket is never seen.
            assert out["patch"].startswith("TypeError"), out
            assert out["setter"] == out["nextTick"] == "TypeError"
            assert out["captured"] is None
        else:
            # The OS wall alone: the package did get the host's socket class, and socket() failed.
            assert out["patch"] == "applied" and out["captured"] == "Socket"
            assert out["connect"] == "error EPERM", out
    finally:
        pool.stop_all()


def test_with_both_walls_off_the_attack_connects(monkeypatch, sapper, database_stand_in):
    """The control: it is these walls that stop the attack, not something else of the test."""
    pool = with_walls(monkeypatch, freeze_realm=False, socket_filter=False, require_os_layer=False)
    try:
        out = strike(sapper, database_stand_in.path)
        deadline = time.monotonic() + 2
        while database_stand_in.connections < 1 and time.monotonic() < deadline:
            time.sleep(0.01)
        assert out["captured"] == "Socket" and out["connect"] == "connected", out
        assert database_stand_in.connections >= 1
    finally:
        pool.stop_all()


def test_a_community_host_without_an_os_layer_does_not_start(tmp_path):
    host = NodeHost(trust="community", label="sapper", socket_filter=False, read_paths=[tmp_path])
    with pytest.raises(HostCrashed) as caught:
        host.start()
    assert "no OS layer refuses it sockets" in caught.value.message
    assert not host.running


def test_the_production_pool_runs_community_hosts_with_every_wall(sapper, monkeypatch):
    pool = with_walls(monkeypatch)
    try:
        host = pool.host_for(sapper)
        host.start()
        assert host.info["sockets"] == "refused"
        assert host.info["frozen"] > 1000
        assert "sockwall.py" in " ".join(host.command())
    finally:
        pool.stop_all()
