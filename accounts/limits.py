"""Failed sign-ins counted per account and per address, in Django's cache (Redis when set).

Per account stops guessing one user's password from many addresses; per address stops one
address trying many accounts. A success clears the account's count."""

from __future__ import annotations

import hashlib

from django.conf import settings
from django.core.cache import cache
from django.http import HttpRequest


def client_address(request: HttpRequest) -> str:
    # Behind the documented proxy REMOTE_ADDR is the proxy: it appends the client last.
    if getattr(settings, "SECURE_PROXY_SSL_HEADER", None):
        forwarded = request.META.get("HTTP_X_FORWARDED_FOR", "")
        if forwarded:
            return forwarded.split(",")[-1].strip()
    return request.META.get("REMOTE_ADDR", "")


def _keys(username: str, address: str) -> tuple[str, str]:
    account = hashlib.sha256(username.strip().lower().encode()).hexdigest()[:32]
    return f"login-fail:acct:{account}", f"login-fail:addr:{address}"


def login_locked(*, username: str, address: str) -> bool:
    account_key, address_key = _keys(username, address)
    return (cache.get(account_key) or 0) >= settings.COVEL_LOGIN_FAILURES_PER_ACCOUNT or (
        cache.get(address_key) or 0
    ) >= settings.COVEL_LOGIN_FAILURES_PER_ADDRESS


def login_failed(*, username: str, address: str) -> None:
    window = settings.COVEL_LOGIN_FAILURE_WINDOW_SECONDS
    for key in _keys(username, address):
        if not cache.add(key, 1, window):
            try:
                cache.incr(key)
            except ValueError:  # it expired between add and incr
                cache.add(key, 1, window)


def login_succeeded(*, username: str, address: str) -> None:
    cache.delete(_keys(username, address)[0])
