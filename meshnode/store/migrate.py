"""Versioned schema migrations, applied at open.

Migrations are the files ``migrations/NNNN_name.sql``, numbered from 1 with
no gaps; the database's ``PRAGMA user_version`` is the number of the last one
applied. Each file runs inside its own transaction together with the version
bump, so a failed migration leaves the database as it was. A database whose
version is newer than this code knows is refused, never "downgraded".
"""

from __future__ import annotations

import re
import sqlite3
from importlib import resources

from meshnode.errors import StoreError

_NAME = re.compile(r"(\d{4})_[a-z0-9_]+\.sql")


def migrations() -> list[tuple[int, str, str]]:
    """(number, file name, SQL) for every packaged migration, in order."""
    found = []
    for entry in resources.files("meshnode.store.migrations").iterdir():
        m = _NAME.fullmatch(entry.name)
        if m:
            found.append((int(m.group(1)), entry.name, entry.read_text(encoding="utf-8")))
    found.sort()
    for expected, (number, name, _) in enumerate(found, start=1):
        if number != expected:
            raise StoreError("bad_migrations", f"migration {name} is out of sequence (expected {expected:04d})")
    return found


def latest_version() -> int:
    return len(migrations())


def schema_version(conn: sqlite3.Connection) -> int:
    return conn.execute("PRAGMA user_version").fetchone()[0]


def migrate(conn: sqlite3.Connection) -> int:
    """Bring ``conn`` (autocommit mode) to the latest schema; returns the version."""
    steps = migrations()
    current = schema_version(conn)
    if current > len(steps):
        raise StoreError(
            "db_too_new",
            f"the database is at schema version {current}, this meshnode knows only up to {len(steps)}; "
            "upgrade meshnode (or use a copy of the database made by this version)",
        )
    for number, name, sql in steps[current:]:
        try:
            conn.executescript(f"BEGIN IMMEDIATE;\n{sql}\n;PRAGMA user_version = {number};\nCOMMIT;")
        except sqlite3.Error as exc:
            if conn.in_transaction:
                conn.execute("ROLLBACK")
            raise StoreError("migration_failed", f"migration {name} failed: {exc}") from None
    return schema_version(conn)
