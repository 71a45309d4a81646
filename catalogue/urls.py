from django.urls import path

from catalogue import views

app_name = "catalogue"
urlpatterns = [
    path("", views.package_list, name="list"),
    path("sync/", views.package_resync, name="sync"),
    path("packages/<str:package_id>/", views.package_detail, name="detail"),
    path("packages/<str:package_id>/links/<int:link_id>/", views.package_link, name="link"),
    path("packages/<str:package_id>/files/<path:path>", views.package_file_view, name="file"),
]
