"""The person's lines: signals for an agent that cannot think (no LLM configured), kept for the
person instead of waking it (``engines/reactor/agent_off.py``; table ``reactor_person_lines``,
written by the reactor's ``save_step``). The inbox lists the unread ones, one line each
(``records/inbox.py``); the person marks one read. Functions take a Database and run in the
store's threads; the time is an argument.
"""

from __future__ import annotations

import json

from meshnode.base.errors import MeshnodeError
from meshnode.store.database import Database, sql_errors

COLUMNS = "id, event_key, agent, event_type, subject, summary, refs, at_ms"


def unread_count(db: Database) -> int:
    with sql_errors("counting the person's lines"):
        return db.conn.execute("SELECT count(*) FROM reactor_person_lines INDEXED BY reactor_person_lines_unread"
                               " WHERE read_ms IS NULL").fetchone()[0]


def unread(db: Database, limit: int) -> list[dict]:
    """The unread lines, newest first (at most ``limit``), ``refs`` decoded."""
    with sql_errors("reading the person's lines"):
        rows = db.conn.execute(f"SELECT {COLUMNS} FROM reactor_person_lines WHERE read_ms IS NULL"
                               " ORDER BY id DESC LIMIT ?", (limit,)).fetchall()
    out = []
    for id_, key, agent, etype, subject, summary, refs, at in rows:
        try:
            decoded = json.loads(refs or "{}")
        except ValueError:
            decoded = {}
        out.append({"id": id_, "event_key": key, "agent": agent, "event_type": etype, "subject": subject,
                    "summary": summary, "refs": decoded if isinstance(decoded, dict) else {}, "at_ms": at})
    return out


def mark_read(db: Database, line_id: int, now_ms: int) -> dict:
    """Line ``line_id`` read by the person (again: no change). MeshnodeError not_found."""
    with db.transaction() as conn:
        row = conn.execute("SELECT read_ms FROM reactor_person_lines WHERE id = ?", (line_id,)).fetchone()
        if row is None:
            raise MeshnodeError("not_found", f"no inbox notice {line_id}")
        if row[0] is None:
            conn.execute("UPDATE reactor_person_lines SET read_ms = ? WHERE id = ?", (now_ms, line_id))
    return {"read": line_id}


def add(db: Database, *, event_key: str, agent: str, event_type: str, subject: str, summary: str, refs: dict,
        at_ms: int, now_ms: int) -> bool:
    """A line for the person that is no reactor signal (the node telling what it did on its own, e.g. a
    steward's takeover, gmp.md section 8); once per ``event_key``. False when it was there already."""
    with db.transaction() as conn:
        return conn.execute(
            "INSERT OR IGNORE INTO reactor_person_lines (event_key, agent, event_type, subject, summary, refs, at_ms,"
            " created_ms) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
            (event_key, agent, event_type, subject, summary, json.dumps(refs), at_ms, now_ms)).rowcount == 1
