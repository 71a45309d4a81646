from django.apps import AppConfig


class InstallsConfig(AppConfig):
    name = "installs"
    label = "installs"
    verbose_name = "Package installs"

    def ready(self) -> None:
        # Register the tasks in every process: the pages send installs.run_job by name.
        from installs import tasks  # noqa: F401
