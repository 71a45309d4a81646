from __future__ import annotations

import os

from django.core.exceptions import ValidationError
from django.db import models

from agents.gateway import reasoning_off_problem


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
    reasoning_off = models.JSONField(
        null=True,
        blank=True,
        verbose_name="reasoning off",
        help_text=(
            "A JSON object merged into the request body of runtimes that declare "
            'reasoning: false, e.g. {"reasoning_effort": "none"} or '
            '{"thinking": {"type": "disabled"}}. It may not set model, messages, tools, '
            "tool_choice or stream. Empty: such runtimes call the model unchanged and their "
            "trace says so."
        ),
    )
    enabled = models.BooleanField(default=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["name"]

    def __str__(self) -> str:
        return f"{self.name} → {self.model}"

    def clean(self) -> None:
        super().clean()
        if self.reasoning_off == {}:
            self.reasoning_off = None  # an empty object changes nothing: the same as none
        if self.reasoning_off is not None:
            problem = reasoning_off_problem(self.reasoning_off)
            if problem:
                raise ValidationError({"reasoning_off": problem})

    def api_key(self) -> str:
        return os.environ.get(self.api_key_env, "") if self.api_key_env else ""
