"""Access tests' fixtures: the world of teams and roles (tests.worlds), a way past the audit
table's append-only triggers (for tampering)."""

from __future__ import annotations

import pytest
from django.db import connection

from tests.worlds import World, make_world


@pytest.fixture
def world(django_user_model) -> World:
    return make_world(django_user_model)


@pytest.fixture
def bypass_guards(db):
    """Let raw SQL change the audit table inside this test's transaction (rolled back after):
    SQLite drops the triggers (DDL is transactional there), PostgreSQL skips them as a replica."""
    with connection.cursor() as cursor:
        if connection.vendor == "sqlite":
            cursor.execute("DROP TRIGGER sessions_app_auditrecord_no_update")
            cursor.execute("DROP TRIGGER sessions_app_auditrecord_no_delete")
        else:
            cursor.execute("SET LOCAL session_replication_role = replica")
    return connection
