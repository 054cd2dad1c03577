"""A time limit on the database work of a block, on this thread's connection.

SQLite: a progress handler, removed after the block. PostgreSQL: each statement gets what is left
of the limit as its timeout, local to a transaction of the block's own (restored after, so a
caller's transaction goes on). A statement that runs over raises `stopped()` instead.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from django.db import OperationalError, connection, transaction

PROGRESS_OPS = 1000  # SQLite: the clock is read every this many steps of a statement
QUERY_CANCELED = "57014"  # PostgreSQL's SQLSTATE for a statement stopped by its timeout


@contextmanager
def within(seconds: float, stopped: Callable[[], Exception]) -> Iterator[None]:
    """The block's statements, stopped `seconds` after the block began with stopped()."""
    deadline = time.monotonic() + seconds
    if connection.vendor == "sqlite":
        connection.ensure_connection()
        raw = connection.connection
        raw.set_progress_handler(lambda: int(time.monotonic() > deadline), PROGRESS_OPS)
        try:
            yield
        except OperationalError as error:
            if str(error) == "interrupted":
                raise stopped() from None
            raise
        finally:
            raw.set_progress_handler(None, 0)
        return

    def timed(execute: Any, sql: str, params: Any, many: bool, context: dict[str, Any]) -> Any:
        left = math.ceil((deadline - time.monotonic()) * 1000)
        if left <= 0:
            raise stopped()
        execute("SELECT set_config('statement_timeout', %s, true)", [str(left)], False, context)
        return execute(sql, params, many, context)

    try:
        with transaction.atomic(), connection.cursor() as c:
            c.execute("SELECT current_setting('statement_timeout')")
            before = c.fetchone()[0]
            with connection.execute_wrapper(timed):
                yield
            c.execute("SELECT set_config('statement_timeout', %s, true)", [before])
    except OperationalError as error:
        if getattr(error.__cause__, "sqlstate", None) == QUERY_CANCELED:
            raise stopped() from None
        raise
