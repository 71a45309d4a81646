"""Approval requests and their append-only journal.

A request records exactly what one community package version asks for (its permission set:
server-code files with their hashes, and HTTP grants); staff decide on it as a whole.
"""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.db import models


class ApprovalRequestQuerySet(models.QuerySet):
    def for_package(self, package_key: str) -> ApprovalRequestQuerySet:
        return self.filter(package_key=package_key)

    def pending_first(self) -> ApprovalRequestQuerySet:
        # Pending requests are what staff must act on, so they sort before the history.
        pending_rank = models.Case(
            models.When(state=ApprovalRequest.State.PENDING, then=models.Value(0)),
            default=models.Value(1),
            output_field=models.IntegerField(),
        )
        return self.annotate(pending_rank=pending_rank).order_by(
            "pending_rank", "-created_at", "-id"
        )


class ApprovalRequest(models.Model):
    """What one community package version asks for, and the staff's verdict on it."""

    class State(models.TextChoices):
        PENDING = "pending", "Pending"
        APPROVED = "approved", "Approved"
        DENIED = "denied", "Denied"
        REVOKED = "revoked", "Revoked"
        # A newer sync of the package replaced this request before anyone decided on it.
        SUPERSEDED = "superseded", "Superseded"
        # The package disappeared (its folder is gone) before anyone decided: closed, with a note.
        WITHDRAWN = "withdrawn", "Withdrawn"

    # The package row may be deleted when its folder disappears; the history must outlive it.
    package = models.ForeignKey(
        "catalogue.Package",
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="approval_requests",
    )
    package_key = models.CharField(max_length=100, db_index=True)  # Package.package_id
    version = models.CharField(max_length=100)
    # Package.content_hash when the request was made: a different hash now means a stale request.
    content_hash = models.CharField(max_length=64)
    permissions = models.JSONField(default=dict)
    permissions_hash = models.CharField(max_length=64)
    # The last approval this request is compared with (a snapshot, so the diff never moves).
    baseline = models.ForeignKey(
        "self", null=True, blank=True, on_delete=models.PROTECT, related_name="followers"
    )
    baseline_permissions = models.JSONField(null=True, blank=True)
    state = models.CharField(max_length=20, choices=State.choices, default=State.PENDING)
    decided_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.PROTECT, related_name="+"
    )
    decided_at = models.DateTimeField(null=True, blank=True)
    note = models.TextField(blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    objects = ApprovalRequestQuerySet.as_manager()

    class Meta:
        ordering = ["-created_at", "-id"]
        indexes = [models.Index(fields=["package_key", "-id"]), models.Index(fields=["state"])]

    def __str__(self) -> str:
        return f"approval #{self.pk} {self.package_key}@{self.version} ({self.state})"


class PermissionScope(models.Model):
    """What a community package asks for right now, as of its last sync.

    One row per package; request is None when the package needs no approval (no server code and
    no HTTP grants). package_is_usable reads this row instead of re-reading the package's files.
    """

    package_key = models.CharField(max_length=100, unique=True)
    version = models.CharField(max_length=100)
    content_hash = models.CharField(max_length=64)
    permissions = models.JSONField(default=dict)
    permissions_hash = models.CharField(max_length=64)
    request = models.ForeignKey(
        ApprovalRequest, null=True, blank=True, on_delete=models.PROTECT, related_name="+"
    )
    synced_at = models.DateTimeField(auto_now=True)

    def __str__(self) -> str:
        return f"scope of {self.package_key}@{self.version}"


class JournalImmutable(Exception):
    """Raised on any attempt to change or remove a journal entry."""


class JournalQuerySet(models.QuerySet):
    # Bulk paths bypass Model.save/delete, so they are closed here too.
    def update(self, **kwargs: Any) -> int:
        raise JournalImmutable("approval journal entries are append-only: they cannot be updated")

    def delete(self) -> tuple[int, dict[str, int]]:
        raise JournalImmutable("approval journal entries are append-only: they cannot be deleted")

    def bulk_update(self, objs: Any, fields: Any, batch_size: int | None = None) -> int:
        raise JournalImmutable("approval journal entries are append-only: they cannot be updated")


class JournalEntry(models.Model):
    """One thing that happened to an approval request: who, when, what, and the exact set."""

    class Action(models.TextChoices):
        REQUESTED = "requested", "Requested"
        APPROVED = "approved", "Approved"
        DENIED = "denied", "Denied"
        REVOKED = "revoked", "Revoked"
        CARRIED_OVER = "carried over", "Carried over"
        SUPERSEDED = "superseded", "Superseded"
        WITHDRAWN = "withdrawn", "Withdrawn"

    request = models.ForeignKey(ApprovalRequest, on_delete=models.PROTECT, related_name="journal")
    package_key = models.CharField(max_length=100, db_index=True)
    version = models.CharField(max_length=100)
    action = models.CharField(max_length=20, choices=Action.choices)
    # None for the hub itself (sync, carry-over); the name is kept as written at the time.
    actor = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.PROTECT, related_name="+"
    )
    actor_name = models.CharField(max_length=150)
    note = models.TextField(blank=True)
    permissions = models.JSONField(default=dict)
    permissions_hash = models.CharField(max_length=64)
    created_at = models.DateTimeField(auto_now_add=True)

    objects = JournalQuerySet.as_manager()

    class Meta:
        ordering = ["created_at", "id"]
        verbose_name_plural = "journal entries"

    def __str__(self) -> str:
        return f"{self.package_key}@{self.version} {self.action} by {self.actor_name}"

    def save(self, *args: Any, **kwargs: Any) -> None:
        if self.pk is not None or not self._state.adding:
            raise JournalImmutable(
                "approval journal entries are append-only: they cannot be updated"
            )
        super().save(*args, **kwargs)

    def delete(self, *args: Any, **kwargs: Any) -> tuple[int, dict[str, int]]:
        raise JournalImmutable("approval journal entries are append-only: they cannot be deleted")
