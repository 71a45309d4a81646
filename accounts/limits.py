"""Failed sign-ins counted per (account, address) pair and per address, in Django's cache
(Redis when set).

Per pair stops one address guessing one user's password; per address stops one address trying
many accounts. Nothing is counted per account alone: such a count is one a stranger can fill
from his own address, locking the owner out everywhere (the second security review's finding).
The owner's right password from another address still signs in. An IPv6 client is counted by
its /64, the block one subscriber usually holds, so rotating addresses inside it does not help.
A success clears that pair's count, never the address's.
"""

from __future__ import annotations

import hashlib
import ipaddress

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


def address_block(address: str) -> str:
    """What one client is counted as: the IPv4 address, or the /64 of an IPv6 one."""
    try:
        ip = ipaddress.ip_address(address.split("%", 1)[0])
    except ValueError:
        return address
    if isinstance(ip, ipaddress.IPv6Address):
        if ip.ipv4_mapped is not None:
            return str(ip.ipv4_mapped)
        return str(ipaddress.IPv6Network(f"{ip}/64", strict=False))
    return str(ip)


def _keys(username: str, address: str) -> tuple[str, str]:
    block = address_block(address)
    pair = hashlib.sha256(f"{username.strip().lower()}\0{block}".encode()).hexdigest()[:32]
    return f"login-fail:pair:{pair}", f"login-fail:addr:{block}"


def login_locked(*, username: str, address: str) -> bool:
    pair_key, address_key = _keys(username, address)
    return (cache.get(pair_key) or 0) >= settings.COVEL_LOGIN_FAILURES_PER_ACCOUNT_ADDRESS or (
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
