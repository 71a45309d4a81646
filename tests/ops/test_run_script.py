"""scripts/run.sh starts web (uvicorn), worker and beat, and stops all of them within 10 s on
SIGTERM or Ctrl-C: no process left behind, beat's lock released, one beat on the next start."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import time
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
# Its servers are its own (or the embedded default): the same in both passes of scripts/test.sh.
pytestmark = [pytest.mark.slow, pytest.mark.first_pass_only]


def descendants(pid: int) -> dict[int, str]:
    """Every living process below pid, with its command line."""
    children: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        fields = stat[stat.rindex(")") + 2 :].split()
        if fields[0] == "Z":
            continue
        children.setdefault(int(fields[1]), []).append(int(entry.name))
    found: dict[int, str] = {}
    todo = [pid]
    while todo:
        for child in children.get(todo.pop(), []):
            try:
                found[child] = (
                    (Path("/proc") / str(child) / "cmdline").read_bytes().replace(b"\0", b" ")
                ).decode()
            except OSError:
                continue
            todo.append(child)
    return found


def alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return state[state.rindex(")") + 2] != "Z"


def _default_sigint() -> None:
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def start(var: Path, port: int) -> subprocess.Popen:
    env = {
        **os.environ,
        "COVEL_SKIP_INSTALL": "1",
        "COVEL_VAR_DIR": str(var),
        "HUB_ADDR": f"127.0.0.1:{port}",
    }
    for name in ("DATABASE_URL", "REDIS_URL"):
        env.pop(name, None)
    proc = subprocess.Popen(
        ["bash", str(REPO / "scripts" / "run.sh")],
        cwd=REPO,
        env=env,
        stdout=(var / "run.log").open("ab"),
        stderr=subprocess.STDOUT,
        # Ctrl-C as in a terminal, however the suite was started: a shell started in the
        # background ignores SIGINT, its children inherit that, and bash cannot trap a signal
        # ignored on entry (the test would then time out, run.sh never hearing Ctrl-C).
        preexec_fn=_default_sigint,
    )
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        tree = " | ".join(descendants(proc.pid).values())
        listening = True
        try:
            socket.create_connection(("127.0.0.1", port), 0.2).close()
        except OSError:
            listening = False
        if listening and "beat" in tree and " worker" in tree and (var / "celerybeat.pid").exists():
            return proc
        assert proc.poll() is None, (var / "run.log").read_text()[-3000:]
        time.sleep(0.2)
    raise AssertionError((var / "run.log").read_text()[-3000:])


def stop_and_check(proc: subprocess.Popen, var: Path, how: int) -> None:
    tree = descendants(proc.pid)
    assert any("uvicorn" in cmd for cmd in tree.values())
    started = time.monotonic()
    proc.send_signal(how)
    proc.wait(15)
    assert time.monotonic() - started < 10
    time.sleep(0.3)
    left = {pid: cmd for pid, cmd in tree.items() if alive(pid)}
    assert not left, left
    assert not (var / "celerybeat.pid").exists()  # beat's lock is released


def beats() -> list[int]:
    return [
        int(p.name)
        for p in Path("/proc").iterdir()
        if p.name.isdigit() and _beat_cmd(p) and alive(int(p.name))
    ]


def _beat_cmd(entry: Path) -> bool:
    try:
        return (
            b"covel-run-test" in (entry / "cmdline").read_bytes()
            and b"beat" in (entry / "cmdline").read_bytes()
        )
    except OSError:
        return False


def test_run_sh_stops_web_worker_and_beat_cleanly_and_starts_one_beat_again(tmp_path):
    var = tmp_path / "covel-run-test"
    var.mkdir()
    port = 8731
    proc = start(var, port)
    # While beat runs, its pid file refuses a second one.
    second = subprocess.run(
        [
            str(REPO / ".venv" / "bin" / "celery"),
            "-A",
            "config",
            "beat",
            "--pidfile",
            str(var / "celerybeat.pid"),
            "--schedule",
            str(var / "other-schedule"),
        ],
        cwd=REPO,
        env={**os.environ, "COVEL_VAR_DIR": str(var)},
        capture_output=True,
        timeout=60,
    )
    assert second.returncode != 0
    assert b"already exists" in second.stderr + second.stdout
    assert len(beats()) == 1
    # Beat keeps its schedule under the var folder, not in the checkout.
    assert any(p.name.startswith("celerybeat-schedule") for p in var.iterdir())
    stop_and_check(proc, var, signal.SIGTERM)

    proc = start(var, port)  # the next start: exactly one beat again
    assert len(beats()) == 1
    stop_and_check(proc, var, signal.SIGINT)  # Ctrl-C
    assert beats() == []
