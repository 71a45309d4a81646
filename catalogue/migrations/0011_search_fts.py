"""SQLite: an FTS5 trigram index on search_text, kept in step by triggers
(catalogue/search_index.py); nothing on PostgreSQL, whose trigram GIN index is 0009's.
Everywhere: an index on (name_key, package_id), the list's order by name."""

from django.db import migrations, models


def create_index(apps, schema_editor):
    from catalogue.search_index import fts_ensure

    fts_ensure(schema_editor.connection)


def drop_index(apps, schema_editor):
    from catalogue.search_index import fts_drop

    fts_drop(schema_editor.connection)


class Migration(migrations.Migration):
    dependencies = [("catalogue", "0010_package_file_stats")]

    operations = [
        migrations.RunPython(create_index, drop_index, elidable=True),
        migrations.AddIndex(
            model_name="package",
            index=models.Index(
                fields=["name_key", "package_id"], name="catalogue_package_name_order"
            ),
        ),
    ]
