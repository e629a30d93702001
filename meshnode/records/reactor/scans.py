"""The last scan the reactor made (``config`` key reactor.last_scan): when, and what the driver
said of it."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

from meshnode.store.database import sql_errors

if TYPE_CHECKING:
    from meshnode.store.database import Database

LAST_SCAN_KEY = "reactor.last_scan"


def last_scan(db: Database) -> dict | None:
    with sql_errors("reading the last scan"):
        row = db.conn.execute("SELECT value FROM config WHERE key = ?", (LAST_SCAN_KEY,)).fetchone()
    if row is None:
        return None
    try:
        value = json.loads(row[0])
    except (TypeError, ValueError):
        return None
    return value if isinstance(value, dict) else None


def mark_scan(db: Database, now_ms: int, info: dict) -> None:
    """Record a scan (``config`` key reactor.last_scan): its time and what the driver says of it."""
    value = json.dumps({**info, "at_ms": now_ms}, sort_keys=True, default=str)
    with db.transaction() as conn:
        conn.execute("INSERT INTO config (key, value) VALUES (?, ?) ON CONFLICT (key) DO UPDATE SET"
                     " value = excluded.value", (LAST_SCAN_KEY, value))
