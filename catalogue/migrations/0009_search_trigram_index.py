"""A trigram GIN index on search_text, where pg_trgm exists: a misspelt word's similarity is
then computed for the few packages the index picks instead of for every package."""

from django.db import migrations

INDEX = "catalogue_package_search_trgm"


def create_index(apps, schema_editor):
    connection = schema_editor.connection
    if connection.vendor != "postgresql":
        return
    with connection.cursor() as cursor:
        cursor.execute("SELECT 1 FROM pg_extension WHERE extname = 'pg_trgm'")
        if cursor.fetchone() is None:
            return  # search keeps its portable fuzzy match (see 0006)
        cursor.execute(
            f"CREATE INDEX IF NOT EXISTS {INDEX} ON catalogue_package "
            "USING gin (search_text gin_trgm_ops)"
        )


def drop_index(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute(f"DROP INDEX IF EXISTS {INDEX}")


class Migration(migrations.Migration):
    dependencies = [("catalogue", "0008_package_versions")]

    operations = [migrations.RunPython(create_index, drop_index, elidable=True)]
