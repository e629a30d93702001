"""The local record of who asked for what this node wrote (migration 0022; meshnode.app.actor).

A row is written in the same transaction as its container (``database._store`` takes it from
the ``local`` fields, key ``asked_by``), so a container never exists here without the record of
who asked for it. Rows are never signed nor synced.
"""

from __future__ import annotations

import sqlite3

FIELDS = ("kind", "via", "id", "label")


def record(conn: sqlite3.Connection, container_did: str, asked_by: dict, at_ms: int,
           approved_by: dict | None = None) -> None:
    """``asked_by``/``approved_by``: an actor's row (``Actor.row()``)."""
    approved_by = approved_by or {}
    conn.execute(
        "INSERT INTO provenance (container_did, kind, via, actor_id, label, approved_kind, approved_via,"
        " recorded_at_ms) VALUES (?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (container_did) DO NOTHING",
        (container_did, asked_by["kind"], asked_by.get("via") or None, asked_by.get("id"), asked_by.get("label"),
         approved_by.get("kind"), approved_by.get("via") or None, at_ms))


def of(conn: sqlite3.Connection, container_did: str) -> dict | None:
    """Who asked for ``container_did`` (and who approved it), or None when this node has no record."""
    row = conn.execute("SELECT kind, via, actor_id, label, approved_kind, approved_via, backfilled FROM provenance"
                       " WHERE container_did = ?", (container_did,)).fetchone()
    if row is None:
        return None
    return {"kind": row[0], "via": row[1], "id": row[2], "label": row[3], "approved_kind": row[4],
            "approved_via": row[5], "backfilled": bool(row[6])}
