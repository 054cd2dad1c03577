"""Search across sessions: the documents table and the database's full-text index over it.

SQLite: an FTS5 external-content table (the text lives once, in sessions_app_searchdoc), kept in
step by store/search_index.py with one INSERT ... SELECT per batch: a trigger, run row by row,
made indexing ten times slower. PostgreSQL: a generated tsvector column with the 'simple' configuration (no
stemming, no stop words: identifiers and paths stay searchable as written) and a GIN index. Both
split words at every character but a letter or digit (PostgreSQL's parser would keep a path or a
file name as one token), so a path is its words in order on either database."""

from __future__ import annotations

from typing import Any

from django.db import migrations, models

SQLITE = [
    "CREATE VIRTUAL TABLE sessions_app_search_fts USING fts5(text, content='sessions_app_searchdoc', "
    "content_rowid='id', tokenize='unicode61 remove_diacritics 2', detail='full')",
]
SQLITE_REVERSE = ["DROP TABLE IF EXISTS sessions_app_search_fts"]
POSTGRES = [
    "ALTER TABLE sessions_app_searchdoc ADD COLUMN tsv tsvector "
    "GENERATED ALWAYS AS (to_tsvector('simple', regexp_replace(text, '[\\W_]+', ' ', 'g'))) STORED",
    "CREATE INDEX searchdoc_tsv ON sessions_app_searchdoc USING GIN (tsv)",
]
POSTGRES_REVERSE = ["DROP INDEX IF EXISTS searchdoc_tsv", "ALTER TABLE sessions_app_searchdoc DROP COLUMN tsv"]
FORWARD = {"sqlite": SQLITE, "postgresql": POSTGRES}
REVERSE = {"sqlite": SQLITE_REVERSE, "postgresql": POSTGRES_REVERSE}


def _run(statements: dict[str, list[str]]) -> Any:
    def run(apps: Any, schema_editor: Any) -> None:
        for sql in statements.get(schema_editor.connection.vendor, []):
            schema_editor.execute(sql)

    return run


class Migration(migrations.Migration):
    dependencies = [
        ("sessions_app", "0012_review"),
    ]

    operations = [
        migrations.CreateModel(
            name="SearchDoc",
            fields=[
                ("id", models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name="ID")),
                ("seq", models.PositiveIntegerField()),
                ("entry_id", models.CharField(max_length=200)),
                ("kind", models.CharField(max_length=16)),
                ("role", models.CharField(blank=True, default="", max_length=64)),
                ("tool", models.TextField(blank=True, default="")),
                ("model", models.TextField(blank=True, default="")),
                ("ts_ms", models.BigIntegerField()),
                ("text", models.TextField()),
                (
                    "session",
                    models.ForeignKey(
                        db_constraint=False,
                        on_delete=models.deletion.DO_NOTHING,
                        related_name="+",
                        to="sessions_app.session",
                    ),
                ),
            ],
            options={
                "indexes": [
                    models.Index(fields=["session", "seq"], name="searchdoc_session_seq"),
                    models.Index(fields=["ts_ms"], name="searchdoc_ts"),
                ],
            },
        ),
        migrations.RunPython(_run(FORWARD), _run(REVERSE)),
    ]
