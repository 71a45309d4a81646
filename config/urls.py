from django.contrib import admin
from django.urls import include, path

from accounts import views as accounts_views
from config.api import api
from config.health import healthz

# The admin speaks of the hub, not of Django.
admin.site.site_header = "Covel Hub administration"
admin.site.site_title = "Covel Hub admin"

urlpatterns = [
    path("healthz", healthz, name="healthz"),
    path("admin/", admin.site.urls),
    # Before Django's own: sign-in with limits, and reset only when mail is configured.
    path("accounts/login/", accounts_views.LoginView.as_view(), name="login"),
    path("accounts/password_reset/", accounts_views.password_reset, name="password_reset"),
    path("accounts/", include("accounts.urls")),
    path("accounts/", include("django.contrib.auth.urls")),
    path("language/", accounts_views.language_set, name="language"),
    path("api/", api.urls),
    path("approvals/", include("approvals.urls")),
    path("worlds/", include("worlds.urls")),
    path("sources/", include("sources.urls")),
    path("sessions/", include("sessions.urls")),
    path("jobs/", include("jobs.urls")),
    path("installs/", include("installs.urls")),
    path("", include("catalogue.urls")),
]

handler404 = "config.api.not_found_view"
# A database or Redis outage met outside a view answers 503 with Retry-After, not 500.
handler500 = "core.middleware.server_error"
