"""RunStart rows (models.RunStart): the entries whose parent is not the entry just before them in
file order. Between two run starts every entry's parent is the entry before it, so the path from
any entry up to the root is a few ranges of seqs, read in file order from the (session, seq) index
(selectors' context), where a walk would look each entry up by its parent's id.

Written where the search index is (search_index._index_range: appends, an import's catch-up, a
reindex), by one statement over the stored entries. A reader never trusts them: the rows of the
ranges must link up, each the parent of the next, or the path is walked.
"""

from __future__ import annotations

from django.db import connection

# The rule, over the entries with after < seq <= upto. (Migration 0021 ran it once over every
# entry stored before; tests/store/test_run_starts.py keeps the two the same.)
_WRITE = """
INSERT INTO sessions_app_runstart (session_id, seq)
SELECT e.session_id, e.seq FROM sessions_app_entry e
WHERE e.session_id = %s AND e.seq > %s AND e.seq <= %s AND NOT EXISTS (
    SELECT 1 FROM sessions_app_entry p
    WHERE p.session_id = e.session_id AND p.seq = e.seq - 1 AND p.entry_id = e.parent_id
)
ON CONFLICT (session_id, seq) DO NOTHING
"""


def write(session_pk: int, *, after: int, upto: int | None) -> None:
    """Record the run starts among the session's entries with after < seq <= upto (None: to the
    last); those already recorded (a reindex) are kept."""
    with connection.cursor() as cursor:
        cursor.execute(_WRITE, [session_pk, after, upto if upto is not None else 2**62])
