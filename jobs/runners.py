"""What a job runs, and the checks around it.

Runners are a registry from a runner kind (RuntimeJob.runner) to a callable
`runner(job, ctx) -> RunResult | None`. The jobs app sits below sessions and imports none of it,
so sessions registers at start-up (sessions/apps.py, AppConfig.ready): the "runtime" runner
(sessions.background.run_detached, a background turn) with runner_register, and the check of
the session a job belongs to with session_check_register; a kind or check nobody registered
raises RunnerNotFound. settings.COVEL_JOB_RUNNERS may add kinds by dotted path, imported on
first use (the job tests' runners, a deployment's own).

A runner never writes to the session itself: it returns a RunResult whose `commit` callable the
job calls inside its commit transaction, so a job that times out, is cancelled or goes stale
saves nothing.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cache
from typing import TYPE_CHECKING, Any

from django.conf import settings
from django.utils.module_loading import import_string

from jobs.errors import JobStopped, RunnerNotFound

if TYPE_CHECKING:
    from jobs.models import RuntimeJob

DEFAULT_RUNNERS: dict[str, str] = {
    # Does nothing: the benchmark's trivial job and a smoke check of a deployment's workers.
    "noop": "jobs.runners.run_noop",
}


@dataclass
class RunResult:
    """What a runner hands back: a JSON result kept on the job row, and the writes to commit."""

    result: Any = None
    # Called inside the job's commit transaction; raising rolls the writes back and fails the job.
    commit: Callable[[], None] | None = None


@dataclass
class JobContext:
    """Handed to a runner: when it must stop, and a sleep that wakes up when it must."""

    job_id: str
    deadline: float | None  # time.monotonic() value; None when no execution limit applies
    stop_event: threading.Event = field(default_factory=threading.Event)
    stop_reason: str = ""

    def remaining_ms(self) -> float | None:
        if self.deadline is None:
            return None
        return max(0.0, (self.deadline - time.monotonic()) * 1000)

    def should_stop(self) -> bool:
        if self.stop_event.is_set():
            return True
        return self.deadline is not None and time.monotonic() >= self.deadline

    def check(self) -> None:
        """Raise JobStopped when the job must stop (call it between steps of long work)."""
        if self.should_stop():
            raise JobStopped(self.stop_reason or "execution deadline reached")

    def sleep(self, seconds: float) -> None:
        """Sleep, but stop early (raising JobStopped) when the job is stopped."""
        end = time.monotonic() + seconds
        while True:
            self.check()
            left = end - time.monotonic()
            if left <= 0:
                return
            wait = left if self.deadline is None else min(left, self.deadline - time.monotonic())
            self.stop_event.wait(max(0.0, wait))


Runner = Callable[["RuntimeJob", JobContext], "RunResult | None"]
SessionCheck = Callable[..., "tuple[Staleness | None, bool]"]
_registered: dict[str, Runner] = {}
_session_check: list[SessionCheck] = []


def runner_register(kind: str, runner: Runner) -> None:
    """Register the runner of a kind (an app above jobs, in its AppConfig.ready())."""
    _registered[kind] = runner


def session_check_register(check: SessionCheck) -> None:
    """Register `check(job, *, lock_session) -> (Staleness | None, turn_locked)` (sessions)."""
    _session_check[:] = [check]


def runner_registry() -> dict[str, str]:
    """The kinds added by dotted path: the built-in ones and settings.COVEL_JOB_RUNNERS."""
    return {**DEFAULT_RUNNERS, **getattr(settings, "COVEL_JOB_RUNNERS", {})}


def resolve_runner(kind: str) -> Callable[..., RunResult | None]:
    if kind in _registered:
        return _registered[kind]
    path = runner_registry().get(kind)
    if path is None:
        known = ", ".join(sorted({*_registered, *runner_registry()}))
        raise RunnerNotFound(f"no job runner is registered for kind {kind!r} (known: {known})")
    return _import(path)


@cache
def _import(path: str) -> Callable[..., RunResult | None]:
    try:
        return import_string(path)
    except ImportError as exc:
        raise RunnerNotFound(f"job runner {path!r} cannot be imported: {exc}") from exc


def run_noop(job: RuntimeJob, ctx: JobContext) -> RunResult:
    return RunResult(result=None)


# --- Staleness -----------------------------------------------------------------------------


@dataclass(frozen=True)
class Staleness:
    reason: str  # a JobReason value
    message: str


def staleness_check(job: RuntimeJob) -> Staleness | None:
    """Why the job must not run or commit any more, or None.

    Checked after the claim and again in the commit (commit_check): the session ended, the
    package's approval was revoked, or its installed version is not the one the job was
    created for. The session's side of it is the registered session check's.
    """
    stale, _turn_locked = session_check()(job, lock_session=False)
    return stale


def commit_check(job: RuntimeJob) -> tuple[Staleness | None, bool]:
    """The commit's check: why the job is stale (or None), and whether a turn, manual run or
    RPC action holds the session's turn lock right now.

    The check takes the session row lock first (PostgreSQL: FOR NO KEY UPDATE; SQLite: the
    commit transaction's write lock), so the session cannot end between this check and the
    writes, and nobody can take the turn lock meanwhile: a job that finds the turn lock free
    commits before the next action starts; one that finds it taken waits.
    """
    return session_check()(job, lock_session=True)


def session_check() -> SessionCheck:
    """The check that knows the session a job belongs to (registered by sessions/apps.py):
    `check(job, *, lock_session) -> (Staleness | None, turn_locked)`."""
    if not _session_check:
        raise RunnerNotFound(
            "no session check is registered: sessions registers it in its AppConfig.ready() "
            "(jobs.runners.session_check_register)"
        )
    return _session_check[0]


def package_version(package_id: str) -> str:
    """The installed version of a package ('' when it is not installed)."""
    from catalogue.models import Package

    found = Package.objects.filter(package_id=package_id).values_list("version", flat=True)
    return found.first() or ""


def staleness_reason(job: RuntimeJob) -> str | None:
    """The staleness hook: the reason code when the job is stale, else None."""
    found = staleness_check(job)
    return None if found is None else found.reason
