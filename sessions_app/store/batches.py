"""Queries about any number of values: ``... IN (...)`` asked in batches.

SQLite before 3.32 allows 999 parameters in a statement, and PostgreSQL plans a very long IN list
badly; a list of entry ids can hold tens of thousands. Every such query goes through here.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import Any, TypeVar

from django.db import connection

IN_BATCH = 500  # values per IN list

T = TypeVar("T")
R = TypeVar("R")


def in_batches(values: Iterable[T], query: Callable[[list[T]], Iterable[R]], *, size: int = IN_BATCH) -> list[R]:
    """query(batch) for each run of at most size values (no call for no values), the results in one
    list: ``in_batches(ids, lambda part: rows.filter(entry_id__in=part))``."""
    wanted = list(values)
    found: list[R] = []
    for start in range(0, len(wanted), size):
        found.extend(query(wanted[start : start + size]))
    return found


def select_in(sql: str, params: Sequence[Any], values: Iterable[Any], *, size: int = IN_BATCH) -> list[tuple[Any, ...]]:
    """The rows of a raw query over any number of values, one statement per batch: sql says
    ``IN ({marks})`` where a batch's placeholders go, params are the parameters before them.
    A row that several batches match comes once per batch."""

    def run(batch: list[Any]) -> list[tuple[Any, ...]]:
        with connection.cursor() as cursor:
            cursor.execute(sql.replace("{marks}", ", ".join(["%s"] * len(batch))), [*params, *batch])
            rows: list[tuple[Any, ...]] = cursor.fetchall()
        return rows

    return in_batches(values, run, size=size)
