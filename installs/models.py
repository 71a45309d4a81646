"""Where an installed package came from, the install jobs, and the community directory."""

from __future__ import annotations

from django.conf import settings
from django.db import models


class Installation(models.Model):
    """One package the hub installed (ZIP, git link or the directory): its provenance.

    The package's catalogue row is the catalogue's; this row outlives nothing of it (uninstall
    deletes both) and is keyed by the package id, not a foreign key, so the catalogue never
    depends on it.
    """

    class Kind(models.TextChoices):
        ZIP = "zip", "ZIP upload"
        GIT = "git", "Git link"

    package_id = models.CharField(max_length=100, unique=True)
    kind = models.CharField(max_length=10, choices=Kind.choices)
    version = models.CharField(max_length=100, blank=True, null=True)
    # {repository, commit, path, digest, tracking} for git; {digest, filename} for a ZIP.
    source = models.JSONField(default=dict)
    digest = models.CharField(max_length=64)
    installed_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    installed_by_name = models.CharField(max_length=150, blank=True)
    installed_at = models.DateTimeField()
    updated_at = models.DateTimeField(auto_now=True)
    # What the last update check found: {version, source, error} or None (Covel's pendingUpdate).
    pending_update = models.JSONField(null=True, blank=True)
    checked_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["package_id"]

    def __str__(self) -> str:
        return f"{self.package_id}@{self.version} ({self.kind})"

    @property
    def tracking(self) -> dict:
        return (self.source or {}).get("tracking") or {}


class InstallJob(models.Model):
    """One long piece of install work (fetch, unpack, validate, write); the row is the truth."""

    class Kind(models.TextChoices):
        INSTALL = "install", "Install"
        UPDATE = "update", "Update"
        CHECK = "check", "Update check"

    class State(models.TextChoices):
        QUEUED = "queued", "Queued"
        RUNNING = "running", "Running"
        DONE = "done", "Done"
        FAILED = "failed", "Failed"

    kind = models.CharField(max_length=10, choices=Kind.choices)
    state = models.CharField(max_length=10, choices=State.choices, default=State.QUEUED)
    # What to do: {"token": ...} or {"tokens": [...]} or {"package_id": ...}.
    params = models.JSONField(default=dict)
    step = models.CharField(max_length=40, blank=True)  # fetch, unpack, validate, write, index
    progress = models.PositiveSmallIntegerField(default=0)  # percent
    error = models.TextField(blank=True)
    result = models.JSONField(default=dict, blank=True)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at"]
        indexes = [models.Index(fields=["state"])]

    def __str__(self) -> str:
        return f"install job #{self.pk} {self.kind} ({self.state})"


class DirectorySource(models.Model):
    """A community directory in the covel-plugins registry format (registry/plugins/<id>.json)."""

    class Kind(models.TextChoices):
        GIT = "git", "Git repository"
        FOLDER = "folder", "Folder"

    kind = models.CharField(max_length=10, choices=Kind.choices)
    location = models.CharField(max_length=2000)  # a git link or a folder on the hub's disk
    synced_at = models.DateTimeField(null=True, blank=True)
    commit = models.CharField(max_length=40, blank=True)
    # [{file, message}] for entries the validator refused; the rest are listed.
    problems = models.JSONField(default=list, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    def __str__(self) -> str:
        return f"directory {self.location}"


class DirectoryEntry(models.Model):
    source = models.ForeignKey(DirectorySource, on_delete=models.CASCADE, related_name="entries")
    entry_id = models.CharField(max_length=64)
    name = models.CharField(max_length=300)
    description = models.TextField()
    author = models.CharField(max_length=300)
    maintainer = models.CharField(max_length=20)
    category = models.CharField(max_length=20)
    status = models.CharField(max_length=20)
    repository = models.CharField(max_length=500)
    path = models.CharField(max_length=500, blank=True)
    ref = models.CharField(max_length=200)
    data = models.JSONField(default=dict)
    search_text = models.TextField(blank=True)

    class Meta:
        ordering = ["entry_id"]
        constraints = [
            models.UniqueConstraint(fields=["source", "entry_id"], name="installs_entry_unique")
        ]

    def __str__(self) -> str:
        return self.entry_id

    @property
    def install_url(self) -> str:
        """The link the preview reads, as the registry's README builds its Install link."""
        from urllib.parse import quote

        tail = f"/{self.path}" if self.path else ""
        return f"{self.repository}/tree/{quote(self.ref, safe='')}{tail}"
