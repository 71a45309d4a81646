"""The search indexes the database keeps in step by itself, whoever writes the package rows.

- SQLite: an FTS5 table with the trigram tokenizer over catalogue_package.search_text (external
  content: the text is not stored twice), filled by three triggers on catalogue_package. A
  trigram phrase query is a substring test, the same as `LIKE '%word%'`, but answered from the
  index instead of by reading every row. The triggers fire for every insert, update and delete,
  bulk ones included, so the sync may write rows however it likes.
- PostgreSQL: pg_trgm's GIN index on search_text (migrations 0006 and 0009) serves both the
  substring test (`LIKE`) and the misspelling match; nothing here.

A table rebuild by a later migration (SQLite's way of altering a column) drops the triggers with
the old table: post_migrate therefore checks after every migrate and recreates (and refills)
what is missing.
"""

from __future__ import annotations

import sqlite3
from functools import cache

FTS_TABLE = "catalogue_package_fts"
_TRIGGERS = {
    f"{FTS_TABLE}_insert": f"""
        CREATE TRIGGER {FTS_TABLE}_insert AFTER INSERT ON catalogue_package BEGIN
            INSERT INTO {FTS_TABLE}(rowid, search_text) VALUES (new.id, new.search_text);
        END""",
    f"{FTS_TABLE}_delete": f"""
        CREATE TRIGGER {FTS_TABLE}_delete AFTER DELETE ON catalogue_package BEGIN
            INSERT INTO {FTS_TABLE}({FTS_TABLE}, rowid, search_text)
                VALUES ('delete', old.id, old.search_text);
        END""",
    f"{FTS_TABLE}_update": f"""
        CREATE TRIGGER {FTS_TABLE}_update AFTER UPDATE OF search_text ON catalogue_package
        BEGIN
            INSERT INTO {FTS_TABLE}({FTS_TABLE}, rowid, search_text)
                VALUES ('delete', old.id, old.search_text);
            INSERT INTO {FTS_TABLE}(rowid, search_text) VALUES (new.id, new.search_text);
        END""",
}


@cache
def sqlite_trigram_supported() -> bool:
    """Whether this process's SQLite has FTS5 with the trigram tokenizer (3.34 and later):
    asked of a throw-away in-memory database, never of the real one."""
    try:
        with sqlite3.connect(":memory:") as probe:
            probe.execute("CREATE VIRTUAL TABLE t USING fts5(x, tokenize='trigram')")
        return True
    except sqlite3.Error:
        return False


def fts_ensure(connection) -> bool:
    """Create the FTS table and its triggers where missing (refilling the table when anything
    was missing); True when the index is there. Does nothing outside SQLite."""
    if connection.vendor != "sqlite" or not sqlite_trigram_supported():
        return False
    with connection.cursor() as cursor:
        cursor.execute("SELECT 1 FROM sqlite_master WHERE name = 'catalogue_package'")
        if cursor.fetchone() is None:  # migrating backwards past 0001
            return False
        cursor.execute(
            "SELECT name FROM sqlite_master WHERE name = %s OR (type = 'trigger' AND name IN "
            f"({', '.join(['%s'] * len(_TRIGGERS))}))",
            [FTS_TABLE, *_TRIGGERS],
        )
        present = {row[0] for row in cursor.fetchall()}
        if present == {FTS_TABLE, *_TRIGGERS}:
            return True
        if FTS_TABLE not in present:
            cursor.execute(
                f"CREATE VIRTUAL TABLE {FTS_TABLE} USING fts5(search_text, "
                "content='catalogue_package', content_rowid='id', tokenize='trigram')"
            )
        for name, sql in _TRIGGERS.items():
            if name not in present:
                cursor.execute(sql)
        # Rows written while a trigger was missing are not in the index: read them all again.
        cursor.execute(f"INSERT INTO {FTS_TABLE}({FTS_TABLE}) VALUES ('rebuild')")
    return True


def fts_drop(connection) -> None:
    if connection.vendor != "sqlite":
        return
    with connection.cursor() as cursor:
        for name in _TRIGGERS:
            cursor.execute(f"DROP TRIGGER IF EXISTS {name}")
        cursor.execute(f"DROP TABLE IF EXISTS {FTS_TABLE}")


def fts_after_migrate(sender, using: str = "default", **kwargs) -> None:
    from django.db import connections

    fts_ensure(connections[using])
