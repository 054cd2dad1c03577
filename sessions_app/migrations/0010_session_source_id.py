"""Session.source_id: pi's session id for an imported session whose server id (public_id) had to
differ, because another account holds pi's id. Nullable without default, so SQLite adds the column
in place (rebuilding the table would drop the entry triggers of 0002)."""

from __future__ import annotations

from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("sessions_app", "0009_session_staging"),
    ]

    operations = [
        migrations.AddField(
            model_name="session",
            name="source_id",
            field=models.CharField(blank=True, max_length=200, null=True),
        ),
        migrations.AddIndex(
            model_name="session",
            index=models.Index(fields=["source_id"], name="session_source_id"),
        ),
    ]
