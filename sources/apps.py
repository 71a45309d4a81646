from django.apps import AppConfig


class SourcesConfig(AppConfig):
    name = "sources"
    verbose_name = "Source plugins"

    def ready(self) -> None:
        # Beat dispatches due source jobs every few seconds. settings.CELERY_BEAT_SCHEDULE is
        # the dict Celery reads beat_schedule from, so an entry added here reaches beat.
        from django.conf import settings

        from sources.tasks import DISPATCH_ENTRY, beat_entry

        schedule = getattr(settings, "CELERY_BEAT_SCHEDULE", None)
        if isinstance(schedule, dict):
            schedule.setdefault(DISPATCH_ENTRY, beat_entry())
