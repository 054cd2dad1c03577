"""The top bar: Sessions, Teams, Shares, Tokens for everyone signed in; Audit only for those who
may open /audit/ (superusers, the "auditors" group, the view-audit permission); the current
section is marked."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import Group, Permission
from django.test import Client

from sessions_app.access.audit import AUDITORS_GROUP

pytestmark = pytest.mark.django_db

AUDIT_LINK = 'href="/audit/" data-nav="audit"'


def page(user, path: str = "/") -> str:
    client = Client()
    client.force_login(user)
    return client.get(path).content.decode()


def test_everyone_gets_sessions_teams_shares_tokens_but_not_audit(alice):
    html = page(alice)
    for href in ('href="/"', 'href="/teams/"', 'href="/settings/shares/"', 'href="/settings/tokens/"'):
        assert href in html, href
    assert AUDIT_LINK not in html
    assert 'href="/admin/"' not in html


@pytest.mark.parametrize("how", ["superuser", "group", "permission"])
def test_auditors_get_the_audit_link(django_user_model, how):
    user = django_user_model.objects.create_user("carol", password="carol-pw", is_superuser=how == "superuser")
    if how == "group":
        user.groups.add(Group.objects.get_or_create(name=AUDITORS_GROUP)[0])
    if how == "permission":
        user.user_permissions.add(Permission.objects.get(codename="view_auditrecord"))
    html = page(user)
    assert AUDIT_LINK in html
    client = Client()
    client.force_login(user)
    assert client.get("/audit/").status_code == 200


def test_the_current_section_is_marked(alice):
    assert 'href="/settings/tokens/" aria-current="page"' in page(alice, "/settings/tokens/")
    html = page(alice, "/teams/")
    assert 'href="/teams/" aria-current="page"' in html and 'href="/" aria-current' not in html
    assert 'href="/" aria-current="page"' in page(alice, "/")


def test_a_group_permission_counts_too_and_the_check_is_one_query(django_user_model, django_assert_num_queries):
    from sessions_app.templatetags.piweb_nav import may_audit

    user = django_user_model.objects.create_user("dave", password="dave-pw")
    group = Group.objects.create(name="compliance")
    user.groups.add(group)
    with django_assert_num_queries(1):
        assert not may_audit(user)
    group.permissions.add(Permission.objects.get(codename="view_auditrecord"))
    with django_assert_num_queries(1):
        assert may_audit(user)
