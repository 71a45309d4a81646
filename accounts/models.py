from django.conf import settings
from django.db import models


class Preference(models.Model):
    """What a user chose for the hub itself, kept across browsers and logins."""

    user = models.OneToOneField(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="preference"
    )
    # One of settings.LANGUAGES; "" follows the browser (Accept-Language).
    language = models.CharField(max_length=20, blank=True)

    def __str__(self) -> str:
        return f"{self.user_id}: {self.language or 'browser'}"
