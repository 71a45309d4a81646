from django.urls import path

from installs import views

app_name = "installs"
urlpatterns = [
    path("", views.installed, name="installed"),
    path("add/", views.add, name="add"),
    path("add/confirm", views.confirm, name="confirm"),
    path("jobs/<int:job_id>/", views.job, name="job"),
    path("packages/<str:package_id>/check", views.check, name="check"),
    path("packages/<str:package_id>/update/", views.update, name="update"),
    path("packages/<str:package_id>/remove/", views.remove, name="remove"),
    path("directory/", views.directory, name="directory"),
    path("directory/source", views.directory_set, name="directory_set"),
    path("directory/<str:entry_id>/", views.directory_detail, name="directory_detail"),
]
