"""The agent's budget of tool calls as the store sees it (``guards.IterationLimiter`` counts).

Two things end a piece of work from outside the gate: a new task or goal
(``work``: a key that changes when one is added), and a person's reset
(``request_reset``: a marker the running node picks up at its next tick;
the CLI and, later, the web notebook and MCP call it, also while the node is
stopped). Functions run in the store's worker thread.
"""

from __future__ import annotations

import json

from meshnode.store.database import Database, sql_errors

RESET_KEY = "gate.calls_reset"


def work(db: Database) -> str:
    """Changes when a task or goal is added. Fact-check tasks, which the cycle makes by itself
    from the agent's own answers, do not count: they would let a loop renew its own budget."""
    with sql_errors("reading tasks and goals"):
        (goal,) = db.conn.execute("SELECT coalesce(max(id), 0) FROM goals").fetchone()
        (task,) = db.conn.execute("SELECT coalesce(max(id), 0) FROM tasks WHERE tags IS NULL OR tags NOT LIKE"
                                  " '%\"fact-check\"%'").fetchone()
    return f"goal {goal}, task {task}"


def request_reset(db: Database, now_ms: int, by: str) -> dict:
    """A person's reset of the agent's call budget; a running node applies it at its next tick."""
    marker = {"at_ms": now_ms, "by": by}
    with db.transaction() as conn:
        conn.execute("INSERT INTO config (key, value) VALUES (?, ?) ON CONFLICT (key) DO UPDATE SET value ="
                     " excluded.value", (RESET_KEY, json.dumps(marker)))
    return marker


def reset_marker(db: Database) -> str | None:
    """The last reset request as stored (compared as text: any new request differs)."""
    with sql_errors("reading the gate's reset"):
        row = db.conn.execute("SELECT value FROM config WHERE key = ?", (RESET_KEY,)).fetchone()
    return row[0] if row else None


def state(db: Database) -> tuple[str, str | None]:
    """(work, reset marker): what ``Gate.refresh`` reads once per tick."""
    return work(db), reset_marker(db)
