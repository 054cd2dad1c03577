"""SQLite: the FTS5 index keeps prefix indexes of its terms' first 2 and 3 characters
(prefix='2 3', store/search_index.FTS_PREFIXES). Without them FTS5 answers a prefix query by
merging the lists of every term that starts with it, and does so again for each document it is
asked about: a short prefix with label: (each labelled document looked up by its rowid) was
slow on a large corpus. FTS5 sets prefix indexes only when a table is created, so the
table is created again and rebuilt from sessions_app_searchdoc (its external content; the
documents themselves are untouched), with 'automerge' 16 as 0016 left it. Nothing on PostgreSQL,
whose GIN index answers a prefix from its sorted terms.

Nothing else refers to the FTS5 table (no trigger: store/search_index.py keeps it), so dropping it
drops nothing else. The rebuild reads and splits every document again: on a large database this
migration takes a while, with the database locked for writing."""

from __future__ import annotations

from typing import Any

from django.db import migrations

FTS = "sessions_app_search_fts"
# As store/search_index.FTS_PREFIXES says today (tests/search/test_search_prefix.py checks they
# agree): a migration keeps the definition it made, whatever the code says later.
PREFIXES = (2, 3)
AUTOMERGE = 16  # migration 0016


def _definition(prefixes: tuple[int, ...]) -> str:
    prefix = f", prefix='{' '.join(str(n) for n in prefixes)}'" if prefixes else ""
    return (
        f"CREATE VIRTUAL TABLE {FTS} USING fts5(text, content='sessions_app_searchdoc', "
        f"content_rowid='id', tokenize='unicode61 remove_diacritics 2', detail='full'{prefix})"
    )


def _recreate(prefixes: tuple[int, ...]) -> Any:
    def run(apps: Any, schema_editor: Any) -> None:
        if schema_editor.connection.vendor != "sqlite":
            return
        schema_editor.execute(f"DROP TABLE {FTS}")
        schema_editor.execute(_definition(prefixes))
        schema_editor.execute(f"INSERT INTO {FTS}({FTS}, rank) VALUES ('automerge', {AUTOMERGE})")
        schema_editor.execute(f"INSERT INTO {FTS}({FTS}) VALUES ('rebuild')")

    return run


class Migration(migrations.Migration):
    dependencies = [
        ("sessions_app", "0019_message_span"),
    ]

    operations = [migrations.RunPython(_recreate(PREFIXES), _recreate(()))]
