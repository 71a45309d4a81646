"""Helpers of the job tests (a module of its own: `conftest` is not a unique module name)."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest

# Every worker started in this process, so a failing wait can show what the workers said.
STARTED_WORKERS: list[Any] = []


def wait_for_state(job: Any, states: set[str] | str, *, timeout: float = 15.0) -> Any:
    """Poll the row until it reaches one of the states (fails with the row's story if not)."""
    wanted = {states} if isinstance(states, str) else set(states)
    deadline = time.monotonic() + timeout
    while True:
        job.refresh_from_db()
        if job.state in wanted:
            return job
        if time.monotonic() > deadline:
            logs = "\n".join(f"--- {w.name}:\n{w.text()[-3000:]}" for w in STARTED_WORKERS)
            pytest.fail(
                f"job {job.job_id} stayed {job.state} (reason {job.reason!r}, error {job.error!r}); "
                f"wanted {sorted(wanted)}\n{logs}"
            )
        time.sleep(0.02)


def read_lines(path: Path) -> list[str]:
    return path.read_text(encoding="utf-8").splitlines() if path.exists() else []


def revoke(package_id: str, actor: Any) -> None:
    from approvals.selectors import approval_current
    from approvals.services import approval_decide

    request = approval_current(package_key=package_id)
    approval_decide(request_id=request.pk, decision="revoke", actor=actor, note="tests")


def client_for(user: Any = None) -> Any:
    """A test client, logged in as user when one is given."""
    from django.test import Client

    client = Client()
    if user is not None:
        client.force_login(user)
    return client


def force_state(job: Any, state: str) -> Any:
    """Put the row in a state directly (bypassing the state machine) and re-read it."""
    type(job).objects.filter(pk=job.pk).update(state=state)
    job.refresh_from_db()
    return job
