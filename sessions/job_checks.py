"""The session's side of a job's staleness check (settings.COVEL_JOB_SESSION_CHECK).

The jobs app asks, after a claim and again inside the commit, whether the job's session ended,
its package's approval was revoked or its version changed, and whether an action holds the
session's turn lock. The answer needs the session row, so it lives here, above jobs.
"""

from __future__ import annotations

from typing import Any

from django.db import connection
from django.utils import timezone

from approvals.selectors import approval_in_force, package_usability
from catalogue.models import Package
from core.sql import Table
from jobs.models import JobReason, RuntimeJob
from jobs.runners import Staleness
from sessions.models import Session


def job_session_check(job: RuntimeJob, *, lock_session: bool) -> tuple[Staleness | None, bool]:
    """Why the job is stale (or None), and whether the session's turn lock is taken.

    lock_session: the commit's check, which locks the session row first (see
    _session_and_package), so the session cannot end between the check and the job's writes.
    """
    facts = _session_and_package(
        session_id=job.session_id, package_id=job.plugin_id, lock_session=lock_session
    )
    return _staleness(job, facts), bool(facts and facts["turn_locked"])


def _staleness(job: RuntimeJob, facts: dict[str, Any] | None) -> Staleness | None:
    if facts is None or facts["session_status"] == Session.Status.ENDED:
        return Staleness(JobReason.SESSION_ENDED, "the session has ended")
    version = facts["version"]
    if version is None:
        return Staleness(
            JobReason.VERSION_CHANGED, f"package {job.plugin_id} is no longer installed"
        )
    if job.package_version and version != job.package_version:
        if _kept_version(job):
            return None
        return Staleness(
            JobReason.VERSION_CHANGED,
            f"package {job.plugin_id} changed from version {job.package_version} to {version}",
        )
    if facts["trust"] == Package.Trust.BUNDLED and facts["state"] == Package.State.LOADED:
        return None  # bundled code is trusted: no approval to lose (one query, not three)
    usability = package_usability(package_id=job.plugin_id)
    if not usability.usable and _kept_version(job):
        return None
    if not usability.usable:
        revoked = usability.state == "revoked"
        code = JobReason.APPROVAL_REVOKED if revoked else JobReason.NOT_APPROVED
        return Staleness(code, usability.reason)
    return None


def _kept_version(job: RuntimeJob) -> bool:
    """The package's folder changed and waits for staff, while the approval of the version the
    job started with still stands: sessions keep running that version (approvals/store.py),
    and so does the job."""
    kept = approval_in_force(package_key=job.plugin_id)
    return kept is not None and (not job.package_version or kept.version == job.package_version)


def _session_and_package(
    *, session_id: Any, package_id: str, lock_session: bool = False
) -> dict[str, Any] | None:
    """The session's status and turn lock, and the installed package's version, trust and
    state, in one query (plain SQL: it runs twice per job). None when the session is gone.

    lock_session: lock the session row on PostgreSQL (FOR NO KEY UPDATE, as event_append
    does); SQLite has no row locks, and the caller's transaction already holds its write lock."""
    s, p = Table(Session, alias="s"), Table(Package, alias="p")
    # The turn lock is a lease (sessions.locks.session_lock_acquire): taken while it has a
    # token that has not expired.
    turn_locked = (
        f"CASE WHEN {s.col('lock_token')} <> '' AND ({s.col('lock_expires')} IS NULL "
        f"OR {s.col('lock_expires')} > %s) THEN 1 ELSE 0 END"
    )
    sql = (
        f"SELECT {s.col('status')}, {p.col('version')}, {p.col('trust')}, {p.col('state')}, "
        f"{turn_locked} "
        f"FROM {s} LEFT JOIN {p} ON {p.col('package_id')} = %s WHERE {s.col('id')} = %s"
    )
    if lock_session and connection.vendor == "postgresql":
        sql += " FOR NO KEY UPDATE OF s"
    now = s.value("lock_expires", timezone.now())
    key = s.value("id", session_id)
    with connection.cursor() as cursor:
        cursor.execute(sql, [now, package_id, key])
        row = cursor.fetchone()
    if row is None:
        return None
    return {
        "session_status": row[0],
        "version": row[1],
        "trust": row[2],
        "state": row[3],
        "turn_locked": bool(row[4]),
    }
