"""The index of source plugins (plugin.toml) and the runs of their scheduled jobs.

The database row, not the broker, is the truth about a job: a beat dispatcher claims due
jobs with a conditional UPDATE and a worker runs the plugin's binary for the claimed run.
"""

from __future__ import annotations

from django.db import models


class SourcePluginQuerySet(models.QuerySet):
    def loaded(self) -> SourcePluginQuerySet:
        return self.filter(state=SourcePlugin.State.LOADED)


class SourcePlugin(models.Model):
    """One source plugin folder, as the last sync_sources found it."""

    class State(models.TextChoices):
        LOADED = "loaded", "Loaded"
        ERROR = "error", "Error"

    plugin_id = models.CharField(max_length=100, unique=True)
    name = models.CharField(max_length=300, blank=True)
    folder = models.CharField(max_length=1000)
    state = models.CharField(max_length=20, choices=State.choices)
    content_hash = models.CharField(max_length=64)
    # The fingerprint of the loader that judged it (loader.rules_version): new rules re-judge it.
    rules_version = models.CharField(max_length=64, blank=True)
    # The normalised manifest when loaded; the raw TOML (as far as it parsed) otherwise.
    manifest = models.JSONField(default=dict)
    errors = models.JSONField(default=list)
    warnings = models.JSONField(default=list)
    synced_at = models.DateTimeField()
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    objects = SourcePluginQuerySet.as_manager()

    class Meta:
        ordering = ["plugin_id"]

    def __str__(self) -> str:
        return self.plugin_id

    @property
    def source(self) -> dict:
        if not isinstance(self.manifest, dict):
            return {}
        source = self.manifest.get("source")
        return source if isinstance(source, dict) else {}


class SourceJob(models.Model):
    """One [[source.jobs]] of a loaded plugin, with its place in the schedule."""

    class State(models.TextChoices):
        IDLE = "idle", "Idle"  # waits for next_run_at
        RUNNING = "running", "Running"  # claimed by the dispatcher; a run is in flight

    plugin = models.ForeignKey(SourcePlugin, on_delete=models.CASCADE, related_name="jobs")
    name = models.CharField(max_length=200)
    every = models.CharField(max_length=100)  # the Go duration as written
    every_from = models.CharField(max_length=200, blank=True)
    timeout = models.CharField(max_length=100, blank=True)
    retry = models.CharField(max_length=100, blank=True)
    every_ns = models.BigIntegerField()
    timeout_ns = models.BigIntegerField(null=True, blank=True)
    retry_ns = models.BigIntegerField(null=True, blank=True)
    # False while the plugin is invalid: the job keeps its history but is never dispatched.
    active = models.BooleanField(default=True)
    state = models.CharField(max_length=20, choices=State.choices, default=State.IDLE)
    next_run_at = models.DateTimeField(db_index=True)
    # Failed runs since the last success: the retry wait doubles with each.
    failures = models.PositiveIntegerField(default=0)
    # A claimed job whose lease ran out (its worker died) is given back to the schedule.
    lease_expires_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["plugin__plugin_id", "name"]
        constraints = [
            models.UniqueConstraint(fields=["plugin", "name"], name="sources_job_unique_name"),
        ]

    def __str__(self) -> str:
        return f"{self.plugin.plugin_id}/{self.name}"


class SourceJobRun(models.Model):
    """One run of a job: started, ended, how it went, and when the next one is due."""

    class Outcome(models.TextChoices):
        RUNNING = "running", "Running"
        SUCCEEDED = "succeeded", "Succeeded"
        FAILED = "failed", "Failed"
        TIMED_OUT = "timed_out", "Timed out"
        ORPHANED = "orphaned", "Orphaned"  # its worker vanished before it ended

    job = models.ForeignKey(SourceJob, on_delete=models.CASCADE, related_name="runs")
    outcome = models.CharField(max_length=20, choices=Outcome.choices, default=Outcome.RUNNING)
    scheduled_for = models.DateTimeField()
    started_at = models.DateTimeField(null=True, blank=True)
    ended_at = models.DateTimeField(null=True, blank=True)
    error = models.TextField(blank=True)
    result = models.JSONField(null=True, blank=True)
    # The wait chosen after this run, and the moment it leads to.
    wait_ns = models.BigIntegerField(null=True, blank=True)
    next_run_at = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-created_at", "-id"]
        indexes = [models.Index(fields=["job", "-created_at"])]

    def __str__(self) -> str:
        return f"{self.job} {self.outcome}"
