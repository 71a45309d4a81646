"""The database refuses to change journal rows too, not only the ORM.

PostgreSQL refuses UPDATE and DELETE per row (TRUNCATE, used only by test flushes, is a
statement of its own). SQLite refuses UPDATE; a DELETE trigger there would also block the test
runner's flush, which deletes row by row.
"""
from django.db import migrations

PG_FUNCTION = """
CREATE OR REPLACE FUNCTION approvals_journal_append_only() RETURNS trigger AS $$
BEGIN
    RAISE EXCEPTION 'approval journal entries are append-only (% refused)', TG_OP;
END;
$$ LANGUAGE plpgsql;
"""
PG_TRIGGER = """
CREATE TRIGGER approvals_journal_append_only
BEFORE UPDATE OR DELETE ON approvals_journalentry
FOR EACH ROW EXECUTE FUNCTION approvals_journal_append_only();
"""
PG_DROP = """
DROP TRIGGER IF EXISTS approvals_journal_append_only ON approvals_journalentry;
DROP FUNCTION IF EXISTS approvals_journal_append_only();
"""
SQLITE_TRIGGER = """
CREATE TRIGGER approvals_journal_no_update
BEFORE UPDATE ON approvals_journalentry
BEGIN
    SELECT RAISE(ABORT, 'approval journal entries are append-only (UPDATE refused)');
END;
"""
SQLITE_DROP = "DROP TRIGGER IF EXISTS approvals_journal_no_update;"


def forwards(apps, schema_editor) -> None:
    vendor = schema_editor.connection.vendor
    if vendor == "postgresql":
        schema_editor.execute(PG_FUNCTION, None)
        schema_editor.execute(PG_TRIGGER, None)
    elif vendor == "sqlite":
        schema_editor.execute(SQLITE_TRIGGER)


def backwards(apps, schema_editor) -> None:
    vendor = schema_editor.connection.vendor
    if vendor == "postgresql":
        schema_editor.execute(PG_DROP, None)
    elif vendor == "sqlite":
        schema_editor.execute(SQLITE_DROP)


class Migration(migrations.Migration):
    dependencies = [("approvals", "0001_initial")]

    operations = [migrations.RunPython(forwards, backwards)]
