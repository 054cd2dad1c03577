"""MessageSpan rows: where each message entry's stored line holds its message's JSON
(core.context.message_span), so that a context copies those bytes out with no JSON parse.

Written where the lines are parsed anyway, by the search indexer (search_index._write: appends,
an import's catch-up, a reindex), never by the import worker. An entry without a span is read
through the database's JSON functions (selectors._MESSAGE_OR_LINE): a span is only a shortcut.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from django.db import connection

from sessions_app.core.context import message_span

ROWS = 200  # spans per INSERT (4 parameters each)


def write(session_pk: int, lines: Iterable[tuple[int, str | bytes, Mapping[str, Any]]]) -> int:
    """Store the spans of these (seq, stored line, parsed line); a span already there is kept (a
    reindex). Returns how many lines had one."""
    params: list[Any] = []
    for seq, raw, data in lines:
        if data.get("type") != "message":
            continue
        span = message_span(raw if isinstance(raw, bytes) else raw.encode(), data)
        if span is not None:
            params.extend((session_pk, seq, span[0] + 1, span[1]))
    count = len(params) // 4
    with connection.cursor() as cursor:
        for start in range(0, len(params), ROWS * 4):
            part = params[start : start + ROWS * 4]
            values = ", ".join(["(%s, %s, %s, %s)"] * (len(part) // 4))
            cursor.execute(
                "INSERT INTO sessions_app_messagespan (session_id, seq, start, length) "
                f"VALUES {values} ON CONFLICT (session_id, seq) DO NOTHING",
                part,
            )
    return count
