"""Reads of the accounts app."""

from __future__ import annotations

from django.contrib.auth.models import AbstractBaseUser

from accounts.models import ApiToken
from accounts.services import TOKEN_PREFIX, token_digest
from core.sql import Table, read_one_related


def token_authenticate(*, raw: str) -> ApiToken | None:
    """The live token with this value (its user active), else None."""
    if not raw.startswith(TOKEN_PREFIX) or len(raw) > 200:
        return None
    # Every API call with a token asks: one plain statement, not a compiled queryset.
    table = Table(ApiToken, alias="t")
    token = read_one_related(
        ApiToken,
        f"{table.col('digest')} = %s AND {table.col('revoked_at')} IS NULL",
        [token_digest(raw)],
        related="user",
    )
    if token is None or not token.user.is_active:
        return None
    return token


def token_list(*, user: AbstractBaseUser) -> list[ApiToken]:
    return list(ApiToken.objects.filter(user=user))
