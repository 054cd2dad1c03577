"""RunStart: the entries whose parent is not the entry just before them (store/run_starts.py), so
that a path is read as a few ranges of seqs. Recorded here for every entry already stored; new
entries get theirs beside the search index."""

import django.db.models.deletion
from django.db import migrations, models

# store/run_starts.py's rule over every entry (tests/store/test_run_starts.py keeps them the same).
RECORD_ALL = """
INSERT INTO sessions_app_runstart (session_id, seq)
SELECT e.session_id, e.seq FROM sessions_app_entry e
WHERE NOT EXISTS (
    SELECT 1 FROM sessions_app_entry p
    WHERE p.session_id = e.session_id AND p.seq = e.seq - 1 AND p.entry_id = e.parent_id
)
"""


class Migration(migrations.Migration):
    dependencies = [
        ("sessions_app", "0020_search_prefix_index"),
    ]

    operations = [
        migrations.CreateModel(
            name="RunStart",
            fields=[
                ("id", models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name="ID")),
                ("seq", models.PositiveIntegerField()),
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
                "constraints": [models.UniqueConstraint(fields=("session", "seq"), name="runstart_session_seq")],
            },
        ),
        migrations.RunSQL(RECORD_ALL, migrations.RunSQL.noop),
    ]
