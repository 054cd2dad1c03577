"""A partial index of the label documents by (session, target): each indexed batch replaces the
labels in force on the targets it labels (store/search_index.write_rows), found here instead of by
reading every document of the session at each batch."""

from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("sessions_app", "0021_run_start"),
    ]

    operations = [
        migrations.AddIndex(
            model_name="searchdoc",
            index=models.Index(
                condition=models.Q(("kind", "label")), fields=["session", "entry_id"], name="searchdoc_label_target"
            ),
        ),
    ]
