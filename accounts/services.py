"""Writes of the accounts app."""

from __future__ import annotations

from typing import Any

from accounts.language import supported_language
from accounts.models import Preference


def preference_language_set(*, user: Any, language: str) -> str:
    """Store the user's interface language ("" to follow the browser); returns what was stored.
    Raises ValueError for a language the hub does not speak."""
    code = supported_language(language) if language else ""
    if language and code is None:
        raise ValueError(f"unsupported language {language!r}")
    Preference.objects.update_or_create(user=user, defaults={"language": code or ""})
    return code or ""
