from __future__ import annotations

from django.db import models


class PackageQuerySet(models.QuerySet):
    def loaded(self) -> PackageQuerySet:
        return self.filter(state=Package.State.LOADED)


class Package(models.Model):
    """One installed package folder, as the last sync found it.

    The fields here are the stable core other apps rely on (approvals, worlds, sessions).
    """

    class Trust(models.TextChoices):
        BUNDLED = "bundled", "Bundled"  # shipped in plugins/: trusted
        COMMUNITY = "community", "Community"  # any other folder: needs approval

    class State(models.TextChoices):
        LOADED = "loaded", "Loaded"
        ERROR = "error", "Error"

    package_id = models.CharField(max_length=100, unique=True)
    kind = models.CharField(max_length=20, default="plugin")
    version = models.CharField(max_length=100, default="0.0.0")
    display_name = models.CharField(max_length=300, blank=True)
    description = models.TextField(blank=True)
    source_dir = models.CharField(max_length=1000)
    trust = models.CharField(max_length=20, choices=Trust.choices)
    state = models.CharField(max_length=20, choices=State.choices)
    content_hash = models.CharField(max_length=64)
    # The normalised manifest (Manifest.data, thawed) when loaded; the raw frontmatter otherwise.
    manifest = models.JSONField(default=dict)
    errors = models.JSONField(default=list)
    warnings = models.JSONField(default=list)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    objects = PackageQuerySet.as_manager()

    class Meta:
        ordering = ["package_id"]

    def __str__(self) -> str:
        return f"{self.package_id}@{self.version}"
