from __future__ import annotations

import uuid

from django.conf import settings
from django.db import models


class Session(models.Model):
    """A play session of one world by its owner. Kept minimal: the Sessions issue extends it."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    world = models.ForeignKey("worlds.World", on_delete=models.PROTECT, related_name="sessions")
    owner = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="play_sessions"
    )
    title = models.CharField(max_length=200, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-created_at"]

    def __str__(self) -> str:
        return self.title or str(self.id)
