"""Confirmation requests: a person's yes or no on a destructive call, without blocking the agent.

The seed's sample asks with ``input()``, which stops the whole loop until
someone types. Here a request is a row (and a private note to the user): the
agent carries on with other work, a front end (the CLI's ``meshnode confirm``,
later the web notebook or the mesh) approves or rejects it, and the loop runs
an approved call at its next tick. Unanswered requests expire. Functions run
in the store's worker thread.
"""

from __future__ import annotations

import json

from meshnode.base.errors import GateError
from meshnode.store.database import Database, sql_errors

DEFAULT_TTL_MS = 3600 * 1000
_COLUMNS = "id, session, tool, args, risk, reason, status, created_ms, expires_ms, decided_ms, decided_by, result"


def request(db: Database, session: str, tool: str, args: dict, risk: str, reason: str, now_ms: int,
            ttl_ms: int = DEFAULT_TTL_MS) -> dict:
    """A pending request; the same call asked again while one is pending returns that one."""
    text = json.dumps(args, sort_keys=True, ensure_ascii=False)
    with db.transaction() as conn:
        row = conn.execute(f"SELECT {_COLUMNS} FROM gate_confirmations WHERE session = ? AND tool = ? AND args = ?"
                           " AND status = 'pending' AND expires_ms > ?", (session, tool, text, now_ms)).fetchone()
        if row is None:
            cur = conn.execute("INSERT INTO gate_confirmations (session, tool, args, risk, reason, created_ms,"
                               " expires_ms) VALUES (?, ?, ?, ?, ?, ?, ?)",
                               (session, tool, text, risk, reason, now_ms, now_ms + ttl_ms))
            row = conn.execute(f"SELECT {_COLUMNS} FROM gate_confirmations WHERE id = ?", (cur.lastrowid,)).fetchone()
    return _row(row)


def listing(db: Database, now_ms: int, status: str | None = "pending", limit: int = 50) -> list[dict]:
    expire(db, now_ms)
    where, params = ("WHERE status = ?", [status]) if status else ("", [])
    with sql_errors("reading confirmations"):
        rows = db.conn.execute(f"SELECT {_COLUMNS} FROM gate_confirmations {where} ORDER BY id DESC LIMIT ?",
                               (*params, limit)).fetchall()
    return [_row(r) for r in rows]


def decide(db: Database, request_id: int, approve: bool, now_ms: int, by: str) -> dict:
    expire(db, now_ms)
    with db.transaction() as conn:
        row = conn.execute(f"SELECT {_COLUMNS} FROM gate_confirmations WHERE id = ?", (request_id,)).fetchone()
        if row is None:
            raise GateError("not_found", f"no confirmation request {request_id}")
        if row[6] != "pending":
            raise GateError("already_decided", f"request {request_id} is {row[6]}, not pending")
        conn.execute("UPDATE gate_confirmations SET status = ?, decided_ms = ?, decided_by = ? WHERE id = ?",
                     ("approved" if approve else "rejected", now_ms, by, request_id))
        return _row(conn.execute(f"SELECT {_COLUMNS} FROM gate_confirmations WHERE id = ?",
                                 (request_id,)).fetchone())


def approved(db: Database, session: str) -> list[dict]:
    """Approved requests not yet run, oldest first."""
    with sql_errors("reading confirmations"):
        rows = db.conn.execute(f"SELECT {_COLUMNS} FROM gate_confirmations WHERE session = ? AND status ="
                               " 'approved' ORDER BY id", (session,)).fetchall()
    return [_row(r) for r in rows]


def claim(db: Database, request_id: int) -> bool:
    """Take an approved request to run it: it is marked failed ("interrupted") until ``finish``,
    so a crash while it runs never leads to a second run. False when someone else took it."""
    with db.transaction() as conn:
        return conn.execute("UPDATE gate_confirmations SET status = 'failed', result = ? WHERE id = ? AND"
                            " status = 'approved'", (json.dumps({"error": "interrupted while running"}),
                                                    request_id)).rowcount == 1


def finish(db: Database, request_id: int, ok: bool, result: dict) -> None:
    text = json.dumps(result, default=str).encode("utf-8", "backslashreplace").decode("utf-8")[:65536]
    with db.transaction() as conn:
        conn.execute("UPDATE gate_confirmations SET status = ?, result = ? WHERE id = ?",
                     ("done" if ok else "failed", text, request_id))


def expire(db: Database, now_ms: int) -> int:
    with db.transaction() as conn:
        return conn.execute("UPDATE gate_confirmations SET status = 'expired' WHERE status = 'pending'"
                            " AND expires_ms <= ?", (now_ms,)).rowcount


def _row(r: tuple) -> dict:
    out = dict(zip([c.strip() for c in _COLUMNS.split(",")], r))
    out["args"] = json.loads(out["args"])
    if out["result"] is not None:
        out["result"] = json.loads(out["result"])
    return out
