"""Versioned schema migrations, applied at open.

Migrations are the files ``migrations/NNNN_name.sql``, numbered from 1 with
no gaps; the database's ``PRAGMA user_version`` is the number of the last one
applied. Each file runs inside its own transaction together with the version
bump, so a failed migration leaves the database as it was. A database whose
version is newer than this code knows is refused, never "downgraded".
"""

from __future__ import annotations

import os
import re
from typing import TYPE_CHECKING

from meshnode.base.errors import StoreError

if TYPE_CHECKING:
    import sqlite3

_NAME = re.compile(r"(\d{4})_[a-z0-9_]+\.sql")
_FOLDER = os.path.join(os.path.dirname(__file__), "migrations")  # the package meshnode.store.migrations


def _numbered() -> list[tuple[int, str]]:
    """(number, file name) of every packaged migration, in order; numbered from 1 with no gaps."""
    found = sorted((int(m.group(1)), m.string) for m in map(_NAME.fullmatch, os.listdir(_FOLDER)) if m)
    for expected, (number, name) in enumerate(found, start=1):
        if number != expected:
            raise StoreError("bad_migrations", f"migration {name} is out of sequence (expected {expected:04d})")
    return found


def migrations() -> list[tuple[int, str, str]]:
    """(number, file name, SQL) for every packaged migration, in order."""
    out = []
    for number, name in _numbered():
        with open(os.path.join(_FOLDER, name), encoding="utf-8") as f:
            out.append((number, name, f.read()))
    return out


def latest_version() -> int:
    """The schema version this code brings a database to (the files are listed, not read: ``status`` asks)."""
    return len(_numbered())


def schema_version(conn: sqlite3.Connection) -> int:
    return conn.execute("PRAGMA user_version").fetchone()[0]


def migrate(conn: sqlite3.Connection) -> int:
    """Bring ``conn`` (autocommit mode) to the latest schema; returns the version.

    Each step takes the write lock first (BEGIN IMMEDIATE) and reads the
    version again under it, so two processes opening a new database at once
    do not both apply the same migration. Statements run one by one inside
    that transaction (``executescript`` would commit it first).
    """
    import sqlite3

    steps = migrations()
    while True:
        current = schema_version(conn)
        _refuse_newer(current, len(steps))
        if current == len(steps):
            return current
        conn.execute("BEGIN IMMEDIATE")
        try:
            current = schema_version(conn)  # another process may have migrated meanwhile
            _refuse_newer(current, len(steps))
            if current < len(steps):
                number, name, sql = steps[current]
                try:
                    for statement in split_statements(sql):
                        conn.execute(statement)
                except sqlite3.Error as exc:
                    raise StoreError("migration_failed", f"migration {name} failed: {exc}") from None
                conn.execute(f"PRAGMA user_version = {number}")
            conn.execute("COMMIT")
        except BaseException:
            if conn.in_transaction:
                conn.execute("ROLLBACK")
            raise


def split_statements(sql: str) -> list[str]:
    """Split a migration into complete SQL statements (triggers' BEGIN...END kept whole)."""
    import sqlite3

    statements, buffer = [], ""
    for line in sql.splitlines(keepends=True):
        buffer += line
        if sqlite3.complete_statement(buffer):
            if _strip_comments(buffer):
                statements.append(buffer.strip())
            buffer = ""
    if _strip_comments(buffer):
        raise StoreError("bad_migrations", "a migration ends with an incomplete statement")
    return statements


def _strip_comments(sql: str) -> str:
    return "\n".join(line.split("--", 1)[0] for line in sql.splitlines()).strip()


def _refuse_newer(current: int, known: int) -> None:
    if current > known:
        raise StoreError(
            "db_too_new",
            f"the database is at schema version {current}, this meshnode knows only up to {known}; "
            "upgrade meshnode (or use a copy of the database made by this version)",
        )
