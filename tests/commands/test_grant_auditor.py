"""manage.py grant_auditor: the first auditor, from the command line."""

from __future__ import annotations

from io import StringIO

import pytest
from django.core.management import call_command

from sessions_app.models import AuditRecord

pytestmark = pytest.mark.django_db


def test_a_user_becomes_an_auditor_once_and_it_is_recorded(alice, alice_client):
    assert alice_client.get("/audit/").status_code == 404
    out = StringIO()
    call_command("grant_auditor", "alice", stdout=out)
    assert "may now read" in out.getvalue()
    assert alice_client.get("/audit/").status_code == 200
    call_command("grant_auditor", "alice", stdout=out)
    assert "could already read" in out.getvalue()
    assert AuditRecord.objects.filter(action="auditor.grant", obj_id="alice").count() == 1
