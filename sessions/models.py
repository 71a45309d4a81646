from __future__ import annotations

import uuid
from typing import Any

from django.conf import settings
from django.db import models

from sessions.operations import value_size


class Session(models.Model):
    """A play session of one world by its owner: what it asked for, what resolved, where it stands.

    The turn lock is a lease on this row (lock_token, lock_expires), taken and released in short
    transactions that lock the row (SELECT ... FOR UPDATE on PostgreSQL, an IMMEDIATE transaction
    on SQLite), so a turn never holds a database transaction while plugin code or a model runs.
    """

    class Phase(models.TextChoices):
        SETUP = "setup", "Setup"
        PLAYING = "playing", "Playing"

    class Status(models.TextChoices):
        ACTIVE = "active", "Active"
        PAUSED = "paused", "Paused"
        ENDED = "ended", "Ended"

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    world = models.ForeignKey("worlds.World", on_delete=models.PROTECT, related_name="sessions")
    owner = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="play_sessions"
    )
    title = models.CharField(max_length=200, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    # --- Added by the Sessions issue (0002) ---
    # [{"id", "user", "role", "primary", "characterIds", "currentCharacterId"}]: who plays
    # which characters (the keys the plugin SDK reads; docs/worlds.md).
    seats = models.JSONField(default=list, blank=True)
    phase = models.CharField(max_length=20, choices=Phase.choices, default=Phase.SETUP)
    status = models.CharField(max_length=20, choices=Status.choices, default=Status.ACTIVE)
    # Logical turns: player turns only; manual runs and background commits do not advance it.
    turn_count = models.PositiveIntegerField(default=0)
    requested_plugins = models.JSONField(default=list, blank=True)
    # Core packages the player unticked: never active, not even as a provider.
    excluded_plugins = models.JSONField(default=list, blank=True)
    resolved_plugins = models.JSONField(default=list, blank=True)
    # {package: [outcome dicts]}; the last one is the verdict (see sessions/resolver.py).
    outcomes = models.JSONField(default=dict, blank=True)
    # {package: version} of every package a committed turn used.
    package_versions = models.JSONField(default=dict, blank=True)
    # {package: version} whose setup runtimes already ran; a different version runs them again.
    setup_versions = models.JSONField(default=dict, blank=True)
    trigger_ledger = models.JSONField(default=dict, blank=True)
    locale = models.CharField(max_length=35, default="en")
    lock_token = models.CharField(max_length=64, blank=True)
    lock_expires = models.DateTimeField(null=True, blank=True)
    updated_at = models.DateTimeField(auto_now=True, null=True)

    class Meta:
        ordering = ["-created_at"]

    def __str__(self) -> str:
        return self.title or str(self.id)


class Turn(models.Model):
    """One execution of a session: a player action, a manual run or a background commit."""

    class Kind(models.TextChoices):
        PLAYER = "player", "Player"
        BACKGROUND = "background", "Background"
        MANUAL = "manual", "Manual"

    class Status(models.TextChoices):
        RUNNING = "running", "Running"
        COMMITTED = "committed", "Committed"
        FAILED = "failed", "Failed"

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    session = models.ForeignKey(Session, on_delete=models.CASCADE, related_name="turns")
    number = models.PositiveIntegerField()  # the logical turn it ran on
    kind = models.CharField(max_length=20, choices=Kind.choices, default=Kind.PLAYER)
    player_message = models.TextField(blank=True)
    status = models.CharField(max_length=20, choices=Status.choices, default=Status.RUNNING)
    narrative_text = models.TextField(blank=True)
    # [{runtime, package, stage, status, code, reason, output, ...}] in the order they ended.
    results = models.JSONField(default=list, blank=True)
    commit = models.JSONField(default=dict, blank=True)  # refusals, dropped, written keys
    # What the turn's plugin-data writes replaced, [[plugin, namespace, key, value or null]]:
    # undo and regenerate restore it (sessions/rewind.py). Never sent to players (the change
    # events name keys only); bounded by the per-package quota.
    undo = models.JSONField(default=list, blank=True)
    # The ui.render blocks its runtimes committed, in order: [{id, type, data, meta}] (Covel's
    # message blocks); the session page shows them as structured data, never as HTML.
    blocks = models.JSONField(default=list, blank=True)
    error = models.TextField(blank=True)
    source_turn = models.ForeignKey(
        "self", null=True, blank=True, on_delete=models.SET_NULL, related_name="background_turns"
    )
    created_at = models.DateTimeField(auto_now_add=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["created_at"]
        indexes = [models.Index(fields=["session", "created_at"])]

    def __str__(self) -> str:
        return f"{self.session_id} turn {self.number} ({self.kind})"


class PluginData(models.Model):
    """One committed plugin data value: (session, plugin, namespace, key) -> JSON."""

    session = models.ForeignKey(Session, on_delete=models.CASCADE, related_name="plugin_data")
    plugin_id = models.CharField(max_length=100)
    namespace = models.CharField(max_length=200)
    key = models.CharField(max_length=500)
    value = models.JSONField(null=True)
    # Bytes of the value as compact UTF-8 JSON, kept with it: a package's quota per session is
    # one SUM over its rows (sessions/operations.py, PLUGIN_DATA_MAX_BYTES).
    size = models.PositiveIntegerField(default=0)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["plugin_id", "namespace", "key"]
        constraints = [
            models.UniqueConstraint(
                fields=["session", "plugin_id", "namespace", "key"], name="uniq_plugin_data_key"
            )
        ]

    def __str__(self) -> str:
        return f"{self.plugin_id}/{self.namespace}/{self.key}"

    def save(self, *args: Any, **kwargs: Any) -> None:
        self.size = value_size(self.value)
        update_fields = kwargs.get("update_fields")
        if update_fields is not None and "value" in update_fields:
            kwargs["update_fields"] = {*update_fields, "size"}  # update_or_create names only value
        super().save(*args, **kwargs)


class RecordedExport(models.Model):
    """A runtime output persisted under io.output.recordAs, read by `scope: committed` inputs."""

    session = models.ForeignKey(Session, on_delete=models.CASCADE, related_name="exports")
    plugin_id = models.CharField(max_length=100)
    runtime_id = models.CharField(max_length=300)  # qualified runtime ID
    record_as = models.CharField(max_length=200)
    value = models.JSONField(null=True)
    turn = models.ForeignKey(Turn, null=True, on_delete=models.SET_NULL, related_name="exports")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["id"]
        indexes = [models.Index(fields=["session", "plugin_id", "record_as"])]


class Interaction(models.Model):
    """A form a runtime asked the player to fill in; answered once, by a follow-up turn.

    Written in the commit of the turn whose runtime asked (only when that runtime succeeded), so
    a failed or dropped runtime never leaves a form behind.
    """

    class Kind(models.TextChoices):
        FORM = "form", "Form"

    class Status(models.TextChoices):
        PENDING = "pending", "Pending"
        SUBMITTED = "submitted", "Submitted"

    session = models.ForeignKey(Session, on_delete=models.CASCADE, related_name="interactions")
    source_turn = models.ForeignKey(
        Turn, null=True, on_delete=models.SET_NULL, related_name="interactions"
    )
    plugin_id = models.CharField(max_length=100)
    runtime_id = models.CharField(max_length=300)  # qualified runtime ID
    # The function's own interactionId, or create-form's generated one; it names the form in
    # the submit URL.
    interaction_id = models.CharField(max_length=400)
    kind = models.CharField(max_length=20, choices=Kind.choices, default=Kind.FORM)
    # {title, description, notice, submitLabel, fields, validation} as the runtime wrote it.
    form = models.JSONField(default=dict)
    status = models.CharField(max_length=20, choices=Status.choices, default=Status.PENDING)
    values = models.JSONField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    submitted_at = models.DateTimeField(null=True, blank=True)
    answer_turn = models.ForeignKey(
        Turn, null=True, blank=True, on_delete=models.SET_NULL, related_name="answers"
    )

    class Meta:
        ordering = ["created_at", "id"]
        constraints = [
            models.UniqueConstraint(
                fields=["session", "interaction_id"], name="uniq_session_interaction"
            )
        ]

    def __str__(self) -> str:
        return f"{self.session_id} {self.kind} {self.interaction_id} ({self.status})"


class HistorySummary(models.Model):
    """A history.compact@2 summary: it stands in the prompt for the messages it covers.

    Messages are never deleted (Covel's rule): a summary lists the message ids it covers
    ("<turnId>:player", "<turnId>:narrative"), and the prompt shows the summary instead.
    """

    session = models.ForeignKey(Session, on_delete=models.CASCADE, related_name="summaries")
    summary_id = models.CharField(max_length=64)
    content = models.TextField()
    focus_sections = models.JSONField(default=list, blank=True)
    message_ids = models.JSONField(default=list, blank=True)
    turn_range_start = models.CharField(max_length=64)
    turn_range_end = models.CharField(max_length=64)
    created_at = models.DateTimeField()

    class Meta:
        ordering = ["created_at", "id"]
        constraints = [
            models.UniqueConstraint(fields=["session", "summary_id"], name="uniq_history_summary")
        ]

    def __str__(self) -> str:
        return f"{self.session_id} summary {self.summary_id}"
