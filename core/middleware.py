"""Middleware below every app: the Content-Security-Policy header, and the answer when the
database or Redis is busy, down or restarting (503 with Retry-After, never a 500).

The CSP middleware is async-capable, so under ASGI it adds no thread hop of its own."""

from __future__ import annotations

import logging
import secrets
import sys
from collections.abc import Callable
from typing import Any

from asgiref.sync import iscoroutinefunction, markcoroutinefunction
from django.conf import settings
from django.db import InterfaceError, OperationalError
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
    return service_unavailable_response(exc, service="database")


def service_unavailable_response(exc: Exception, *, service: str) -> JsonResponse:
    """503 with Retry-After: the request found no database (or Redis) connection; nothing of
    it was committed, so the client may simply send it again."""
    if service == "database":
        code, what = "database_unavailable", "the database has no connection free right now"
    else:
        code, what = "service_unavailable", f"{service} is not reachable right now"
    response = JsonResponse(
        {
            "code": code,
            "message": f"{what}; try again shortly",
            "details": {"retryAfter": DATABASE_BUSY_RETRY_SECONDS},
        },
        status=503,
    )
    response["Retry-After"] = str(DATABASE_BUSY_RETRY_SECONDS)
    return response


class DatabaseBusyMiddleware:
    """A view that found no database or Redis connection (pool exhausted, server at its
    connection limit, server down or restarting) answers 503 with Retry-After instead of a 500.

    It sees the views' exceptions; server_error below (settings' handler500) catches the same
    problems raised anywhere else in the stack (the session or user lookup in the middleware
    above, the session's save on the way out)."""

    sync_capable = True
    async_capable = False

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        return self.get_response(request)

    def process_exception(self, request: HttpRequest, exc: Exception) -> HttpResponse | None:
        service = unavailable_service(exc)
        if service is None:
            return None
        log.warning("no %s connection for %s %s: %s", service, request.method, request.path, exc)
        return service_unavailable_response(exc, service=service)


def server_error(request: HttpRequest) -> HttpResponse:
    """handler500: an outage found outside a view (a middleware's query, the session's save)
    still answers 503; anything else is Django's own 500."""
    exc = sys.exc_info()[1]
    service = unavailable_service(exc) if isinstance(exc, Exception) else None
    if service is not None:
        log.warning("no %s connection for %s %s: %s", service, request.method, request.path, exc)
        return service_unavailable_response(exc, service=service)
    from django.views.defaults import server_error as django_server_error

    return django_server_error(request)


# What PostgreSQL, psycopg and SQLite say when the connection itself is the problem (not the
# query): the server refused or dropped it, is starting or stopping, or has no slot free.
_CONNECTION_MARKERS = (
    "too many clients",
    "too many connections",
    "remaining connection slots",
    "couldn't get a connection",
    "connection refused",
    "could not connect",
    "the database system is starting up",
    "the database system is shutting down",
    "the database system is in recovery mode",
    "terminating connection",
    "server closed the connection",
    "connection already closed",
    "the connection is closed",
    "connection is lost",
    "consuming input failed",
    "ssl syscall error",
    "no connection to the server",
    "connection timeout expired",
    "cannot connect now",
)
_CONNECTION_CAUSES = {"PoolTimeout", "TooManyConnections", "ConnectionTimeout", "AdminShutdown"}


def unavailable_service(exc: BaseException | None) -> str | None:
    """ "database" or "redis" when exc (or what caused it) is a lost or refused connection to
    that service, else None (a bug, a constraint, a bad query: those stay 500s)."""
    seen = 0
    while exc is not None and seen < 5:
        seen += 1
        if isinstance(exc, (OperationalError, InterfaceError)) and _is_connection_problem(exc):
            return "database"
        module = type(exc).__module__.split(".")[0]
        name = type(exc).__name__
        if module == "psycopg" and (name in _CONNECTION_CAUSES or _is_connection_problem(exc)):
            return "database"
        if module == "redis" and name in {
            "ConnectionError",
            "TimeoutError",
            "BusyLoadingError",
            "ReadOnlyError",
            "MasterDownError",
        }:
            return "redis"
        if module == "kombu" and name == "OperationalError":  # the broker (Redis) is away
            return "redis"
        exc = exc.__cause__ or exc.__context__
    return None


def _is_connection_problem(exc: BaseException) -> bool:
    if isinstance(exc, InterfaceError):
        return True  # psycopg's "connection already closed": never a problem of the query
    text = str(exc).lower()
    cause = exc.__cause__
    name = type(cause).__name__ if cause is not None else ""
    return name in _CONNECTION_CAUSES or any(marker in text for marker in _CONNECTION_MARKERS)
