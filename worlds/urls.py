from django.urls import path

from worlds import views

app_name = "worlds"
urlpatterns = [
    path("", views.world_list, name="list"),
    path("<slug:world_id>/", views.world_detail, name="detail"),
]
