from __future__ import annotations

from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("sessions_app", "0016_search_speed"),
    ]

    operations = [
        migrations.AddField(
            model_name="session",
            name="indexed_seq",
            field=models.PositiveIntegerField(blank=True, null=True),
        ),
    ]
