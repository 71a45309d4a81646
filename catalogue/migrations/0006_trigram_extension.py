"""pg_trgm for fuzzy package search on PostgreSQL, when the database lets us create it.

Creating an extension needs rights a deployment's role may lack: then the migration notes it and
search falls back to its portable fuzzy matching (catalogue/search.py), so it never fails here.
"""

from django.db import migrations


def create_trigram(apps, schema_editor):
    connection = schema_editor.connection
    if connection.vendor != "postgresql":
        return
    with connection.cursor() as cursor:
        cursor.execute("SAVEPOINT covel_trgm")
        try:
            cursor.execute("CREATE EXTENSION IF NOT EXISTS pg_trgm")
        except Exception as exc:  # noqa: BLE001 - any refusal means "not available"
            cursor.execute("ROLLBACK TO SAVEPOINT covel_trgm")
            print(f"\n  pg_trgm not created ({exc}); package search uses its portable fuzzy match")
        else:
            cursor.execute("RELEASE SAVEPOINT covel_trgm")
        # The connection was opened before the extension existed: look again.
        cursor.execute("SELECT 1 FROM pg_extension WHERE extname = 'pg_trgm'")
        connection.covel_trigram = cursor.fetchone() is not None
    from catalogue.search import trigram_forget

    trigram_forget()  # connections opened later in this process ask again


class Migration(migrations.Migration):
    dependencies = [("catalogue", "0005_package_code_state")]

    operations = [migrations.RunPython(create_trigram, migrations.RunPython.noop, elidable=True)]
