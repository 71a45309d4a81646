from django.apps import AppConfig


class InstallsConfig(AppConfig):
    name = "installs"
    label = "installs"
    verbose_name = "Package installs"

    def ready(self) -> None:
        # Register the tasks in every process: the pages send installs.run_job by name.
        from catalogue import callouts
        from installs import tasks  # noqa: F401
        from installs.selectors import available_entries, available_entry, package_provenance

        callouts.package_provenance.register(package_provenance)
        callouts.available_entries.register(available_entries)
        callouts.available_entry.register(available_entry)
