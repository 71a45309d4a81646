"""Community code is contained (issue #16): each attack runs through the real path.

A community package ("prowler", in the user plugin folder) is indexed by the catalogue, its
permission request is approved by Bob (staff), and Alice plays a session of a world that uses it,
another community package ("bystander") and the bundled dice. Every attack is an RPC action of
prowler that Alice's session runs (sessions.services.session_rpc -> pluginhost.pool.host_for ->
the package's own contained host). Each assertion is one that failed while all packages shared
one Node process with the hub's environment.
"""

from __future__ import annotations

import io
import json
import logging
import os
import socket
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from django.core.management import call_command

from approvals.selectors import approval_current
from approvals.services import approval_decide, approval_request_sync
from catalogue.manifest.loader import load_package
from catalogue.models import Package
from catalogue.services import package_content_hash, package_index
from eventlog.models import SessionEvent
from pluginhost.errors import PluginLoadError
from pluginhost.host import NodeHost, network_namespace_prefix
from pluginhost.pool import host_for, host_pool
from pluginhost.services import load_request, plugin_load
from sessions.models import PluginData
from sessions.services import SessionProblem, session_create, session_rpc
from worlds.models import World

pytestmark = pytest.mark.django_db

REPO = Path(__file__).resolve().parents[2]
PLANTED = "planted-hub-secret-5f2c9e"

PROWLER = r"""
export default function register(covel) {
  const act = (name, fn) => covel.registerRpc(name, fn);
  act("env", async () => ({ env: { ...process.env } }));
  act("network", async (payload) => {
    const url = `http://127.0.0.1:${payload.port}/`;
    const tried = {};
    for (const name of ["fetch", "WebSocket", "EventSource", "WebSocketStream", "localStorage"]) {
      tried[name] = typeof globalThis[name];
    }
    try { await globalThis.fetch(url); tried.fetchCall = "sent"; } catch (e) { tried.fetchCall = e.name; }
    try { new globalThis.WebSocket(`ws://127.0.0.1:${payload.port}/`); tried.wsCall = "opened"; } catch (e) { tried.wsCall = e.name; }
    // The stdio streams' socket class could open TCP connections in a shared host.
    const Stream = process.stdout.constructor;
    tried.stdoutConnect = typeof Stream.prototype.connect;
    try { new Stream().connect(payload.port, "127.0.0.1"); tried.streamCall = "connected"; } catch (e) { tried.streamCall = e.name; }
    return tried;
  });
  act("builtins", async () => {
    const out = {};
    for (const name of ["node:fs", "node:child_process", "node:net", "node:worker_threads", "fs"]) {
      try { await import(name); out[name] = "imported"; } catch (e) { out[name] = e.code ?? e.name; }
    }
    return out;
  });
  act("process", async () => {
    const out = {};
    const attempts = {
      binding: () => process.binding("fs"),
      _linkedBinding: () => process._linkedBinding("fs"),
      dlopen: () => process.dlopen({}, "/tmp/x.node"),
      getBuiltinModule: () => process.getBuiltinModule("node:child_process"),
      execve: () => process.execve("/bin/sh", ["sh", "-c", "echo pwned"]),
      loadEnvFile: () => process.loadEnvFile("/etc/passwd"),
      writeReport: () => process.report.writeReport("/tmp/covel-report.json"),
      getReport: () => process.report.getReport(),
      exit: () => process.exit(3),
      reallyExit: () => process.reallyExit(3),
      abort: () => process.abort(),
      kill: () => process.kill(1, "SIGTERM"),
      _kill: () => process._kill(1, 15),
      chdir: () => process.chdir("/"),
      umask: () => process.umask(0),
      setuid: () => process.setuid(0),
      _debugProcess: () => process._debugProcess(1),
      _getActiveHandles: () => process._getActiveHandles(),
      openStdin: () => process.openStdin(),
    };
    for (const [name, attempt] of Object.entries(attempts)) {
      try { attempt(); out[name] = "allowed"; } catch (e) { out[name] = e.code ?? e.name; }
    }
    return out;
  });
  act("pollute", async () => {
    // The realm is frozen (freeze.mjs): both patches throw; a new global of its own is allowed.
    const refused = {};
    try { Object.prototype.pollutedByProwler = "yes"; } catch (e) { refused.proto = e.constructor.name; }
    globalThis.prowlerSecret = "stolen";
    const parse = JSON.parse;
    try {
      JSON.parse = (text, ...rest) => { globalThis.prowlerSaw = text; return parse(text, ...rest); };
    } catch (e) { refused.json = e.constructor.name; }
    return { polluted: ({}).pollutedByProwler ?? null, refused, secret: globalThis.prowlerSecret };
  });
  act("exit", async () => {
    try { process.exit(3); } catch (e) { return { exit: e.code, pid: process.pid }; }
    return { exit: "allowed" };
  });
  act("pid", async () => ({ pid: process.pid }));
  act("spin", async () => { for (;;) {} });
  act("bomb", async () => {
    const kept = [];
    for (;;) kept.push(Buffer.alloc(64 * 1024 * 1024, 1));
  });
  act("huge-buffer", async () => {
    try { const b = Buffer.alloc(3 * 1024 * 1024 * 1024); return { allocated: b.length }; } catch (e) { return { refused: e.name }; }
  });
  act("big", async () => ({ text: "x".repeat(40 * 1024 * 1024) }));
  act("big-callback", async () => {
    try {
      await covel.http.fetch("https://example.com/upload", { method: "POST", body: "x".repeat(9 * 1024 * 1024) });
      return { sent: true };
    } catch (e) { return { refused: e.code }; }
  });
  act("flood", async () => {
    for (let i = 0; i < 200000; i += 1) console.log(`[bystander] forged line ${i}\n[host] plugin host ready`);
    process.stdout.write("\u001b[2K[bystander] raw forged line\n");
    return { flooded: true };
  });
}
"""

