"""permissions.http origins that can never be reached: refused when the package is validated.

covel.http refuses every address that is not public at request time (approvals/http.py); an
origin whose host already names such an address (`localhost`, `127.1`, `2130706433`,
`0.0.0.0`, `[::ffff:127.0.0.1]`, `[64:ff9b::a00:1]`, ...) is refused here too, so staff never
approve a grant that cannot work. Host names are not resolved here: what a name resolves to
is the request-time check's business.

An operator who lets plugins reach private addresses (COVEL_HTTP_ALLOW_PRIVATE=true, the same
environment variable the hub's settings read) lets such origins through validation as well.
"""

from __future__ import annotations

import os
from typing import Any
from urllib.parse import urlsplit

from catalogue.manifest.context import Context
from core.addresses import host_address, host_is_loopback_name, is_public_ip

ALLOW_PRIVATE_VARIABLE = "COVEL_HTTP_ALLOW_PRIVATE"


def private_origins_allowed() -> bool:
    value = os.environ.get(ALLOW_PRIVATE_VARIABLE, "")
    return value.strip().lower() in {"1", "true", "yes", "on"}


def unreachable_reason(origin: str) -> str | None:
    """Why covel.http could never reach origin's host, or None when it might."""
    try:
        host = urlsplit(origin).hostname
    except ValueError:
        return None  # check_origin reports a malformed origin
    if not host:
        return None
    if host_is_loopback_name(host):
        return f"{host} is this machine (loopback)"
    address = host_address(host)
    if address is None or is_public_ip(address):
        return None
    return f"{host} is the address {address}, which is not public (private, loopback, link-local or reserved)"


def check_origin_reachable(ctx: Context, value: Any, *, file: str, path: str) -> None:
    """Record `origin-not-public` when a permissions.http origin names a non-public host."""
    if not isinstance(value, str) or private_origins_allowed():
        return
    reason = unreachable_reason(value)
    if reason is not None:
        ctx.error(
            file,
            path,
            "origin-not-public",
            f"{value!r} can never be reached: {reason}; covel.http reaches only public "
            "addresses, so list a public https origin",
        )
