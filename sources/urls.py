from django.urls import path

from sources import views

app_name = "sources"
urlpatterns = [
    path("", views.source_plugin_list, name="list"),
    path("sync/", views.source_plugins_sync, name="sync"),
    path("<str:plugin_id>/", views.source_plugin_detail, name="detail"),
    path("<str:plugin_id>/jobs/<str:job_name>/run/", views.source_job_run_now, name="run-now"),
]
