"""The API's authentication: Django's session, or a bearer token (accounts/middleware.py).

ninja's django_auth checks CSRF before it looks at the user, so an anonymous write got a 403
CSRF error; here an anonymous caller gets 401, a token caller skips CSRF (no cookie is
involved), and a signed-in browser keeps the CSRF check on writes."""

from __future__ import annotations

from typing import Any

from django.http import HttpRequest
from ninja.security import SessionAuth


class HubAuth(SessionAuth):
    def _get_key(self, request: HttpRequest) -> str | None:
        if getattr(request, "covel_token", None) is not None:
            return None
        if not request.user.is_authenticated:
            return None
        return super()._get_key(request)

    def authenticate(self, request: HttpRequest, key: str | None) -> Any:
        return request.user if request.user.is_authenticated else None


hub_auth = HubAuth()
