"""The host side of the source plugin protocol (protocol 1): one Ingest call on a fresh process.

Plain Python, no Django. The host starts the plugin's binary with no arguments, writes one
JSON request line on its stdin and closes it; the binary answers with one JSON line on stdout
and exits. The whole exchange is bounded by the job's timeout: past it, the binary's process
group is killed. stdout carries protocol lines only; the binary logs on stderr.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

PROTOCOL = 1
REQUEST_ID = 1
# What the host keeps of a binary's stderr, for the run's error text.
STDERR_TAIL = 2000
# Only these variables reach the plugin: never the hub's secrets (database URL, keys).
_PASSED_ENV = ("PATH", "LANG", "LC_ALL", "LC_CTYPE", "TZ", "TMPDIR", "SYSTEMROOT")


@dataclass(frozen=True)
class IngestOutcome:
    outcome: str  # "succeeded", "failed" or "timed_out"
    result: Any = None
    error: str = ""
    stderr: str = ""


def ingest_request(*, job: str, data_dir: str, config: Mapping[str, Any]) -> dict[str, Any]:
    return {
        "id": REQUEST_ID,
        "method": "Ingest",
        "params": {"job": job, "protocol": PROTOCOL, "data_dir": data_dir, "config": dict(config)},
    }


def plugin_env(*, plugin_id: str, data_dir: str) -> dict[str, str]:
    env = {name: os.environ[name] for name in _PASSED_ENV if name in os.environ}
    env.update(
        {
            "COVEL_PROTOCOL": str(PROTOCOL),
            "COVEL_PLUGIN_ID": plugin_id,
            "COVEL_SOURCE_DATA_DIR": data_dir,
            "HOME": data_dir,
            "PYTHONUNBUFFERED": "1",
        }
    )
    return env


def _tail(data: bytes) -> str:
    text = data.decode("utf-8", "replace").strip()
    return text[-STDERR_TAIL:]


def _kill_group(process: subprocess.Popen[bytes]) -> None:
    try:
        os.killpg(process.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        process.kill()


def call_ingest(
    *,
    binary: Path,
    plugin_id: str,
    job: str,
    data_dir: Path,
    config: Mapping[str, Any],
    timeout_s: float,
) -> IngestOutcome:
    """Run the binary once for an Ingest of job; never raises for the plugin's faults."""
    if not binary.is_file():
        return IngestOutcome("failed", error=f"the plugin has no binary at {binary}")
    if not os.access(binary, os.X_OK):
        return IngestOutcome("failed", error=f"the plugin's binary {binary} is not executable")
    data_dir.mkdir(parents=True, exist_ok=True)
    request = ingest_request(job=job, data_dir=str(data_dir), config=config)
    try:
        process = subprocess.Popen(  # noqa: S603 - the binary of an installed plugin, no shell
            [str(binary)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            cwd=str(binary.parent),
            env=plugin_env(plugin_id=plugin_id, data_dir=str(data_dir)),
            start_new_session=True,  # its own process group, so a timeout kills its children too
        )
    except OSError as exc:
        return IngestOutcome("failed", error=f"could not start {binary}: {exc}")
    payload = (json.dumps(request) + "\n").encode()
    try:
        stdout, stderr = process.communicate(payload, timeout=timeout_s)
    except subprocess.TimeoutExpired:
        _kill_group(process)
        stdout, stderr = process.communicate()
        return IngestOutcome(
            "timed_out",
            error=f"Ingest of job {job!r} did not answer within {timeout_s:g}s; the binary was killed",
            stderr=_tail(stderr),
        )
    return _read_reply(stdout, stderr, process.returncode, job)


def _read_reply(stdout: bytes, stderr: bytes, returncode: int, job: str) -> IngestOutcome:
    err = _tail(stderr)
    for number, line in enumerate(stdout.decode("utf-8", "replace").splitlines(), start=1):
        if not line.strip():
            continue
        try:
            reply = json.loads(line)
        except ValueError:
            return IngestOutcome(
                "failed",
                error=f"protocol error: stdout line {number} is not JSON: {line[:200]!r}",
                stderr=err,
            )
        if not isinstance(reply, dict) or reply.get("id") != REQUEST_ID:
            continue  # not the answer to our request
        if "error" in reply:
            detail = reply["error"]
            if isinstance(detail, dict):
                code = detail.get("code", "error")
                message = detail.get("message", "")
                text = f"{code}: {message}" if message else str(code)
            else:
                text = str(detail)
            return IngestOutcome(
                "failed", error=f"Ingest of job {job!r} failed: {text}", stderr=err
            )
        if "result" in reply:
            return IngestOutcome("succeeded", result=reply["result"], stderr=err)
        return IngestOutcome(
            "failed", error="protocol error: the reply has neither result nor error", stderr=err
        )
    return IngestOutcome(
        "failed",
        error=f"the binary exited with status {returncode} without answering Ingest"
        + (f": {err.splitlines()[-1]}" if err else ""),
        stderr=err,
    )
