"""Reads of the accounts app."""

from __future__ import annotations

from django.contrib.auth.models import AbstractBaseUser

from accounts.models import ApiToken
from accounts.services import TOKEN_PREFIX, token_digest


def token_authenticate(*, raw: str) -> ApiToken | None:
    """The live token with this value (its user active), else None."""
    if not raw.startswith(TOKEN_PREFIX) or len(raw) > 200:
        return None
    token = (
        ApiToken.objects.select_related("user")
        .filter(digest=token_digest(raw), revoked_at__isnull=True)
        .first()
    )
    if token is None or not token.user.is_active:
        return None
    return token


def token_list(*, user: AbstractBaseUser) -> list[ApiToken]:
    return list(ApiToken.objects.filter(user=user))
