"""Entries may be deleted only once their session row is gone; TRUNCATE is refused (PostgreSQL).

0002 let entries be deleted while their session was marked `deleting`. Anyone who could set the
flag could delete some entries and clear it again, leaving a session that looked whole. Now an
entry can be deleted only when its session row no longer exists (it was deleted earlier in the
same transaction; the foreign key is deferred until commit). So entries go only with their whole
session: session_delete deletes the session row, then its entries. The flag no longer lets
anything through. Django's own cascade, which deletes entries first, is refused as before.

UPDATE is still always refused, and TRUNCATE of the entry table is refused on PostgreSQL (SQLite
has no TRUNCATE; its unqualified DELETE runs the row trigger). Only triggers are replaced: no
table is rebuilt (on SQLite a rebuild would drop them).
"""

from __future__ import annotations

from django.db import migrations

REFUSED = "piweb: entries are append-only (DELETE refused)"

# What tests/conftest.py drops before pytest-django's flush and creates again after it.
CREATE = {
    "sqlite": [
        f"""CREATE TRIGGER IF NOT EXISTS sessions_app_entry_no_delete BEFORE DELETE ON sessions_app_entry
        WHEN EXISTS (SELECT 1 FROM sessions_app_session s WHERE s.id = OLD.session_id)
        BEGIN SELECT RAISE(ABORT, '{REFUSED}'); END""",
    ],
    "postgresql": [
        """CREATE OR REPLACE FUNCTION sessions_app_entry_guard() RETURNS trigger LANGUAGE plpgsql AS $$
        BEGIN
            IF TG_OP = 'DELETE'
                    AND NOT EXISTS (SELECT 1 FROM sessions_app_session s WHERE s.id = OLD.session_id) THEN
                RETURN OLD;
            END IF;
            RAISE EXCEPTION USING MESSAGE = 'piweb: entries are append-only (' || TG_OP || ' refused)';
        END $$""",
        """CREATE OR REPLACE TRIGGER sessions_app_entry_guard BEFORE UPDATE OR DELETE ON sessions_app_entry
        FOR EACH ROW EXECUTE FUNCTION sessions_app_entry_guard()""",
        """CREATE OR REPLACE TRIGGER sessions_app_entry_no_truncate BEFORE TRUNCATE ON sessions_app_entry
        FOR EACH STATEMENT EXECUTE FUNCTION sessions_app_entry_guard()""",
    ],
}
DROP = {
    "sqlite": ["DROP TRIGGER IF EXISTS sessions_app_entry_no_delete"],
    "postgresql": ["DROP TRIGGER IF EXISTS sessions_app_entry_no_truncate ON sessions_app_entry"],
}
# Migrating back: 0002's guard, which lets a session marked `deleting` lose entries.
OLD = {
    "sqlite": [
        f"""CREATE TRIGGER sessions_app_entry_no_delete BEFORE DELETE ON sessions_app_entry
        WHEN EXISTS (SELECT 1 FROM sessions_app_session s WHERE s.id = OLD.session_id AND NOT s.deleting)
        BEGIN SELECT RAISE(ABORT, '{REFUSED}'); END""",
    ],
    "postgresql": [
        """CREATE OR REPLACE FUNCTION sessions_app_entry_guard() RETURNS trigger LANGUAGE plpgsql AS $$
        BEGIN
            IF TG_OP = 'UPDATE' THEN
                RAISE EXCEPTION 'piweb: entries are append-only (UPDATE refused)';
            END IF;
            IF EXISTS (SELECT 1 FROM sessions_app_session s WHERE s.id = OLD.session_id AND NOT s.deleting) THEN
                RAISE EXCEPTION 'piweb: entries are append-only (DELETE refused)';
            END IF;
            RETURN OLD;
        END $$""",
    ],
}


def run(*steps: dict[str, list[str]]):  # type: ignore[no-untyped-def]
    def apply(apps, schema_editor):  # type: ignore[no-untyped-def]
        for statements in steps:
            for sql in statements.get(schema_editor.connection.vendor, []):
                schema_editor.execute(sql)

    return apply


class Migration(migrations.Migration):
    dependencies = [("sessions_app", "0006_audit_trail")]

    operations = [migrations.RunPython(run(DROP, CREATE), run(DROP, OLD))]
