from django.contrib import admin
from django.urls import include, path

from config.api import api

urlpatterns = [
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

handler404 = "config.api.not_found_view"
