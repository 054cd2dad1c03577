"""/audit/: auditors only (others get 404), filters, pagination, CSV (escaped), chain checks; admin read-only."""

from __future__ import annotations

import csv
import io
from datetime import timedelta

import pytest
from django.contrib.auth.models import Group
from django.test import Client
from django.utils import timezone

from sessions_app.access.audit import audit_record
from sessions_app.models import AuditRecord
from sessions_app.store import services
from sessions_app.web.audit_views import csv_cell

pytestmark = pytest.mark.django_db


@pytest.fixture
def auditor(django_user_model):
    user = django_user_model.objects.create_user("carol", password="carol-pw")
    user.groups.add(Group.objects.get_or_create(name="auditors")[0])
    client = Client()
    client.force_login(user)
    return client


@pytest.fixture
def trail(alice, bob):
    a = services.session_create(owner=alice, name="alpha")
    b = services.session_create(owner=bob, name="beta")
    services.session_rename(session=a, name='=HYPERLINK("http://evil")', author=alice)
    for i in range(60):
        audit_record(actor=bob, action="session.open", obj_type="session", obj_id=b.public_id)
        del i
    return a, b


def test_non_auditors_get_404(alice_client, client):
    for path in ("/audit/", "/audit/export.csv"):
        assert alice_client.get(path).status_code == 404
        assert client.get(path).status_code == 302  # anonymous: to the sign-in page
    assert alice_client.post("/audit/verify/").status_code == 404


def test_superuser_and_permission_holders_are_auditors(django_user_model):
    from django.contrib.auth.models import Permission

    root = django_user_model.objects.create_superuser("root", password="x")
    viewer = django_user_model.objects.create_user("vera", password="x")
    viewer.user_permissions.add(Permission.objects.get(codename="view_auditrecord"))
    for user in (root, viewer):
        client = Client()
        client.force_login(user)
        assert client.get("/audit/").status_code == 200


def test_filters_and_pagination(auditor, trail):
    _, b = trail
    page = auditor.get("/audit/", {"user": "alice"}).content.decode()
    assert "<td>session.create</td>" in page
    assert "<td>session.rename</td>" in page
    assert "<td>session.open</td>" not in page
    page = auditor.get("/audit/", {"session": b.public_id, "action": "session.open"}).content.decode()
    assert "page 1 of 2 (60 records)" in page
    assert (
        "page 2 of 2"
        in auditor.get("/audit/", {"session": b.public_id, "action": "session.open", "page": 2}).content.decode()
    )
    page = auditor.get("/audit/", {"action": "session.", "user": "alice"}).content.decode()
    assert "<td>session.rename</td>" in page
    future = (timezone.now() + timedelta(days=1)).strftime("%Y-%m-%dT%H:%M")
    assert "No records." in auditor.get("/audit/", {"since": future}).content.decode()
    today = timezone.now().strftime("%Y-%m-%d")
    assert "No records." not in auditor.get("/audit/", {"since": today, "until": today}).content.decode()


def test_csv_export_of_the_filtered_set_is_escaped(auditor, trail):
    a, _ = trail
    response = auditor.get("/audit/export.csv", {"session": a.public_id})
    assert response["Content-Type"].startswith("text/csv")
    rows = list(csv.reader(io.StringIO(b"".join(response.streaming_content).decode())))
    assert rows[0][:5] == ["seq", "at", "actor_id", "actor_username", "action"]
    actions = [row[4] for row in rows[1:]]
    assert actions == ["session.rename", "session.rename", "session.create"]
    assert '\'=HYPERLINK("http://evil")' in rows[1]
    assert all(not cell.startswith(("=", "+", "-", "@")) for row in rows for cell in row)
    assert AuditRecord.objects.filter(action="audit.export", actor_username="carol").exists()


def test_csv_cell():
    assert [csv_cell(v) for v in ("=1+1", "+1", "-1", "@SUM(A1)", "\tx", "ok", None, 3)] == [
        "'=1+1", "'+1", "'-1", "'@SUM(A1)", "'\tx", "ok", "", "3",
    ]  # fmt: skip


def test_verify_buttons(auditor, trail):
    a, _ = trail
    page = auditor.post("/audit/verify/").content.decode()
    assert "Audit chain intact" in page
    page = auditor.post("/audit/verify-session/", {"session": a.public_id}).content.decode()
    assert "every entry verified" in page
    assert "No session" in auditor.post("/audit/verify-session/", {"session": "nope"}).content.decode()
    assert AuditRecord.objects.filter(action="audit.verify").exists()


def test_admin_is_read_only(django_user_model, trail):
    root = django_user_model.objects.create_superuser("root", password="x")
    client = Client()
    client.force_login(root)
    record = AuditRecord.objects.order_by("seq")[0]
    assert client.get("/admin/sessions_app/auditrecord/?q=alice").status_code == 200
    assert client.get(f"/admin/sessions_app/auditrecord/{record.pk}/change/").status_code == 200
    assert client.get("/admin/sessions_app/auditrecord/add/").status_code == 403
    assert client.post(f"/admin/sessions_app/auditrecord/{record.pk}/delete/").status_code == 403
    assert AuditRecord.objects.filter(pk=record.pk).exists()


def test_before_and_after_read_as_fields_not_python_dicts(auditor, alice):
    audit_record(
        actor=alice,
        action="team.member_role",
        obj_type="team",
        obj_id="t1",
        before={"role": "viewer"},
        after={"user": "bob", "role": "editor", "tags": ["a", "<b>"], "ok": True, "none": None},
    )
    html = auditor.get("/audit/", {"action": "team.member_role"}).content.decode()
    row = html[html.index('<tr id="audit-') :].split("</tr>")[0]
    assert "{'" not in row and "'role'" not in row and "True" not in row  # no Python dict text
    assert '<span class="k">role:</span> <span class="v">viewer</span>' in row
    assert '<span class="k">user:</span> <span class="v">bob</span>' in row
    assert '<span class="k">tags:</span> <span class="v">[&quot;a&quot;, &quot;&lt;b&gt;&quot;]</span>' in row
    assert '<span class="k">ok:</span> <span class="v">yes</span>' in row
    assert '<span class="k">none:</span> <span class="v">—</span>' in row
    assert '<td class="when"><time' in row  # kept on one line (app.css: td.when)
