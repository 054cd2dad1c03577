"""SQLite's FTS5 index merges its segments less eagerly: 'automerge' 16 (FTS5's default is 4).

Each import batch commits a new segment, and with the default FTS5 merges them again and again
as an import goes on; 16 cut the importing process's CPU for a 100k import by ~0.8 s (of ~2.5 s
that indexing adds to it: bench/bench_search.py). Queries read more segments per term, still
within the rare-word target on the 1M corpus. (A setting kept in the FTS5 table's config.)"""

from __future__ import annotations

from typing import Any

from django.db import migrations

FTS = "sessions_app_search_fts"


def _automerge(value: int) -> Any:
    def run(apps: Any, schema_editor: Any) -> None:
        if schema_editor.connection.vendor == "sqlite":
            schema_editor.execute(f"INSERT INTO {FTS}({FTS}, rank) VALUES ('automerge', {value})")

    return run


class Migration(migrations.Migration):
    dependencies = [
        ("sessions_app", "0015_share_comments"),
    ]

    operations = [migrations.RunPython(_automerge(16), _automerge(4))]
