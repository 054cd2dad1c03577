from __future__ import annotations

from django.db import migrations, models


class Migration(migrations.Migration):
    # Both columns are nullable without default, so SQLite adds them with ALTER TABLE: a rebuild
    # of the entry table would drop its append-only triggers, and one of the session table trips
    # them (they refer to it).
    dependencies = [("sessions_app", "0003_streaming_turns_viewers")]

    operations = [
        migrations.AddField(
            model_name="entry",
            name="chain_hash",
            field=models.CharField(max_length=64, null=True),
        ),
        migrations.AddField(
            model_name="session",
            name="entries_digest",
            field=models.CharField(blank=True, max_length=64, null=True),
        ),
    ]
