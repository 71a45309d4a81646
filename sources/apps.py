from django.apps import AppConfig


class SourcesConfig(AppConfig):
    name = "sources"
    verbose_name = "Source plugins"

    def ready(self) -> None:
        # manage.py validate_plugin (catalogue) loads a source plugin folder through this slot.
        from catalogue import callouts
        from sources.manifest.loader import load_source_plugin

        callouts.source_plugin_loader.register(load_source_plugin)
