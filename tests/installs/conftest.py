"""Installs fixtures: plugin folders in tmp, ZIPs built in the test, and a git repository served
over loopback HTTP by `git http-backend` (smart HTTP, so a shallow fetch of one commit works).

Personas (tests/conftest.py): bob is staff and installs; alice is a player (403); the anonymous
client gets 401.
"""

from __future__ import annotations

import os
import subprocess
import threading
from collections.abc import Iterator
from pathlib import Path
from wsgiref.simple_server import WSGIRequestHandler, WSGIServer, make_server

import pytest
from install_archives import make_zip, plugin_files  # noqa: F401


@pytest.fixture
def hub_dirs(tmp_path, settings) -> Path:
    bundled = tmp_path / "bundled"
    (bundled / "dice").mkdir(parents=True)
    (bundled / "dice" / "PLUGIN.md").write_text(
        "---\nid: dice\nversion: 1.0.0\ndescription: d\n---\nx\n"
    )
    settings.COVEL_BUNDLED_PLUGINS_DIR = bundled
    settings.COVEL_USER_PLUGINS_DIR = tmp_path / "user"
    settings.VAR_DIR = tmp_path / "var"
    settings.VAR_DIR.mkdir()
    settings.COVEL_INSTALLED_PLUGINS_DIR = tmp_path / "installed"
    settings.COVEL_COMMUNITY_PLUGIN_DIRS = [tmp_path / "installed"]
    # A collection's worlds go here (installs/worlds.py), the only world folder of these tests.
    settings.COVEL_INSTALLED_WORLDS_DIR = tmp_path / "installed-worlds"
    settings.COVEL_WORLD_DIRS = [tmp_path / "installed-worlds"]
    return tmp_path / "installed"


def git(*args: str, cwd: Path) -> str:
    env = {
        **os.environ,
        "GIT_AUTHOR_NAME": "t",
        "GIT_AUTHOR_EMAIL": "t@t",
        "GIT_COMMITTER_NAME": "t",
        "GIT_COMMITTER_EMAIL": "t@t",
        "GIT_CONFIG_GLOBAL": os.devnull,
    }
    return subprocess.run(
        ["git", *args], cwd=cwd, env=env, check=True, capture_output=True, text=True
    ).stdout.strip()


class GitServer:
    """Bare repositories under root, served by git http-backend on 127.0.0.1."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.work: dict[str, Path] = {}
        self.server = make_server("127.0.0.1", 0, self._app, WSGIServer, _Quiet)
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()
        self.url = f"http://127.0.0.1:{self.server.server_port}"

    def _app(self, environ, start_response):  # noqa: ANN001, ANN202
        env = {
            "GIT_PROJECT_ROOT": str(self.root),
            "GIT_HTTP_EXPORT_ALL": "1",
            "PATH_INFO": environ.get("PATH_INFO", ""),
            "QUERY_STRING": environ.get("QUERY_STRING", ""),
            "REQUEST_METHOD": environ["REQUEST_METHOD"],
            "CONTENT_TYPE": environ.get("CONTENT_TYPE", ""),
            "CONTENT_LENGTH": environ.get("CONTENT_LENGTH", ""),
            "GIT_PROTOCOL": environ.get("HTTP_GIT_PROTOCOL", ""),
            "REMOTE_ADDR": "127.0.0.1",
            "PATH": os.environ["PATH"],
            "GIT_CONFIG_GLOBAL": os.devnull,
        }
        length = int(environ.get("CONTENT_LENGTH") or 0)
        body = environ["wsgi.input"].read(length) if length else b""
        done = subprocess.run(["git", "http-backend"], env=env, input=body, capture_output=True)
        head, _, payload = done.stdout.partition(b"\r\n\r\n")
        status = "200 OK"
        headers = []
        for line in head.decode().split("\r\n"):
            name, _, value = line.partition(": ")
            if name.lower() == "status":
                status = value
            elif name:
                headers.append((name, value))
        start_response(status, headers)
        return [payload]

    def repo(self, name: str) -> Path:
        """A working copy whose pushes land in the served bare repository <name>.git."""
        bare = self.root / f"{name}.git"
        git("init", "--quiet", "--bare", "-b", "main", str(bare), cwd=self.root)
        git("config", "http.receivepack", "false", cwd=bare)
        git("config", "uploadpack.allowReachableSHA1InWant", "true", cwd=bare)
        work = self.root / f"{name}-work"
        git("init", "--quiet", "-b", "main", str(work), cwd=self.root)
        git("remote", "add", "origin", str(bare), cwd=work)
        self.work[name] = work
        return work

    def commit(
        self,
        name: str,
        files: dict[str, bytes],
        message: str = "change",
        *,
        remove: tuple[str, ...] = (),
    ) -> str:
        work = self.work[name]
        for path, content in files.items():
            target = work / path
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(content)
        for path in remove:
            (work / path).unlink()
        git("add", "-A", cwd=work)
        git("commit", "--quiet", "-m", message, cwd=work)
        git("push", "--quiet", "origin", "HEAD:main", cwd=work)
        return git("rev-parse", "HEAD", cwd=work)

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


class _Quiet(WSGIRequestHandler):
    def log_message(self, *args) -> None:  # noqa: ANN002
        pass


@pytest.fixture
def git_server(tmp_path) -> Iterator[GitServer]:
    root = tmp_path / "served"
    root.mkdir()
    server = GitServer(root)
    yield server
    server.close()
