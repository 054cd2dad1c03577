"""MessageSpan: where each message entry's line holds its message's JSON (store/message_spans.py).
Existing sessions have none until reindexed: their contexts read the lines as before."""

import django.db.models.deletion
from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("sessions_app", "0018_session_cost"),
    ]

    operations = [
        migrations.CreateModel(
            name="MessageSpan",
            fields=[
                ("id", models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name="ID")),
                ("seq", models.PositiveIntegerField()),
                ("start", models.PositiveIntegerField()),
                ("length", models.PositiveIntegerField()),
                (
                    "session",
                    models.ForeignKey(
                        db_constraint=False,
                        db_index=False,
                        on_delete=django.db.models.deletion.DO_NOTHING,
                        related_name="+",
                        to="sessions_app.session",
                    ),
                ),
            ],
            options={
                "constraints": [models.UniqueConstraint(fields=("session", "seq"), name="messagespan_session_seq")],
            },
        ),
    ]
