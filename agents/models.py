from __future__ import annotations

import os

from django.db import models


class ModelSlot(models.Model):
    """A named model slot (story, plugin, utility, memory, ...) that staff point at an endpoint.

    The API key itself is never stored: the slot names the environment variable that holds it,
    so the database, the admin and the API never see a secret.
    """

    name = models.SlugField(max_length=50, unique=True)
    base_url = models.URLField(
        help_text="OpenAI-compatible API root, e.g. https://api.example.com/v1"
    )
    model = models.CharField(max_length=200)
    api_key_env = models.CharField(
        max_length=100,
        blank=True,
        help_text="Name of the environment variable holding the API key.",
    )
    max_output_tokens = models.PositiveIntegerField(null=True, blank=True)
    enabled = models.BooleanField(default=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["name"]

    def __str__(self) -> str:
        return f"{self.name} → {self.model}"

    def api_key(self) -> str:
        return os.environ.get(self.api_key_env, "") if self.api_key_env else ""
