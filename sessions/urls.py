from django.urls import path

from sessions import views
from sessions.package_ui.views import package_ui_fragment

app_name = "sessions"
urlpatterns = [
    path("", views.session_list, name="list"),
    path("new/", views.session_new, name="new"),
    path("<uuid:session_id>/", views.session_detail, name="detail"),
    path("<uuid:session_id>/status/", views.session_status, name="status"),
    path("<uuid:session_id>/forms/", views.session_forms, name="forms"),
    path("<uuid:session_id>/ui/", package_ui_fragment, name="package-ui"),
    path("<uuid:session_id>/undo/", views.session_undo, name="undo"),
    path("<uuid:session_id>/regenerate/", views.session_regenerate, name="regenerate"),
    path("<uuid:session_id>/seats/<str:seat_id>/", views.session_seat, name="seat"),
]
