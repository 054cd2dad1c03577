"""Entries are append-only, enforced by the database itself.

UPDATE of an entry always fails. DELETE fails unless the entry's session is gone or has been
marked `deleting` by the session_delete service, so only a whole session can be removed.
"""

from __future__ import annotations

from django.db import migrations

SQLITE = [
    """CREATE TRIGGER sessions_app_entry_no_update BEFORE UPDATE ON sessions_app_entry
    BEGIN SELECT RAISE(ABORT, 'piweb: entries are append-only (UPDATE refused)'); END""",
    """CREATE TRIGGER sessions_app_entry_no_delete BEFORE DELETE ON sessions_app_entry
    WHEN EXISTS (SELECT 1 FROM sessions_app_session s WHERE s.id = OLD.session_id AND NOT s.deleting)
    BEGIN SELECT RAISE(ABORT, 'piweb: entries are append-only (DELETE refused)'); END""",
]
SQLITE_REVERSE = [
    "DROP TRIGGER IF EXISTS sessions_app_entry_no_update",
    "DROP TRIGGER IF EXISTS sessions_app_entry_no_delete",
]
POSTGRES = [
    """CREATE FUNCTION sessions_app_entry_guard() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
        IF TG_OP = 'UPDATE' THEN
            RAISE EXCEPTION 'piweb: entries are append-only (UPDATE refused)';
        END IF;
        IF EXISTS (SELECT 1 FROM sessions_app_session s WHERE s.id = OLD.session_id AND NOT s.deleting) THEN
            RAISE EXCEPTION 'piweb: entries are append-only (DELETE refused)';
        END IF;
        RETURN OLD;
    END $$""",
    """CREATE TRIGGER sessions_app_entry_guard BEFORE UPDATE OR DELETE ON sessions_app_entry
    FOR EACH ROW EXECUTE FUNCTION sessions_app_entry_guard()""",
]
POSTGRES_REVERSE = [
    "DROP TRIGGER IF EXISTS sessions_app_entry_guard ON sessions_app_entry",
    "DROP FUNCTION IF EXISTS sessions_app_entry_guard()",
]


def _run(statements: dict[str, list[str]]):  # type: ignore[no-untyped-def]
    def apply(apps, schema_editor):  # type: ignore[no-untyped-def]
        for sql in statements.get(schema_editor.connection.vendor, []):
            schema_editor.execute(sql)

    return apply


class Migration(migrations.Migration):
    dependencies = [("sessions_app", "0001_initial")]

    operations = [
        migrations.RunPython(
            _run({"sqlite": SQLITE, "postgresql": POSTGRES}),
            _run({"sqlite": SQLITE_REVERSE, "postgresql": POSTGRES_REVERSE}),
        )
    ]
