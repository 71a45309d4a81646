from django.contrib import admin
from django.urls import include, path

from accounts.views import language_set
from config.api import api

# The admin speaks of the hub, not of Django.
admin.site.site_header = "Covel Hub administration"
admin.site.site_title = "Covel Hub admin"

urlpatterns = [
    path("admin/", admin.site.urls),
    path("accounts/", include("django.contrib.auth.urls")),
    path("language/", language_set, name="language"),
    path("api/", api.urls),
    path("approvals/", include("approvals.urls")),
    path("worlds/", include("worlds.urls")),
    path("sources/", include("sources.urls")),
    path("sessions/", include("sessions.urls")),
    path("jobs/", include("jobs.urls")),
    path("", include("catalogue.urls")),
]
