from django.urls import path

from approvals import views

app_name = "approvals"
urlpatterns = [
    path("", views.approval_queue, name="queue"),
    path("<int:request_id>/", views.approval_detail, name="detail"),
    path("<int:request_id>/decision", views.approval_decision, name="decide"),
]
