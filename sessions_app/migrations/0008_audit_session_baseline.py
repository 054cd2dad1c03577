"""The audit trail accounts for every session from now on (store/accounting.py): each stored
session it has never named is recorded once, with its owner and team ("session.baseline")."""

from __future__ import annotations

from django.db import migrations


def baseline(apps, schema_editor):  # type: ignore[no-untyped-def]
    from sessions_app.store.accounting import sessions_baseline

    sessions_baseline()


class Migration(migrations.Migration):
    dependencies = [("sessions_app", "0007_entry_guard_whole_session")]

    operations = [migrations.RunPython(baseline, migrations.RunPython.noop)]
