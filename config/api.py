"""The API root: one django-ninja router per app, OpenAPI served at /api/docs."""

from ninja import NinjaAPI

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
