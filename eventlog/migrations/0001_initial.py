# SessionEvent moves here from the play app: the model's state only, the table stays
# play_sessionevent (play.0004 removes the model from play's state, not the table).

import django.db.models.deletion
from django.db import migrations, models


class Migration(migrations.Migration):
    initial = True

    dependencies = [
        ("play", "0003_interactions"),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.CreateModel(
                    name="SessionEvent",
                    fields=[
                        (
                            "id",
                            models.BigAutoField(
                                auto_created=True,
                                primary_key=True,
                                serialize=False,
                                verbose_name="ID",
                            ),
                        ),
                        ("seq", models.PositiveBigIntegerField()),
                        ("type", models.CharField(max_length=100)),
                        ("payload", models.JSONField(default=dict)),
                        ("created_at", models.DateTimeField(auto_now_add=True)),
                        (
                            "session",
                            models.ForeignKey(
                                on_delete=django.db.models.deletion.CASCADE,
                                related_name="events",
                                to="play.session",
                            ),
                        ),
                    ],
                    options={
                        "db_table": "play_sessionevent",
                        "ordering": ["session", "seq"],
                        "constraints": [
                            models.UniqueConstraint(
                                fields=("session", "seq"), name="uniq_session_event_seq"
                            )
                        ],
                    },
                ),
            ],
            database_operations=[],
        ),
    ]
