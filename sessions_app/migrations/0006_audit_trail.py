"""The audit trail: AuditRecord (append-only: the database refuses every UPDATE and DELETE, and
TRUNCATE on PostgreSQL) and its one-row chain head. Only new tables are created, so no existing
table is rebuilt (which on SQLite would drop the entry triggers of 0002)."""

from __future__ import annotations

import django.db.models.deletion
from django.conf import settings
from django.db import migrations, models

SQLITE = [
    """CREATE TRIGGER IF NOT EXISTS sessions_app_auditrecord_no_update BEFORE UPDATE ON sessions_app_auditrecord
    BEGIN SELECT RAISE(ABORT, 'piweb: audit records are append-only (UPDATE refused)'); END""",
    """CREATE TRIGGER IF NOT EXISTS sessions_app_auditrecord_no_delete BEFORE DELETE ON sessions_app_auditrecord
    BEGIN SELECT RAISE(ABORT, 'piweb: audit records are append-only (DELETE refused)'); END""",
]
SQLITE_REVERSE = [
    "DROP TRIGGER IF EXISTS sessions_app_auditrecord_no_update",
    "DROP TRIGGER IF EXISTS sessions_app_auditrecord_no_delete",
]
POSTGRES = [
    """CREATE OR REPLACE FUNCTION sessions_app_auditrecord_guard() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
        RAISE EXCEPTION USING MESSAGE = 'piweb: audit records are append-only (' || TG_OP || ' refused)';
    END $$""",
    """CREATE OR REPLACE TRIGGER sessions_app_auditrecord_guard BEFORE UPDATE OR DELETE ON sessions_app_auditrecord
    FOR EACH ROW EXECUTE FUNCTION sessions_app_auditrecord_guard()""",
    """CREATE OR REPLACE TRIGGER sessions_app_auditrecord_no_truncate BEFORE TRUNCATE ON sessions_app_auditrecord
    FOR EACH STATEMENT EXECUTE FUNCTION sessions_app_auditrecord_guard()""",
]
POSTGRES_REVERSE = [
    "DROP TRIGGER IF EXISTS sessions_app_auditrecord_guard ON sessions_app_auditrecord",
    "DROP TRIGGER IF EXISTS sessions_app_auditrecord_no_truncate ON sessions_app_auditrecord",
    "DROP FUNCTION IF EXISTS sessions_app_auditrecord_guard()",
]
GUARDS = {"sqlite": SQLITE, "postgresql": POSTGRES}
GUARDS_REVERSE = {"sqlite": SQLITE_REVERSE, "postgresql": POSTGRES_REVERSE}


def _run(statements: dict[str, list[str]]):  # type: ignore[no-untyped-def]
    def apply(apps, schema_editor):  # type: ignore[no-untyped-def]
        for sql in statements.get(schema_editor.connection.vendor, []):
            schema_editor.execute(sql)

    return apply


class Migration(migrations.Migration):
    dependencies = [
        ("sessions_app", "0005_teams_tokens_shares"),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.CreateModel(
            name="AuditHead",
            fields=[
                ("id", models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name="ID")),
                ("seq", models.BigIntegerField(default=0)),
                ("hash", models.CharField(blank=True, default="", max_length=64)),
            ],
        ),
        migrations.CreateModel(
            name="AuditRecord",
            fields=[
                ("id", models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name="ID")),
                ("seq", models.BigIntegerField(unique=True)),
                ("at", models.DateTimeField()),
                ("actor_username", models.CharField(blank=True, default="", max_length=150)),
                ("action", models.CharField(max_length=64)),
                ("obj_type", models.CharField(blank=True, default="", max_length=32)),
                ("obj_id", models.CharField(blank=True, default="", max_length=200)),
                ("session_id", models.CharField(blank=True, default="", max_length=200)),
                ("ip", models.CharField(blank=True, default="", max_length=45)),
                ("request_id", models.CharField(blank=True, default="", max_length=64)),
                ("before", models.JSONField(blank=True, null=True)),
                ("after", models.JSONField(blank=True, null=True)),
                ("extra", models.JSONField(blank=True, null=True)),
                ("prev_hash", models.CharField(max_length=64)),
                ("hash", models.CharField(max_length=64)),
                (
                    "actor",
                    models.ForeignKey(
                        blank=True,
                        db_constraint=False,
                        null=True,
                        on_delete=django.db.models.deletion.DO_NOTHING,
                        related_name="+",
                        to=settings.AUTH_USER_MODEL,
                    ),
                ),
            ],
            options={
                "ordering": ["-seq"],
                "indexes": [
                    models.Index(fields=["action", "seq"], name="audit_action"),
                    models.Index(fields=["session_id", "seq"], name="audit_session"),
                    models.Index(fields=["actor_username", "seq"], name="audit_actor"),
                    models.Index(fields=["at"], name="audit_at"),
                ],
            },
        ),
        migrations.RunPython(_run(GUARDS), _run(GUARDS_REVERSE)),
    ]
