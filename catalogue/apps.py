from django.apps import AppConfig
from django.db.models.signals import post_migrate


class CatalogueConfig(AppConfig):
    name = "catalogue"

    def ready(self) -> None:
        from catalogue.search_index import fts_after_migrate

        # A later migration that rebuilds catalogue_package on SQLite drops the search
        # triggers with the old table: put them back after every migrate.
        post_migrate.connect(fts_after_migrate, sender=self, dispatch_uid="catalogue.fts")
