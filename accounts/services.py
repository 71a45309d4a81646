"""Writes of the accounts app: API tokens made and revoked, failed sign-ins counted, the
interface language stored."""

from __future__ import annotations

import hashlib
import secrets
from datetime import timedelta

from django.contrib.auth.models import AbstractBaseUser
from django.utils import timezone

from accounts.language import supported_language
from accounts.models import ApiToken, Preference

TOKEN_PREFIX = "covel_"
# A token's last use is written at most this often (not on every request).
LAST_USED_RESOLUTION = timedelta(minutes=5)


class TokenError(Exception):
    pass


def token_digest(raw: str) -> str:
    return hashlib.sha256(raw.encode()).hexdigest()


def token_create(*, user: AbstractBaseUser, name: str) -> tuple[ApiToken, str]:
    """A new token for user; the raw token is returned once and never stored."""
    name = name.strip()
    if not name:
        raise TokenError("name: give the token a name (what or where it is used)")
    if len(name) > 100:
        raise TokenError("name: at most 100 characters")
    raw = TOKEN_PREFIX + secrets.token_urlsafe(32)
    token = ApiToken.objects.create(
        user=user, name=name, prefix=raw[: len(TOKEN_PREFIX) + 6], digest=token_digest(raw)
    )
    return token, raw


def token_revoke(*, user: AbstractBaseUser, token_id: int) -> ApiToken:
    """Revoke one of user's own tokens (staff revoke others' in the admin)."""
    token = ApiToken.objects.filter(pk=token_id, user=user).first()
    if token is None:
        raise TokenError(f"no token {token_id} of yours")
    if token.revoked_at is None:
        token.revoked_at = timezone.now()
        token.save(update_fields=["revoked_at"])
    return token


def token_mark_used(*, token: ApiToken) -> None:
    now = timezone.now()
    if token.last_used_at is None or now - token.last_used_at > LAST_USED_RESOLUTION:
        ApiToken.objects.filter(pk=token.pk).update(last_used_at=now)


def preference_language_set(*, user: AbstractBaseUser, language: str) -> str:
    """Store the user's interface language ("" to follow the browser); returns what was stored.
    Raises ValueError for a language the hub does not speak."""
    code = supported_language(language) if language else ""
    if language and code is None:
        raise ValueError(f"unsupported language {language!r}")
    Preference.objects.update_or_create(user=user, defaults={"language": code or ""})
    return code or ""
