"""The API root: one django-ninja router per app, OpenAPI served at /api/docs.

Every refusal leaves in the one error shape of core/errors.py, whoever raised it: an app's
ApiError (its own problem classes subclass it), ninja's validation, auth and HTTP errors, a
Django Http404 or ObjectDoesNotExist. See docs/api.md.
"""

from __future__ import annotations

from typing import Any

from django.core.exceptions import ObjectDoesNotExist
from django.http import Http404, HttpRequest, HttpResponse
from ninja import NinjaAPI
from ninja.errors import AuthenticationError, HttpError, ValidationError

from approvals.api import router as approvals_router
from catalogue.api import router as catalogue_router
from core.errors import ApiError, error_body, issue, pointer
from installs.api import router as installs_router
from jobs.api import router as jobs_router
from pluginhost.api import router as pluginhost_router
from sessions.api import router as sessions_router
from sessions.commands import CommandError
from sources.api import router as sources_router
from worlds.api import router as worlds_router

api = NinjaAPI(title="Covel Hub API", version="1", urls_namespace="api")
api.add_router("", catalogue_router)
api.add_router("", approvals_router)
api.add_router("", worlds_router)
api.add_router("", pluginhost_router)
api.add_router("", sources_router)
api.add_router("", sessions_router)
api.add_router("", jobs_router)
api.add_router("", installs_router)

# ninja's HttpError carries a status and a message only: the code follows from the status.
HTTP_CODES = {
    400: "bad_request",
    401: "not_authenticated",
    403: "forbidden",
    404: "not_found",
    405: "method_not_allowed",
    409: "conflict",
    413: "too_large",
    429: "throttled",
}


def respond(
    request: HttpRequest,
    status: int,
    code: str,
    message: str,
    details: dict[str, Any] | None = None,
    headers: dict[str, str] | None = None,
) -> HttpResponse:
    response = api.create_response(request, error_body(code, message, details), status=status)
    for name, value in (headers or {}).items():
        response[name] = value
    return response


@api.exception_handler(ApiError)
def _api_error(request: HttpRequest, exc: ApiError) -> HttpResponse:
    return respond(request, exc.status, exc.code, exc.message, exc.details, exc.headers)


@api.exception_handler(CommandError)
def _command_error(request: HttpRequest, exc: CommandError) -> HttpResponse:
    # A slash command that does not parse: the argument it is about, when there is one.
    details = {"argument": exc.argument} if exc.argument else {}
    return respond(request, 422, exc.code, exc.message, details)


@api.exception_handler(ValidationError)
def _validation_error(request: HttpRequest, exc: ValidationError) -> HttpResponse:
    issues = [_issue_of(error) for error in exc.errors]
    first = issues[0] if issues else None
    message = f"{first['path']}: {first['message']}" if first else "the request is not valid"
    if len(issues) > 1:
        message += f" (and {len(issues) - 1} more)"
    return respond(request, 422, "invalid", message, {"issues": issues})


def _issue_of(error: dict[str, Any]) -> dict[str, str]:
    loc = list(error.get("loc") or [])
    # ninja names a body parameter after the view's argument (body/data/world): the pointer is
    # into the JSON document the client sent, so that name goes.
    if len(loc) >= 2 and loc[0] == "body":
        loc = ["body", *loc[2:]]
    return issue(pointer(loc), str(error.get("type") or "invalid"), str(error.get("msg") or ""))


@api.exception_handler(AuthenticationError)
def _not_authenticated(request: HttpRequest, exc: AuthenticationError) -> HttpResponse:
    return respond(
        request,
        401,
        "not_authenticated",
        "sign in, or send Authorization: Bearer <token> (accounts/tokens/)",
        headers={"WWW-Authenticate": 'Bearer realm="covel-hub"'},
    )


@api.exception_handler(HttpError)
def _http_error(request: HttpRequest, exc: HttpError) -> HttpResponse:
    code = HTTP_CODES.get(exc.status_code, "error")
    if exc.status_code == 403 and "csrf" in str(exc).lower():
        code = "csrf_failed"
    headers = {}
    wait = getattr(exc, "wait", None)  # ninja's Throttled
    if exc.status_code == 429 and wait is not None:
        headers["Retry-After"] = str(int(wait))
    details = {"retryAfter": int(wait)} if headers else {}
    return respond(request, exc.status_code, code, str(exc), details, headers)


@api.exception_handler(Http404)
def _not_found(request: HttpRequest, exc: Exception) -> HttpResponse:
    return respond(request, 404, "not_found", str(exc) or "not found")


@api.exception_handler(ObjectDoesNotExist)
def _does_not_exist(request: HttpRequest, exc: ObjectDoesNotExist) -> HttpResponse:
    return respond(request, 404, "not_found", str(exc) or "not found")


def not_found_view(request: HttpRequest, exception: Exception | None = None) -> HttpResponse:
    """Django's 404 for an address no route matches: JSON under /api/, the usual page elsewhere."""
    if request.path.startswith("/api/"):
        return respond(request, 404, "not_found", f"no API operation at {request.path}")
    from django.views.defaults import page_not_found

    return page_not_found(request, exception)
