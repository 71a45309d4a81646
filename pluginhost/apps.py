from django.apps import AppConfig


class PluginhostConfig(AppConfig):
    name = "pluginhost"

    def ready(self) -> None:
        # The catalogue's sync and approvals check a package's code through this slot.
        from catalogue import callouts
        from pluginhost.codecheck import package_code_checks

        callouts.package_code_checks.register(package_code_checks)

        # A Celery prefork child stops its own Node hosts when it exits (atexit does not run there).
        from celery.signals import worker_process_shutdown

        from pluginhost.pool import stop_hosts

        worker_process_shutdown.connect(
            lambda **_: stop_hosts(), weak=False, dispatch_uid="pluginhost-stop"
        )
