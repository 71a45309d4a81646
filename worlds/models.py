from __future__ import annotations

from django.conf import settings
from django.db import models


class WorldQuerySet(models.QuerySet):
    def loaded(self) -> WorldQuerySet:
        return self.filter(state=World.State.LOADED)


class World(models.Model):
    """One world folder (world.yaml) as the last sync found it, plus who may edit its presets.

    plugin_settings mirrors world.yaml's `pluginSettings` ({pluginId: {key: value}}); saving a
    preset writes both, so the file stays the source a sync reads back.
    """

    class State(models.TextChoices):
        LOADED = "loaded", "Loaded"
        ERROR = "error", "Error"
        # The folder vanished; the row stays because sessions point at it.
        MISSING = "missing", "Missing"

    world_id = models.CharField(max_length=100, unique=True)
    name = models.CharField(max_length=200, blank=True)
    description = models.TextField(blank=True)
    author = models.JSONField(null=True, blank=True)
    plugins = models.JSONField(default=list, blank=True)
    plugin_settings = models.JSONField(default=dict, blank=True)
    # characters/characters.json as the last good sync read it: [{id, name, type, description,
    # fields}] in file order (see worlds/characters_file.py).
    characters = models.JSONField(default=list, blank=True)
    # data/world.data.yaml's characterSchema as the last good sync read it: the character field
    # definitions [{id, name, type, description, min, max, options, default}] (data_files.py).
    character_schema = models.JSONField(default=list, blank=True)
    # data/lorebook.yaml as the last good sync read it: [{id, title, keys, text}] in file order.
    lorebook = models.JSONField(default=list, blank=True)
    # Empty for a world made by hand (admin, tests): its presets then live in the database only.
    source_dir = models.CharField(max_length=1000, blank=True)
    state = models.CharField(max_length=20, choices=State.choices, default=State.LOADED)
    content_hash = models.CharField(max_length=64, blank=True)
    errors = models.JSONField(default=list, blank=True)
    warnings = models.JSONField(default=list, blank=True)
    # Bundled worlds have no owner until staff assigns one; staff may edit any world.
    owner = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="worlds",
    )
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    objects = WorldQuerySet.as_manager()

    class Meta:
        ordering = ["world_id"]

    def __str__(self) -> str:
        return self.world_id

    @property
    def display_name(self) -> str:
        return self.name or self.world_id


class SessionPluginSettings(models.Model):
    """A player's own values for one package in one session (the top of the precedence)."""

    session = models.ForeignKey(
        "play.Session", on_delete=models.CASCADE, related_name="plugin_settings"
    )
    package_id = models.CharField(max_length=100)
    values = models.JSONField(default=dict)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        # "settings" is already plural: Django's default would print "settingss" in the admin.
        verbose_name = "session plugin settings"
        verbose_name_plural = "session plugin settings"
        constraints = [
            models.UniqueConstraint(
                fields=["session", "package_id"], name="uniq_session_package_settings"
            )
        ]

    def __str__(self) -> str:
        return f"{self.session_id}:{self.package_id}"
