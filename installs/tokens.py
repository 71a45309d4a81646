"""Signed preview tokens: what staff saw is what gets installed, for 15 minutes.

Covel signs the preview with a per-process random key (github-preview.ts); the hub signs with
its SECRET_KEY (django.core.signing, its own salt), so a token survives a restart and works on
every web process; the 15-minute expiry is the same.
"""

from __future__ import annotations

import time
from typing import Any

from django.core import signing

LIFETIME_MS = 15 * 60 * 1000
_SALT = "installs.preview.v1"


class TokenRefused(Exception):
    def __init__(self, message: str, *, status: int, code: str) -> None:
        super().__init__(message)
        self.message = message
        self.status = status
        self.code = code


def now_ms() -> int:
    return int(time.time() * 1000)


def sign(action: str, plugin: dict[str, Any], **extra: Any) -> str:
    return signing.dumps({"action": action, "plugin": plugin, **extra}, salt=_SALT, compress=True)


def verify(token: str, *, actions: tuple[str, ...]) -> dict[str, Any]:
    try:
        data = signing.loads(token, salt=_SALT)
    except signing.BadSignature as exc:
        raise TokenRefused(
            "the preview token is not valid (altered or not ours); preview again",
            status=400,
            code="bad_token",
        ) from exc
    if not isinstance(data, dict) or data.get("action") not in actions:
        raise TokenRefused(
            f"expected a preview token for {' or '.join(actions)}", status=400, code="bad_token"
        )
    if int(data["plugin"].get("expiresAt", 0)) <= now_ms():
        raise TokenRefused("the preview expired; preview again", status=409, code="preview_expired")
    return data


def action_of(token: str) -> str | None:
    """The action a well-signed token names (install, world-install, ...), else None; the
    caller still verifies it (expiry included) with verify()."""
    try:
        data = signing.loads(token, salt=_SALT)
    except signing.BadSignature:
        return None
    return data.get("action") if isinstance(data, dict) else None