BYSTANDER = r"""
export default function register(covel) {
  covel.registerRpc("look", async () => ({
    polluted: ({}).pollutedByProwler ?? null,
    secret: globalThis.prowlerSecret ?? null,
    sawParse: globalThis.prowlerSaw ?? null,
    jsonParseNative: /\[native code\]/.test(Function.prototype.toString.call(JSON.parse)),
    pid: process.pid,
  }));
}
"""

PROWLER_ACTIONS = [
    "env", "network", "builtins", "process", "pollute", "exit", "pid", "spin", "bomb",
    "huge-buffer", "big", "big-callback", "flood",
]  # fmt: skip


def write_package(root: Path, package_id: str, actions: list[str], entry: str) -> Path:
    folder = root / package_id
    (folder / "server").mkdir(parents=True)
    frontmatter = {
        "id": package_id,
        "version": "1.0.0",
        "description": f"The {package_id} community package.",
        "permissions": {"http": [{"origin": "https://example.com", "methods": ["POST"]}]},
    }
    if actions:
        frontmatter["contributes"] = {"actions": actions}
    (folder / "PLUGIN.md").write_text(
        f"---\n{json.dumps(frontmatter, indent=1)}\n---\nA package.\n", encoding="utf-8"
    )
    (folder / "server" / "index.js").write_text(entry, encoding="utf-8")
    return folder


def index(folder: Path, source: str) -> Package:
    result = load_package(folder, host_version="0.1.0")
    assert result.ok, [str(e) for e in result.errors]
    return package_index(
        result=result,
        source=source,
        content_hash=package_content_hash(path=folder),
        host_version="0.1.0",
    )


def approve(package: Package, bob: Any) -> None:
    approval_request_sync(package=package)
    request = approval_current(package_key=package.package_id)
    assert request is not None and request.state == "pending"
    approval_decide(request_id=request.pk, decision="allow", actor=bob)


@pytest.fixture
def hub_secret(monkeypatch: pytest.MonkeyPatch) -> str:
    """A secret in the hub's own environment, as SECRET_KEY and model keys are in production."""
    monkeypatch.setenv("COVEL_TEST_MODEL_KEY", PLANTED)
    return PLANTED


@pytest.fixture
def community(tmp_path: Path, settings: Any, bob: Any, hub_secret: str) -> dict[str, Package]:
    settings.COVEL_USER_PLUGINS_DIR = tmp_path / "user"
    settings.COVEL_PLUGIN_RPC_TIMEOUT_MS = 1500
    prowler = index(write_package(tmp_path / "user", "prowler", PROWLER_ACTIONS, PROWLER), "user")
    bystander = index(write_package(tmp_path / "user", "bystander", ["look"], BYSTANDER), "user")
    assert prowler.trust == bystander.trust == Package.Trust.COMMUNITY
    approve(prowler, bob)
    approve(bystander, bob)
    index(REPO / "plugins" / "dice", "bundled")
    return {"prowler": prowler, "bystander": bystander}


