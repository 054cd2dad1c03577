"""The database refuses to change or remove audit records, whatever the way in."""

from __future__ import annotations

import pytest
from django.db import DatabaseError, connection, transaction

from sessions_app.access.audit import audit_record
from sessions_app.models import AuditRecord

pytestmark = pytest.mark.django_db


@pytest.fixture
def record():
    audit_record(action="session.open", obj_type="session", obj_id="s1")
    return audit_record(action="session.open", obj_type="session", obj_id="s2")


def refused(func) -> None:
    with pytest.raises(DatabaseError, match="append-only"), transaction.atomic():
        func()


def test_save_update_delete_are_refused(record):
    record.action = "session.delete"
    refused(record.save)
    refused(lambda: AuditRecord.objects.filter(pk=record.pk).update(obj_id="x"))
    refused(record.delete)
    refused(AuditRecord.objects.all().delete)
    assert AuditRecord.objects.get(pk=record.pk).action == "session.open"
    assert AuditRecord.objects.count() == 2


def test_raw_sql_is_refused(record):
    def run(sql: str) -> None:
        with connection.cursor() as cursor:
            cursor.execute(sql)

    refused(lambda: run("UPDATE sessions_app_auditrecord SET action = 'x'"))
    refused(lambda: run("DELETE FROM sessions_app_auditrecord"))
    if connection.vendor == "postgresql":
        refused(lambda: run("TRUNCATE sessions_app_auditrecord"))
    assert AuditRecord.objects.count() == 2
