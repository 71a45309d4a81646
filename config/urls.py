from django.contrib import admin
from django.urls import include, path

from config.api import api
from config.health import healthz

urlpatterns = [
    path("healthz", healthz, name="healthz"),
    path("admin/", admin.site.urls),
    path("accounts/", include("django.contrib.auth.urls")),
    path("api/", api.urls),
    path("approvals/", include("approvals.urls")),
    path("worlds/", include("worlds.urls")),
    path("sources/", include("sources.urls")),
    path("sessions/", include("sessions.urls")),
    path("jobs/", include("jobs.urls")),
    path("", include("catalogue.urls")),
]
