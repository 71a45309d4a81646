"""Personal API tokens (a user's bearer credential for the API, stored only as a hash) and
the user's preferences for the hub itself."""

from __future__ import annotations

from django.conf import settings
from django.db import models


class ApiToken(models.Model):
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="api_tokens"
    )
    name = models.CharField(max_length=100)
    # The first characters of the token, shown in lists so the owner can tell tokens apart.
    prefix = models.CharField(max_length=16)
    # SHA-256 of the whole token: a token has 256 random bits, so no slow hash is needed.
    digest = models.CharField(max_length=64, unique=True)
    created_at = models.DateTimeField(auto_now_add=True)
    last_used_at = models.DateTimeField(null=True, blank=True)
    revoked_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at", "-id"]

    def __str__(self) -> str:
        return f"{self.prefix}… ({self.name})"


class Preference(models.Model):
    """What a user chose for the hub itself, kept across browsers and logins."""

    user = models.OneToOneField(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="preference"
    )
    # One of settings.LANGUAGES; "" follows the browser (Accept-Language).
    language = models.CharField(max_length=20, blank=True)

    def __str__(self) -> str:
        return f"{self.user_id}: {self.language or 'browser'}"
