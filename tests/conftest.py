"""Shared fixtures: alice owns, bob is another user; real services build the data.

The hooks of tests/needs.py skip (or, under PIWEB_REQUIRE_ALL_TESTS=1, fail) the oracle and browser
tests whose tools are missing."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from django.db.models.signals import post_migrate
from django.test import Client

from tests.generate import generate
from tests.needs import pytest_collection_modifyitems as pytest_collection_modifyitems
from tests.needs import pytest_runtest_setup as pytest_runtest_setup
from tests.oracle import install
from tests.paths import ROOT
from tests.servers import Processes

(ROOT / "var").mkdir(exist_ok=True)  # the SQLite test database lives there


@pytest.fixture(autouse=True)
def _fast_hasher(settings):
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]


@pytest.fixture(autouse=True)
def _empty_cache():
    """Each test starts with an empty cache (rolled-back tests can reuse primary keys)."""
    from django.core.cache import cache

    cache.clear()


@pytest.fixture(autouse=True)
def _entries_can_be_flushed(request):
    """After a transactional test, let pytest-django's flush (a plain DELETE on SQLite, TRUNCATE on
    PostgreSQL) past the append-only triggers, which allow deleting entries only once their session
    row is gone and refuse TRUNCATE."""
    marker = request.node.get_closest_marker("django_db")
    if marker is None or not marker.kwargs.get("transaction"):
        yield
        return
    request.getfixturevalue("transactional_db")  # set up first, so torn down after this
    yield
    from django.db import connection

    _audit_guards(connection, restore=False)  # flush empties both tables; restored after


def _audit_guards(connection, *, restore: bool) -> None:
    """Drop or re-create the audit table's append-only triggers (migration 0006) and the entry
    table's DELETE and TRUNCATE guards (migration 0007)."""
    import importlib

    audit = importlib.import_module("sessions_app.migrations.0006_audit_trail")
    entries = importlib.import_module("sessions_app.migrations.0007_entry_guard_whole_session")
    statements = [
        *(audit.GUARDS if restore else audit.GUARDS_REVERSE).get(connection.vendor, []),
        *(entries.CREATE if restore else entries.DROP).get(connection.vendor, []),
    ]
    with connection.cursor() as cursor:
        for sql in statements:
            cursor.execute(sql)


def _restore_audit_guards(sender, using="default", **kwargs) -> None:
    # flush emits post_migrate when it is done: the triggers dropped above come back.
    from django.db import connections

    if getattr(sender, "name", "") == "sessions_app":
        _audit_guards(connections[using], restore=True)
        if connections[using].vendor == "sqlite":
            # The flush emptied the search documents; their FTS5 index (external content) follows.
            with connections[using].cursor() as cursor:
                cursor.execute("INSERT INTO sessions_app_search_fts(sessions_app_search_fts) VALUES ('rebuild')")


post_migrate.connect(_restore_audit_guards, dispatch_uid="tests_restore_audit_guards")


@pytest.fixture
def alice(django_user_model):
    return django_user_model.objects.create_user("alice", password="alice-pw")


@pytest.fixture
def bob(django_user_model):
    return django_user_model.objects.create_user("bob", password="bob-pw")


@pytest.fixture
def alice_client(alice):
    client = Client()
    client.force_login(alice)
    return client


@pytest.fixture
def bob_client(bob):
    client = Client()
    client.force_login(bob)
    return client


@pytest.fixture
def htmx_client(alice):
    client = Client(headers={"HX-Request": "true"})
    client.force_login(alice)
    return client


@pytest.fixture(scope="session")
def pi_install() -> Path:
    """The folder where the real pi (npm) is installed, for oracle comparisons: tests/oracle/pi/
    `npm ci`ed into var/pi/ (see tests/oracle/install.py)."""
    return install.install()


@pytest.fixture(scope="session")
def generated() -> Callable[..., bytes]:
    """make(entries, seed, **options) -> a pi v3 session file from tests/generate.py (cached)."""
    cache: dict[tuple[Any, ...], bytes] = {}

    def make(entries: int = 40, seed: int = 1, **options: Any) -> bytes:
        key = (entries, seed, *sorted(options.items()))
        if key not in cache:
            cache[key] = generate(entries, seed, **options)
        return cache[key]

    return make


@pytest.fixture
def processes(tmp_path: Path) -> Iterator[Processes]:
    """Real daphne servers and turn workers (tests/servers.py), stopped after the test."""
    running = Processes(tmp_path / "processes.log")
    yield running
    running.stop()
