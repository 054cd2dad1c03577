"""turn_worker keeps its database connection between the calls its turns make (one thread makes
them all), where each call used to open, and close, a connection of its own."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from channels.db import database_sync_to_async
from django.db import connection, connections

from sessions_app.management.commands.turn_worker import keep_connections

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def worker_settings() -> Iterator[None]:
    saved = {alias: dict(connections.settings[alias]) for alias in connections}
    yield
    for alias, db in saved.items():
        connections.settings[alias].clear()
        connections.settings[alias].update(db)


def current_connection() -> Any:
    """What identifies the connection serving this call: PostgreSQL's backend pid, else the object."""
    if connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            cursor.execute("SELECT pg_backend_pid()")
            return cursor.fetchone()[0]
    connection.ensure_connection()
    return id(connection.connection)


async def two_calls() -> tuple[Any, Any]:
    first = await database_sync_to_async(current_connection)()
    second = await database_sync_to_async(current_connection)()
    return first, second


@pytest.mark.asyncio
async def test_a_worker_reuses_its_connection(worker_settings: None) -> None:
    first, second = await two_calls()
    assert first != second or connection.vendor != "postgresql"  # without it: a connection per call
    keep_connections()
    first, second = await two_calls()
    assert first == second


def test_a_configured_max_age_is_left_alone(worker_settings: None) -> None:
    connections.settings["default"]["CONN_MAX_AGE"] = 30
    keep_connections()
    assert connections.settings["default"]["CONN_MAX_AGE"] == 30
