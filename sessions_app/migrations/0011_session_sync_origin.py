"""Session sync bookkeeping for `piweb sync`: the stored source file's line count, and a mirror's
origin (host, path) and last push time. Nullable without default, so SQLite adds the columns in
place (rebuilding the table would drop the entry triggers of 0002)."""

from __future__ import annotations

from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("sessions_app", "0010_session_source_id"),
    ]

    operations = [
        migrations.AddField(
            model_name="session", name="source_lines", field=models.BigIntegerField(blank=True, null=True)
        ),
        migrations.AddField(
            model_name="session", name="origin_host", field=models.CharField(blank=True, max_length=255, null=True)
        ),
        migrations.AddField(model_name="session", name="origin_path", field=models.TextField(blank=True, null=True)),
        migrations.AddField(model_name="session", name="pushed_at", field=models.DateTimeField(blank=True, null=True)),
        migrations.AddField(model_name="session", name="mirror_seqs", field=models.JSONField(blank=True, null=True)),
    ]
