"""Detached runtime jobs: the database row is the truth about a job, never the broker.

A job is one run of a detached (or background) runtime of one plugin in one session. Celery only
carries the job's id; every state change is a conditional UPDATE on this row (see services.py).
"""

from __future__ import annotations

import uuid

from django.conf import settings
from django.db import models

# Spec: maxSettleWaitMs defaults to 60000 and is capped at 120000.
DEFAULT_SETTLE_WAIT_MS = 60_000
MAX_SETTLE_WAIT_MS = 120_000


class JobState(models.TextChoices):
    QUEUED = "queued", "Queued"
    CLAIMED = "claimed", "Claimed"
    RUNNING = "running", "Running"
    COMMITTING = "committing", "Committing"
    SUCCEEDED = "succeeded", "Succeeded"
    FAILED = "failed", "Failed"
    TIMED_OUT = "timed_out", "Timed out"
    CANCELLED = "cancelled", "Cancelled"
    STALE = "stale", "Stale"
    ORPHANED = "orphaned", "Orphaned"


class JobReason(models.TextChoices):
    NONE = "", "None"
    QUEUE_DEADLINE = "queue-deadline-exceeded", "Queue deadline exceeded"
    EXECUTION_DEADLINE = "execution-deadline-exceeded", "Execution deadline exceeded"
    # Not spec enums but worth a name: why a job went stale / orphaned / cancelled.
    APPROVAL_REVOKED = "approval-revoked", "Approval revoked"
    NOT_APPROVED = "not-approved", "Package not approved"
    VERSION_CHANGED = "version-changed", "Package version changed"
    SESSION_ENDED = "session-ended", "Session ended"
    LEASE_EXPIRED = "lease-expired", "Lease expired"
    CANCELLED_BY_USER = "cancelled-by-user", "Cancelled by a person"


UNFINISHED_STATES = (JobState.QUEUED, JobState.CLAIMED, JobState.RUNNING, JobState.COMMITTING)
# A worker holds a lease in these states; the reaper orphans them when it expires.
LEASED_STATES = (JobState.CLAIMED, JobState.RUNNING, JobState.COMMITTING)
FAILURE_STATES = (
    JobState.FAILED,
    JobState.TIMED_OUT,
    JobState.CANCELLED,
    JobState.STALE,
    JobState.ORPHANED,
)
TERMINAL_STATES = (JobState.SUCCEEDED, *FAILURE_STATES)
CANCELLABLE_STATES = (JobState.QUEUED, JobState.CLAIMED, JobState.RUNNING)


class RuntimeJobQuerySet(models.QuerySet):
    def unfinished(self) -> RuntimeJobQuerySet:
        return self.filter(state__in=UNFINISHED_STATES)

    def for_key(
        self, *, session_id: uuid.UUID, plugin_id: str, runtime_id: str
    ) -> RuntimeJobQuerySet:
        return self.filter(session_id=session_id, plugin_id=plugin_id, runtime_id=runtime_id)


