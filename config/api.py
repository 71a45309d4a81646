"""The API root: one django-ninja router per app, OpenAPI served at /api/docs."""

from django.http import HttpRequest
from ninja import NinjaAPI
from ninja.errors import AuthenticationError, Throttled

from accounts.middleware import unauthorized
from approvals.api import router as approvals_router
from catalogue.api import router as catalogue_router
from jobs.api import router as jobs_router
from pluginhost.api import router as pluginhost_router
from sessions.api import router as sessions_router
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


@api.exception_handler(AuthenticationError)
def _unauthorized(request: HttpRequest, exc: AuthenticationError):
    return unauthorized("sign in, or send Authorization: Bearer <token> (accounts/tokens/)")


@api.exception_handler(Throttled)
def _throttled(request: HttpRequest, exc: Throttled):
    wait = max(1, int(exc.wait or 1))
    response = api.create_response(
        request,
        {
            "code": "throttled",
            "message": f"too many turns or model calls; try again in {wait} s",
            "details": {"retryAfter": wait},
        },
        status=429,
    )
    response["Retry-After"] = str(wait)
    return response
