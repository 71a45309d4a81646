"""Payloads the session's event stream will carry about jobs (the stream comes with Sessions).

Shapes (all keys camelCase, times ISO 8601 UTC):

job-status.updated  {"type", "jobId", "sessionId", "pluginId", "runtimeId", "sourceTurnId",
                     "state", "reason", "error", "attempt", "retryOf", "settle", "updatedAt"}
runtime.deferred    {"type", "jobId", "sessionId", "pluginId", "runtimeId", "sourceTurnId",
                     "settle", "maxSettleWaitMs", "maxQueueMs", "maxExecutionMs", "queuedAt"}
settle-timeout      {"type", "pendingJobIds", "waitedMs", "limitMs", "waitedFor"}
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from jobs.models import RuntimeJob
from jobs.settle import SettleOutcome


def _iso(moment: datetime | None) -> str | None:
    return moment.isoformat().replace("+00:00", "Z") if moment is not None else None


def _identity(job: RuntimeJob) -> dict[str, Any]:
    """Which job, of which session, plugin, runtime and turn: every payload starts so."""
    return {
        "jobId": str(job.job_id),
        "sessionId": str(job.session_id),
        "pluginId": job.plugin_id,
        "runtimeId": job.runtime_id,
        "sourceTurnId": job.source_turn or None,
    }


def _status(job: RuntimeJob) -> dict[str, Any]:
    return {
        "state": job.state,
        "reason": job.reason or None,
        "error": job.error or None,
        "attempt": job.attempt,
        "retryOf": str(job.retry_of.job_id) if job.retry_of_id and job.retry_of else None,
        "settle": job.settle,
    }


def _options(job: RuntimeJob) -> dict[str, Any]:
    return {
        "maxSettleWaitMs": job.max_settle_wait_ms,
        "maxQueueMs": job.max_queue_ms,
        "maxExecutionMs": job.max_execution_ms,
    }


def job_payload(job: RuntimeJob) -> dict[str, Any]:
    """The job as the API shows it."""
    return {
        **_identity(job),
        **_status(job),
        **_options(job),
        "packageVersion": job.package_version or None,
        "leaseOwner": job.lease_owner or None,
        "leaseExpiresAt": _iso(job.lease_expires_at),
        "queuedAt": _iso(job.created_at),
        "claimedAt": _iso(job.claimed_at),
        "startedAt": _iso(job.started_at),
        "finishedAt": _iso(job.finished_at),
        "updatedAt": _iso(job.updated_at),
        "queueMs": job.queue_ms,
        "runMs": job.run_ms,
        "result": job.result,
    }


def job_status_event(job: RuntimeJob) -> dict[str, Any]:
    return {
        "type": "job-status.updated",
        **_identity(job),
        **_status(job),
        "updatedAt": _iso(job.updated_at),
    }


def runtime_deferred_event(job: RuntimeJob) -> dict[str, Any]:
    """Recorded when a job is created (a deferred runtime, a background run, a retry)."""
    return {
        "type": "runtime.deferred",
        **_identity(job),
        "settle": job.settle,
        **_options(job),
        "queuedAt": _iso(job.created_at),
    }


def settle_timeout_event(outcome: SettleOutcome) -> dict[str, Any] | None:
    """The event an action records when its settle wait ran out; None when it did not."""
    if not outcome.timed_out:
        return None
    return {
        "type": "settle-timeout",
        "pendingJobIds": list(outcome.pending_job_ids),
        "waitedMs": outcome.waited_ms,
        "limitMs": outcome.limit_ms,
        "waitedFor": list(outcome.waited_for),
    }


def accepted_payload(job: RuntimeJob) -> dict[str, str]:
    """The 202 answer of a background activation."""
    return {"jobId": str(job.job_id), "status": "accepted"}
