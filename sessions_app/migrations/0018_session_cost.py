"""Session.cost and total_tokens: what its assistant messages cost, kept with the listing fields
(core/listing.py) by every write, so the session list shows it without reading entries. Existing
sessions get theirs from their assistant entries, read here once."""

from __future__ import annotations

from typing import Any

from django.db import migrations, models

from sessions_app.core import jsjson
from sessions_app.core.listing import MAX_TOTAL
from sessions_app.core.usage import entry_usage

BATCH = 2000
FIELDS = {"cost": models.FloatField(default=0.0), "total_tokens": models.BigIntegerField(default=0)}
SQLITE_TYPES = {"cost": "real", "total_tokens": "bigint"}


def _add(apps: Any, schema_editor: Any) -> None:
    Session = apps.get_model("sessions_app", "Session")
    for name in FIELDS:
        if schema_editor.connection.vendor == "sqlite":
            schema_editor.execute(
                f'ALTER TABLE "sessions_app_session" ADD COLUMN "{name}" {SQLITE_TYPES[name]} NOT NULL DEFAULT 0'
            )
        else:
            schema_editor.add_field(Session, Session._meta.get_field(name))


def _remove(apps: Any, schema_editor: Any) -> None:
    Session = apps.get_model("sessions_app", "Session")
    for name in FIELDS:
        if schema_editor.connection.vendor == "sqlite":
            schema_editor.execute(f'ALTER TABLE "sessions_app_session" DROP COLUMN "{name}"')
        else:
            schema_editor.remove_field(Session, Session._meta.get_field(name))


def _fill(apps: Any, schema_editor: Any) -> None:
    Session = apps.get_model("sessions_app", "Session")
    Entry = apps.get_model("sessions_app", "Entry")
    for pk in Session.objects.values_list("pk", flat=True).iterator():
        cost, tokens = 0.0, 0
        # Seq order, as the listing adds them: the same float sum a new import gets.
        replies = Entry.objects.filter(session_id=pk, type="message", role="assistant").order_by("seq")
        for raw in replies.values_list("raw", flat=True).iterator(chunk_size=BATCH):
            usage = entry_usage(jsjson.loads(raw))
            if usage is not None:
                cost += usage.cost
                tokens = min(tokens + int(usage.total_tokens), MAX_TOTAL)
        if cost or tokens:
            Session.objects.filter(pk=pk).update(cost=cost, total_tokens=tokens)


class Migration(migrations.Migration):
    dependencies = [
        ("sessions_app", "0017_search_indexing"),
    ]

    operations = [
        # The state first, so that _add and _remove find the fields on the historical model.
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.AddField(model_name="session", name=name, field=field) for name, field in FIELDS.items()
            ],
        ),
        migrations.RunPython(_add, _remove),
        migrations.RunPython(_fill, migrations.RunPython.noop),
    ]
