# Fewer indexes for each state change of a job to write: the session key is covered by
# jobs_session_state, retry_of and requested_by are indexed only where set.

import django.db.models.deletion
from django.conf import settings
from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('jobs', '0004_rerun_after_worker_death'),
        ('play', '0008_turn_undo'),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.AlterField(
            model_name='runtimejob',
            name='requested_by',
            field=models.ForeignKey(blank=True, db_index=False, null=True, on_delete=django.db.models.deletion.SET_NULL, related_name='+', to=settings.AUTH_USER_MODEL),
        ),
        migrations.AlterField(
            model_name='runtimejob',
            name='retry_of',
            field=models.ForeignKey(blank=True, db_index=False, null=True, on_delete=django.db.models.deletion.SET_NULL, related_name='retries', to='jobs.runtimejob'),
        ),
        migrations.AlterField(
            model_name='runtimejob',
            name='session',
            field=models.ForeignKey(db_index=False, on_delete=django.db.models.deletion.CASCADE, related_name='runtime_jobs', to='play.session'),
        ),
        migrations.AddIndex(
            model_name='runtimejob',
            index=models.Index(condition=models.Q(('retry_of__isnull', False)), fields=['retry_of'], name='jobs_retry_of'),
        ),
        migrations.AddIndex(
            model_name='runtimejob',
            index=models.Index(condition=models.Q(('requested_by__isnull', False)), fields=['requested_by'], name='jobs_requested_by'),
        ),
    ]
