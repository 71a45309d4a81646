from __future__ import annotations

from django.apps import AppConfig


class JobsConfig(AppConfig):
    name = "jobs"
    verbose_name = "Detached runtime jobs"

    def ready(self) -> None:
        # Register the Celery tasks in every process, the web process included: the services
        # send jobs.run_job by name (jobs.services.send_run_job) rather than import the task.
        from jobs import tasks  # noqa: F401
