from django.urls import path

from sessions import views

app_name = "sessions"
urlpatterns = [
    path("<uuid:session_id>/", views.session_detail, name="detail"),
]
