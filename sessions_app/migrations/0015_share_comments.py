"""A share link may show the session's review comments and verdicts, if its creator chose that
(off by default: links made before this show none)."""

from __future__ import annotations

from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [("sessions_app", "0014_team_slug_scores")]

    operations = [
        migrations.AddField(
            model_name="sharelink", name="include_comments", field=models.BooleanField(default=False)
        ),
    ]