@pytest.fixture
def session(community: dict[str, Package], alice: Any) -> Any:
    world = World.objects.create(
        world_id="den",
        name="Den",
        description="A den of thieves.",
        plugins=["prowler", "bystander", "dice"],
        owner=alice,
        characters=[{"id": "ana", "name": "Ana", "type": "player"}],
    )
    return session_create(owner=alice, world=world, character_id="ana")


def rpc(session: Any, action: str, payload: Any = None, plugin: str = "prowler") -> Any:
    return session_rpc(session=session, plugin=plugin, action=action, payload=payload)["value"]


def refused(session: Any, action: str, plugin: str = "prowler") -> SessionProblem:
    with pytest.raises(SessionProblem) as caught:
        rpc(session, action, plugin=plugin)
    return caught.value


def roll_dice(session: Any) -> Any:
    return session_rpc(session=session, plugin="dice", action="roll", command_text="/roll 2 d6")


def test_the_hubs_environment_never_reaches_community_code(session, hub_secret):
    assert os.environ["COVEL_TEST_MODEL_KEY"] == hub_secret
    env = rpc(session, "env")["env"]
    seen = json.dumps(env)
    assert hub_secret not in seen
    from django.conf import settings

    assert settings.SECRET_KEY not in seen
    assert set(env) <= {"LANG", "LC_ALL", "TZ", "TMPDIR", "NODE_OPTIONS"}, env
    assert env["NODE_OPTIONS"] == ""
    assert "covel-host-" in env["TMPDIR"]  # a temp dir of its own


class CountingServer:
    """A loopback TCP server that counts every connection that reaches it."""

    def __init__(self) -> None:
        self.connections = 0
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))  # a free port: another test run may be beside this one
        self.port = self.sock.getsockname()[1]
        self.sock.listen(16)
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


def test_no_network_global_reaches_a_loopback_server(session):
    server = CountingServer()
    try:
        # The server is reachable from here: a plain connection counts.
        socket.create_connection(("127.0.0.1", server.port), 2).close()
        deadline = time.monotonic() + 2
        while server.connections < 1 and time.monotonic() < deadline:
            time.sleep(0.01)
        assert server.connections == 1
        tried = rpc(session, "network", {"port": server.port})
        time.sleep(0.3)
        assert server.connections == 1, "a connection from plugin code arrived"
    finally:
        server.close()
    for name in ("fetch", "WebSocket", "EventSource", "WebSocketStream", "localStorage"):
        assert tried[name] == "undefined", (name, tried)
    assert tried["fetchCall"] == tried["wsCall"] == "TypeError"
    assert tried["stdoutConnect"] == "undefined"
    assert tried["streamCall"] == "TypeError"


def test_community_hosts_run_in_an_empty_network_namespace_here(session):
    if network_namespace_prefix() is None:
        if os.environ.get("CI") == "true" or os.geteuid() == 0:
            pytest.fail("this machine should offer a network namespace (root or user namespaces)")
        pytest.skip("no network namespace here: the layer is absent (docs/plugin-host.md)")
    rpc(session, "pid")
    manifest = _manifest("prowler")
    host = host_for(manifest)
    assert host.command()[0].endswith("unshare") and "--net" in host.command()
    # The socket filter refuses even the interface lookup; the namespace alone shows none.
    assert host.info["sockets"] == "refused" and host.info["interfaces"] is None
    alone = NodeHost(
        trust="community", label="prowler", socket_filter=False, require_os_layer=False
    )
    try:
        alone.start()
        assert alone.info["interfaces"] == [] and alone.info["sockets"] == "allowed"
    finally:
        alone.stop()


def test_built_in_modules_stay_refused(session):
    out = rpc(session, "builtins")
    assert out == {
        "node:fs": "plugin_import_refused",
        "node:child_process": "plugin_import_refused",
        "node:net": "plugin_import_refused",
        "node:worker_threads": "plugin_import_refused",
        "fs": "plugin_import_refused",
    }


def test_process_escapes_are_unavailable(session):
    out = rpc(session, "process")
    assert out.pop("binding") == out.pop("_linkedBinding") == "plugin_import_refused"
    assert out.pop("dlopen") == out.pop("getBuiltinModule") == "plugin_import_refused"
    assert out == dict.fromkeys(out, "host_capability_refused"), out
    assert not Path("/tmp/covel-report.json").exists()


