"""Throw-away Redis and PostgreSQL servers the outage tests start, stop and restart.

Never the machine's shared servers (5432, 6379): other people's tests use them. Each server here
listens on a free loopback port and keeps its data in a temporary folder removed at the end.
PostgreSQL refuses to run as root, so under root its cluster belongs to the `postgres` user and
its commands run through `runuser`.
"""

from __future__ import annotations

import glob
import os
import shutil
import socket
import subprocess
import tempfile
import time
from pathlib import Path

import pytest

IN_CI = os.environ.get("CI") == "true"


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def missing(what: str) -> None:
    """Skip on a laptop without the binaries; fail in CI, whose install must provide them."""
    if IN_CI:
        pytest.fail(f"{what} is required in CI (scripts/install.sh installs it)")
    pytest.skip(f"{what} is not installed here")


def wait_listening(port: int, timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            socket.create_connection(("127.0.0.1", port), 0.2).close()
            return
        except OSError:
            time.sleep(0.05)
    raise AssertionError(f"nothing listens on port {port}")


class PrivateRedis:
    def __init__(self) -> None:
        self.binary = shutil.which("redis-server")
        if self.binary is None:
            missing("redis-server")
        self.port = free_port()
        self.folder = Path(tempfile.mkdtemp(prefix="covel-redis-"))
        self.proc: subprocess.Popen[bytes] | None = None
        self.start()

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def start(self) -> None:
        self.proc = subprocess.Popen(
            [self.binary, "--port", str(self.port), "--bind", "127.0.0.1", "--save", "",
             "--appendonly", "no", "--dir", str(self.folder)],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        )  # fmt: skip
        wait_listening(self.port)

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(10)

    def restart(self, down_for: float = 1.5) -> None:
        self.stop()
        time.sleep(down_for)
        self.start()

    def close(self) -> None:
        self.stop()
        shutil.rmtree(self.folder, ignore_errors=True)


class PrivatePostgres:
    def __init__(self) -> None:
        found = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"))
        if not found:
            missing("PostgreSQL's server binaries (/usr/lib/postgresql/*/bin)")
        self.bin = Path(found[-1]).parent
        self.port = free_port()
        self.folder = Path(tempfile.mkdtemp(prefix="covel-pg-"))
        self.as_root = os.geteuid() == 0
        if self.as_root:
            shutil.chown(self.folder, "postgres", "postgres")
        self.data = self.folder / "data"
        self._run("initdb", "-D", str(self.data), "-U", "postgres", "--auth=trust", "-E", "UTF8")
        self.start()

    @property
    def url(self) -> str:
        return f"postgres://postgres@127.0.0.1:{self.port}/postgres"

    def _run(self, tool: str, *args: str) -> None:
        command = [str(self.bin / tool), *args]
        if self.as_root:
            command = ["runuser", "-u", "postgres", "--", *command]
        subprocess.run(command, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)

    def _ctl(self, action: str, *args: str) -> None:
        options = f"-p {self.port} -c listen_addresses=127.0.0.1 -k {self.folder} -c fsync=off"
        self._run("pg_ctl", action, "-D", str(self.data), "-w", "-l",
                  str(self.folder / "log"), "-o", options, *args)  # fmt: skip

    def start(self) -> None:
        self._ctl("start")
        wait_listening(self.port)

    def stop(self) -> None:
        self._ctl("stop", "-m", "fast")

    def restart(self, down_for: float = 1.0) -> None:
        self.stop()
        time.sleep(down_for)
        self.start()

    def close(self) -> None:
        try:
            self._ctl("stop", "-m", "immediate")
        except subprocess.CalledProcessError:
            pass
        shutil.rmtree(self.folder, ignore_errors=True)
