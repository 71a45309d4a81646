# SessionEvent now belongs to the eventlog app (eventlog.0001 takes over its state); the
# table play_sessionevent and its rows stay where they are.

from django.db import migrations


class Migration(migrations.Migration):
    dependencies = [
        ("play", "0003_interactions"),
        ("eventlog", "0001_initial"),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[migrations.DeleteModel(name="SessionEvent")],
            database_operations=[],
        ),
    ]
