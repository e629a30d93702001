"""Held commands: what the validation reflex did not let run, waiting for a person (issue 12, item 11).

When the validators reject an answer (``rejected``) or none of them gives a
verdict (``no_verdict``: unreachable, or answering out of form), the
answer's commands are kept here instead of vanishing into the log. A person
sees them (``meshnode mind held``, ``meshnode status``) and decides:
``decide(..., release=True)`` lets them run, ``release=False`` drops them.
That one function is what the actions ``mind_release`` and ``mind_drop``
(meshnode.app.actions.mind) call, for every face. The node runs
released commands (``claim_released`` then ``finish``: a crash while one
runs never runs it twice). The oldest held commands beyond MAX_HELD expire.
Functions run in the store's worker thread.
"""

from __future__ import annotations

import json

from meshnode.base.errors import MeshnodeError
from meshnode.store.database import Database, sql_errors

MAX_HELD = 500
MAX_IDS = 1000  # per decision
STATUSES = ('held', 'released', 'running', 'done', 'failed', 'dropped', 'expired')
DEFAULT_LIMIT = 100
_COLUMNS = "id, tick, cmd_id, type, command, kind, reason, status, created_ms, decided_ms, decided_by, result"


class HeldError(MeshnodeError):
    """A held command that cannot be found or decided."""


def hold(conn, tick: int, commands: list, kind: str, reason: str, now_ms: int) -> list[int]:
    """Keep ``commands`` (the cycle's ``Command``s, inside the caller's transaction); returns their ids."""
    ids = []
    for cmd in commands:
        body = {"cmd_id": cmd.cmd_id, "type": cmd.type, "args": cmd.args, "description": cmd.description,
                "target_llm": cmd.target_llm, "mutating": cmd.mutating}
        ids.append(conn.execute(
            "INSERT INTO held_commands (tick, cmd_id, type, command, kind, reason, created_ms)"
            " VALUES (?, ?, ?, ?, ?, ?, ?)",
            (tick, cmd.cmd_id, cmd.type, json.dumps(body, ensure_ascii=False), kind, reason[:1000], now_ms)).lastrowid)
    conn.execute("UPDATE held_commands SET status = 'expired' WHERE status = 'held' AND id NOT IN"
                 " (SELECT id FROM held_commands WHERE status = 'held' ORDER BY id DESC LIMIT ?)", (MAX_HELD,))
    return ids


def listing(db: Database, status: str | None = "held", limit: int = DEFAULT_LIMIT) -> list[dict]:
    """Newest first; ``status`` None: all."""
    if status is not None and status not in STATUSES:
        raise HeldError("bad_status", f"a held command's status is one of {', '.join(STATUSES)}")
    where, params = ("WHERE status = ?", [status]) if status else ("", [])
    with sql_errors("reading held commands"):
        rows = db.conn.execute(f"SELECT {_COLUMNS} FROM held_commands {where} ORDER BY id DESC LIMIT ?",
                               (*params, max(1, min(int(limit), 10_000)))).fetchall()
    return [_row(r) for r in rows]


def summary(db: Database) -> dict:
    """For ``status``: how many wait, why (by kind), the newest reason, and how many are released
    but not run yet."""
    with sql_errors("reading held commands"):
        kinds = dict(db.conn.execute("SELECT kind, count(*) FROM held_commands WHERE status = 'held' GROUP BY kind"))
        newest = db.conn.execute("SELECT reason FROM held_commands WHERE status = 'held' ORDER BY id DESC"
                                 " LIMIT 1").fetchone()
        released = db.conn.execute("SELECT count(*) FROM held_commands WHERE status = 'released'").fetchone()[0]
    return {"count": sum(kinds.values()), "by_kind": kinds, "reason": newest[0] if newest else None,
            "released_waiting": released}


def decide(db: Database, ids: list[int] | None, release: bool, now_ms: int, by: str) -> list[dict]:
    """Release (let run) or drop held commands: ``ids``, or every held one when None. Refuses ids
    that are unknown or no longer held, naming them, and then changes nothing."""
    if ids is not None and (not isinstance(ids, list) or not ids or len(ids) > MAX_IDS
                            or not all(isinstance(i, int) and not isinstance(i, bool) and i > 0 for i in ids)):
        raise HeldError("bad_ids", f"name 1 to {MAX_IDS} held commands by their numbers (see `meshnode mind held`),"
                        " or all of them")
    with db.transaction() as conn:
        if ids is None:
            chosen = [r[0] for r in conn.execute("SELECT id FROM held_commands WHERE status = 'held' ORDER BY id")]
        else:
            chosen = sorted(set(ids))
            found = dict(conn.execute(f"SELECT id, status FROM held_commands WHERE id IN"
                                      f" ({','.join('?' * len(chosen))})", chosen)) if chosen else {}
            missing = [i for i in chosen if i not in found]
            if missing:
                raise HeldError("not_found", "no held command " + ", ".join(map(str, missing))
                                + "; see `meshnode mind held`")
            done = [f"{i} is {found[i]}" for i in chosen if found[i] != "held"]
            if done:
                raise HeldError("not_held", "not held any more: " + ", ".join(done))
        conn.executemany("UPDATE held_commands SET status = ?, decided_ms = ?, decided_by = ? WHERE id = ?",
                         [("released" if release else "dropped", now_ms, by[:64], i) for i in chosen])
        rows = conn.execute(f"SELECT {_COLUMNS} FROM held_commands WHERE id IN ({','.join('?' * len(chosen))})"
                            " ORDER BY id", chosen).fetchall() if chosen else []
    return [_row(r) for r in rows]


def waiting(db: Database, status: str) -> int:
    """How many are in ``status`` (a read, so the loop takes the write lock only when there is work)."""
    with sql_errors("reading held commands"):
        return db.conn.execute("SELECT count(*) FROM held_commands WHERE status = ?", (status,)).fetchone()[0]


def claim_released(db: Database, limit: int = 64) -> list[tuple[int, dict, str]]:
    """Released commands to run now, oldest first, as (id, the command as ``hold`` kept it, who
    released it); each is marked running, so no one else takes it and a crash leaves it failed,
    not run twice."""
    with db.transaction() as conn:
        rows = conn.execute("SELECT id, command, decided_by FROM held_commands WHERE status = 'released'"
                            " ORDER BY id LIMIT ?", (limit,)).fetchall()
        conn.executemany("UPDATE held_commands SET status = 'running', result = ? WHERE id = ?",
                         [(json.dumps({"error": "interrupted while running"}), r[0]) for r in rows])
    return [(held_id, json.loads(body), by or "person") for held_id, body, by in rows]


def finish(db: Database, held_id: int, result: dict) -> None:
    text = json.dumps(result, default=str, ensure_ascii=False).encode("utf-8", "backslashreplace")
    with db.transaction() as conn:
        conn.execute("UPDATE held_commands SET status = ?, result = ? WHERE id = ?",
                     ("done" if result.get("status") == "ok" else "failed", text.decode("utf-8")[:65536], held_id))


def interrupted(db: Database) -> int:
    """At start: commands left running by a crash are failed (never run twice)."""
    with db.transaction() as conn:
        return conn.execute("UPDATE held_commands SET status = 'failed' WHERE status = 'running'").rowcount


def _row(r: tuple) -> dict:
    out = dict(zip([c.strip() for c in _COLUMNS.split(",")], r))
    out["command"] = json.loads(out["command"])
    if out["result"] is not None:
        out["result"] = json.loads(out["result"])
    return out