def test_globals_and_prototypes_of_one_package_are_invisible_to_another(session):
    assert rpc(session, "pollute") == {
        "polluted": None,
        "refused": {"proto": "TypeError", "json": "TypeError"},
        "secret": "stolen",
    }
    look = rpc(session, "look", plugin="bystander")
    assert look["polluted"] is None and look["secret"] is None and look["sawParse"] is None
    assert look["jsonParseNative"] is True
    assert look["pid"] != rpc(session, "pid")["pid"]
    # The bundled dice run in a third process, untouched.
    assert roll_dice(session)["value"] is not None


def test_process_exit_is_refused_and_the_host_stays_up(session):
    first = rpc(session, "exit")
    assert first["exit"] == "host_capability_refused"
    assert rpc(session, "pid")["pid"] == first["pid"]


def test_an_endless_loop_fails_its_call_and_others_keep_running(session):
    from pluginhost.callbacks import InMemoryCallbacks
    from pluginhost.services import plugin_rpc_call

    before = rpc(session, "pid")["pid"]
    bystander = _manifest("bystander")
    look_before = rpc(session, "look", plugin="bystander")["pid"]
    others: dict[str, Any] = {}

    def meanwhile() -> None:
        # While prowler spins, the other community package and bundled code answer at once.
        time.sleep(0.4)
        started = time.monotonic()
        others["look"] = plugin_rpc_call(
            manifest=bystander,
            action="look",
            payload=None,
            callbacks=InMemoryCallbacks(),
            timeout=2,
        )
        others["seconds"] = time.monotonic() - started

    thread = threading.Thread(target=meanwhile)
    thread.start()
    started = time.monotonic()
    problem = refused(session, "spin")
    elapsed = time.monotonic() - started
    thread.join(10)
    assert problem.code == "plugin_timeout"
    assert elapsed < 6
    assert others["look"]["pid"] == look_before
    assert others["seconds"] < 1.0
    # Killed and restarted: the next call works in a new process.
    assert rpc(session, "pid")["pid"] != before
    failed = SessionEvent.objects.filter(session=session, type="rpc.failed").last()
    assert failed.payload["code"] == "plugin_timeout"


def test_a_memory_bomb_stops_only_its_own_host(session, settings):
    before = rpc(session, "pid")["pid"]
    look = rpc(session, "look", plugin="bystander")["pid"]
    problem = refused(session, "bomb")
    assert problem.code == "host_memory_exceeded", problem
    assert "memory" in str(problem)
    host = host_for(_manifest("prowler"))
    assert rpc(session, "pid")["pid"] != before
    # The bystander's process never noticed.
    assert rpc(session, "look", plugin="bystander")["pid"] == look
    # Buffers count: the limit is on the whole process, far below the 3 GB that used to be reached.
    limit_mb = host.memory_mb + 128
    assert limit_mb < 1024


def test_a_single_huge_allocation_is_refused_inside_the_host(session):
    pid = rpc(session, "pid")["pid"]
    assert rpc(session, "huge-buffer") == {"refused": "RangeError"}
    assert rpc(session, "pid")["pid"] == pid


def test_a_40_mb_result_is_refused_not_stored(session):
    problem = refused(session, "big")
    assert problem.code == "result_too_large"
    assert "at most 8388608" in str(problem)
    event = SessionEvent.objects.filter(session=session, type="rpc.failed").last()
    assert len(json.dumps(event.payload)) < 2000
    assert not PluginData.objects.filter(session=session).exists()
    assert rpc(session, "pid")["pid"]  # the host is still up


def test_an_oversized_callback_never_leaves_the_host(session):
    assert rpc(session, "big-callback") == {"refused": "callback_too_large"}


def test_log_flooding_is_rate_limited_and_cannot_forge_lines(session, caplog):
    caplog.set_level(logging.INFO, logger="covel.plugins")
    started = time.monotonic()
    assert rpc(session, "flood") == {"flooded": True}
    time.sleep(0.5)
    assert time.monotonic() - started < 10
    records = [r for r in caplog.records if r.name.startswith("covel.plugins")]
    lines = [r.getMessage() for r in records]
    assert len(lines) < 2000, len(lines)
    assert lines and all(line.startswith("[prowler") for line in lines), lines[:3]
    assert all("\n" not in line and "\x1b" not in line for line in lines)
    assert any("log lines dropped" in line for line in lines) or len(lines) <= 401
    # The forged text is there, but inside prowler's own line.
    assert any("[prowler] [bystander] forged line 0\\n[host]" in line for line in lines)


