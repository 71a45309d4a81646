app_name = "jobs"
urlpatterns: list = []
