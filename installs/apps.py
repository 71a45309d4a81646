from django.apps import AppConfig


class InstallsConfig(AppConfig):
    name = "installs"
    label = "installs"
    verbose_name = "Package installs"
