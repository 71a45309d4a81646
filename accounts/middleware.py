"""`Authorization: Bearer <token>` on the API: the request acts as the token's owner.

A token request carries no cookie, so it is not exposed to cross-site forgery: the API's auth
(core/auth.py) skips the CSRF check for it. A wrong or revoked token is refused with 401 at
once, rather than quietly treated as anonymous."""

from __future__ import annotations

from collections.abc import Callable

from django.http import HttpRequest, HttpResponse, JsonResponse

from accounts.selectors import token_authenticate
from accounts.services import token_mark_used
from core.errors import error_body


def unauthorized(message: str) -> JsonResponse:
    response = JsonResponse(error_body("not_authenticated", message), status=401)
    response["WWW-Authenticate"] = 'Bearer realm="covel-hub"'
    return response


class BearerTokenMiddleware:
    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        header = request.headers.get("Authorization", "")
        if header[:7].lower() == "bearer " and request.path.startswith("/api/"):
            token = token_authenticate(raw=header[7:].strip())
            if token is None:
                return unauthorized("the bearer token is not valid (unknown or revoked)")
            token_mark_used(token=token)
            request.user = token.user
            request.covel_token = token  # type: ignore[attr-defined]
            request._dont_enforce_csrf_checks = True  # type: ignore[attr-defined]
        return self.get_response(request)