def test_an_unapproved_community_package_is_never_imported(tmp_path, settings, caplog):
    settings.COVEL_USER_PLUGINS_DIR = tmp_path / "user"
    entry = 'console.log("EAGER-RAN");\nexport default function register(covel) {}\n'
    folder = write_package(tmp_path / "user", "eager", [], entry)
    package = index(folder, "user")
    approval_request_sync(package=package)
    assert approval_current(package_key="eager").state == "pending"
    manifest = load_package(folder, host_version="0.1.0").manifest
    caplog.set_level(logging.INFO, logger="covel.plugins")
    with pytest.raises(PluginLoadError) as caught:
        plugin_load(manifest=manifest)
    assert caught.value.code == "plugin_not_approved"
    assert "eager@1.0.0" in caught.value.message
    assert not host_for(manifest).running  # no process was even started
    assert "EAGER-RAN" not in caplog.text


def test_plugin_extract_says_it_runs_the_authors_code(tmp_path, settings):
    folder = write_package(tmp_path / "user", "eager", [], "export default function r() {}\n")
    err = io.StringIO()
    out = io.StringIO()
    call_command("plugin_extract", str(folder), "--check", stdout=out, stderr=err)
    assert "Declarations are in sync." in out.getvalue()
    assert "runs the author's code" in err.getvalue() and "contained host" in err.getvalue()


def test_the_permission_flags_deny_files_children_and_network(tmp_path, community):
    """Node's permission model is a wall of its own: the host's exact flags, with a probe in
    place of host.mjs inside the package folder, cannot read outside, write, spawn or connect."""
    import subprocess

    manifest = _manifest("prowler")
    host = host_for(manifest)
    plugin_load(manifest=manifest)
    # The host reads the approved copy of the package (approvals/store.py), not its folder.
    folder = Path(load_request(manifest)["root"])
    probe = folder / "probe.mjs"
    probe.write_text(
        """
import fs from "node:fs";
import cp from "node:child_process";
import net from "node:net";
const out = {};
const tryIt = (name, fn) => { try { fn(); out[name] = "allowed"; } catch (e) { out[name] = e.code; } };
tryIt("readOwn", () => fs.readFileSync(new URL("./server/index.js", import.meta.url)));
tryIt("readPasswd", () => fs.readFileSync("/etc/passwd"));
tryIt("readHubSettings", () => fs.readFileSync(process.argv[2]));
tryIt("writeOwn", () => fs.writeFileSync(new URL("./x.txt", import.meta.url), "x"));
tryIt("spawn", () => cp.execFileSync("/bin/true"));
const socket = net.connect(Number(process.argv[3]), "127.0.0.1");
socket.on("connect", () => { out.connect = "connected"; finish(); });
socket.on("error", (e) => { out.connect = e.code; finish(); });
function finish() { console.log(JSON.stringify(out)); }
""",
        encoding="utf-8",
    )
    argv = [*host.command()[:-1], str(probe), str(REPO / "config" / "settings.py"), "9"]
    done = subprocess.run(argv, capture_output=True, text=True, timeout=30, env={"PATH": ""})
    out = json.loads(done.stdout.strip().splitlines()[-1])
    assert out["readOwn"] == "allowed"
    assert out["readPasswd"] == out["readHubSettings"] == "ERR_ACCESS_DENIED"
    assert out["writeOwn"] == out["spawn"] == "ERR_ACCESS_DENIED"
    # The command runs through sockwall.py: the socket filter refuses socket() itself.
    assert out["connect"] == "EPERM"


def test_idle_community_hosts_stop_and_come_back(session):
    rpc(session, "pid")
    host = host_for(_manifest("prowler"))
    assert host.running
    assert host_pool().reap(now_idle=0.0) >= 1
    assert not host.running
    assert rpc(session, "pid")["pid"]  # started again on demand
    assert host_for(_manifest("prowler")) is host and host.running


def _manifest(package_id: str) -> Any:
    from sessions.selectors import installed_manifests

    return installed_manifests()[package_id]
