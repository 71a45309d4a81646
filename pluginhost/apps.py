from django.apps import AppConfig


class PluginhostConfig(AppConfig):
    name = "pluginhost"

    def ready(self) -> None:
        # A Celery prefork child stops its own Node host when it exits (atexit does not run there).
        from celery.signals import worker_process_shutdown

        from pluginhost.host import _stop_host

        worker_process_shutdown.connect(
            lambda **_: _stop_host(), weak=False, dispatch_uid="pluginhost-stop"
        )