class RuntimeJob(models.Model):
    """One detached runtime run.

    The integer primary key orders the jobs of one (session, plugin, runtime) key: they run in
    that order. The UUID is the public job ID (API, events, Celery never sees it).
    """

    id = models.BigAutoField(primary_key=True)
    job_id = models.UUIDField(default=uuid.uuid4, unique=True, editable=False)
    # Indexed by jobs_session_state (its first column), not by an index of its own: every state
    # change of a job writes an entry into each of the table's indexes on PostgreSQL.
    session = models.ForeignKey(
        "play.Session", on_delete=models.CASCADE, related_name="runtime_jobs", db_index=False
    )
    plugin_id = models.CharField(max_length=100)
    runtime_id = models.CharField(max_length=200)
    # The registry key of the code that runs the job (settings.COVEL_JOB_RUNNERS).
    runner = models.CharField(max_length=50, default="runtime")
    # The turn that deferred this job (opaque until the turn model exists).
    source_turn = models.CharField(max_length=100, blank=True)
    # The runtime's inputs as the source turn resolved them: a retry runs on the same inputs.
    inputs = models.JSONField(default=dict, blank=True)
    # Installed package version when the job was created: a different one makes the job stale.
    package_version = models.CharField(max_length=100, blank=True)

    settle = models.BooleanField(default=False)
    max_settle_wait_ms = models.PositiveIntegerField(default=DEFAULT_SETTLE_WAIT_MS)
    max_queue_ms = models.PositiveIntegerField(null=True, blank=True)
    max_execution_ms = models.PositiveIntegerField(null=True, blank=True)

    state = models.CharField(max_length=20, choices=JobState.choices, default=JobState.QUEUED)
    reason = models.CharField(max_length=40, blank=True)
    error = models.TextField(blank=True)
    result = models.JSONField(null=True, blank=True)

    created_at = models.DateTimeField()  # also the moment it was queued
    claimed_at = models.DateTimeField(null=True, blank=True)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    updated_at = models.DateTimeField()

    # When the job's message was last handed to the broker, and how many times: the reaper
    # re-sends a queued job whose message was lost (with a growing back-off).
    sent_at = models.DateTimeField(null=True, blank=True)
    sends = models.PositiveIntegerField(default=1)
    attempt = models.PositiveIntegerField(default=1)
    # How many times the reaper handed this job on because its worker died (jobs.services
    # job_reap_orphans); not a retry: a retry is a new job.
    reruns = models.PositiveIntegerField(default=0)
    lease_owner = models.CharField(max_length=200, blank=True)
    lease_expires_at = models.DateTimeField(null=True, blank=True)
    # Both indexed only where set (partial indexes below): most jobs are no retry, asked for by
    # nobody, and a partial index costs their state changes nothing.
    retry_of = models.ForeignKey(
        "self",
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="retries",
        db_index=False,
    )
    requested_by = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="+",
        db_index=False,
    )

    objects = RuntimeJobQuerySet.as_manager()

    class Meta:
        ordering = ["-id"]
        indexes = [
            models.Index(fields=["session", "state"], name="jobs_session_state"),
            # Partial indexes over the few unfinished jobs: the claim's "no earlier unfinished
            # job of this key" test and the reaper stay fast however many jobs finished before
            # (a full index let PostgreSQL pick a scan over every past job of the plugin).
            models.Index(
                fields=["session", "plugin_id", "runtime_id", "id"],
                condition=models.Q(state__in=UNFINISHED_STATES),
                name="jobs_unfinished_key",
            ),
            models.Index(
                fields=["lease_expires_at"],
                condition=models.Q(state__in=LEASED_STATES),
                name="jobs_leased",
            ),
            models.Index(fields=["plugin_id", "-id"], name="jobs_plugin"),
            models.Index(
                fields=["retry_of"],
                condition=models.Q(retry_of__isnull=False),
                name="jobs_retry_of",
            ),
            models.Index(
                fields=["requested_by"],
                condition=models.Q(requested_by__isnull=False),
                name="jobs_requested_by",
            ),
        ]

    def __str__(self) -> str:
        return f"job {self.job_id} {self.plugin_id}/{self.runtime_id} ({self.state})"

    @property
    def is_finished(self) -> bool:
        return self.state in TERMINAL_STATES

    @property
    def queue_ms(self) -> int | None:
        end = self.claimed_at or self.finished_at
        if end is None:
            return None
        return max(0, int((end - self.created_at).total_seconds() * 1000))

    @property
    def run_ms(self) -> int | None:
        if self.started_at is None or self.finished_at is None:
            return None
        return max(0, int((self.finished_at - self.started_at).total_seconds() * 1000))


class SettleWait(models.Model):
    """One action's wait for its session's settle jobs (kept for the dashboard's timeline)."""

    session = models.ForeignKey("play.Session", on_delete=models.CASCADE, related_name="+")
    started_at = models.DateTimeField()
    waited_ms = models.PositiveIntegerField()
    limit_ms = models.PositiveIntegerField()
    timed_out = models.BooleanField(default=False)
    pending_job_ids = models.JSONField(default=list)

    class Meta:
        ordering = ["-started_at"]
        indexes = [models.Index(fields=["-started_at"], name="jobs_settle_recent")]
