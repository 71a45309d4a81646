from django.urls import path

from jobs import views

app_name = "jobs"
urlpatterns = [
    path("", views.dashboard, name="dashboard"),
    path("sessions/<uuid:session_id>/panel/", views.session_panel, name="session-panel"),
    path("<uuid:job_id>/cancel/", views.job_action, {"action": "cancel"}, name="cancel"),
    path("<uuid:job_id>/retry/", views.job_action, {"action": "retry"}, name="retry"),
]
