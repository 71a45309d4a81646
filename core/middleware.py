"""Middleware below every app: the Content-Security-Policy header and a database that is busy.

Both are async-capable, so under ASGI they add no thread hop of their own."""

from __future__ import annotations

import logging
import secrets
from collections.abc import Callable
from typing import Any

from asgiref.sync import iscoroutinefunction, markcoroutinefunction
from django.conf import settings
from django.db import OperationalError
from django.http import HttpRequest, HttpResponse, JsonResponse

log = logging.getLogger(__name__)

# How long a client should wait before trying again when the database had no connection free.
DATABASE_BUSY_RETRY_SECONDS = 2


class ContentSecurityPolicyMiddleware:
    """Every response gets settings.CONTENT_SECURITY_POLICY unless the view set its own.

    script-src also names a fresh nonce (request.csp_nonce): a template's own <script> block
    may carry it; inline event handlers (onclick=...) never run."""

    sync_capable = True
    async_capable = True

    def __init__(self, get_response: Callable[[HttpRequest], Any]) -> None:
        self.get_response = get_response
        self.policy = getattr(settings, "CONTENT_SECURITY_POLICY", "")
        self.is_async = iscoroutinefunction(get_response)
        if self.is_async:
            markcoroutinefunction(self)

    def __call__(self, request: HttpRequest) -> Any:
        if self.is_async:
            return self.__acall__(request)
        nonce = self._nonce(request)
        return self._set(self.get_response(request), nonce)

    async def __acall__(self, request: HttpRequest) -> HttpResponse:
        nonce = self._nonce(request)
        return self._set(await self.get_response(request), nonce)

    @staticmethod
    def _nonce(request: HttpRequest) -> str:
        nonce = secrets.token_urlsafe(16)
        request.csp_nonce = nonce  # type: ignore[attr-defined]
        return nonce

    def _set(self, response: HttpResponse, nonce: str) -> HttpResponse:
        if self.policy and "Content-Security-Policy" not in response:
            response["Content-Security-Policy"] = self.policy.replace(
                "script-src ", f"script-src 'nonce-{nonce}' ", 1
            )
        return response


def database_busy_response(exc: Exception) -> JsonResponse:
    response = JsonResponse(
        {
            "code": "database_unavailable",
            "message": "the database has no connection free right now; try again shortly",
            "details": {"retryAfter": DATABASE_BUSY_RETRY_SECONDS},
        },
        status=503,
    )
    response["Retry-After"] = str(DATABASE_BUSY_RETRY_SECONDS)
    return response


class DatabaseBusyMiddleware:
    """A request that found no database connection (pool exhausted, server at its connection
    limit, database restarting) answers 503 with Retry-After instead of a 500: nothing was
    committed, so the client may simply send it again."""

    sync_capable = True
    async_capable = False

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        return self.get_response(request)

    def process_exception(self, request: HttpRequest, exc: Exception) -> HttpResponse | None:
        if isinstance(exc, OperationalError) and _is_connection_problem(exc):
            log.warning("no database connection for %s %s: %s", request.method, request.path, exc)
            return database_busy_response(exc)
        return None


def _is_connection_problem(exc: Exception) -> bool:
    text = str(exc).lower()
    cause = exc.__cause__
    name = type(cause).__name__ if cause is not None else ""
    return name in {"PoolTimeout", "TooManyConnections", "ConnectionTimeout"} or any(
        marker in text
        for marker in (
            "too many clients",
            "too many connections",
            "remaining connection slots",
            "couldn't get a connection",
            "connection refused",
            "could not connect",
            "the database system is starting up",
            "the database system is shutting down",
        )
    )
