"""A person's decisions at the gate, one function per decision (the actions of
meshnode.app.actions.gate call them, for every face).

Each does the gate's work and then writes the ``gate:<what>`` row in ``process_log`` that the
agent's next tick shows in context 4, so the agent learns what a person decided, the same way
whichever face the person used. ``by`` names that face ("cli", "web", "mcp": the actor's); it is
kept in the row's tags. The gate's jail (the agent's workspace) is passed in. Functions run in the
store's worker thread (``store.write``).
"""

from __future__ import annotations

import json

from meshnode.base.errors import GateError
from meshnode.records.gate import budget, confirm, drafts, snapshots
from meshnode.store.database import Database

SESSION = "core"  # the session the node's agent drafts in and a person reviews
DECISIONS = ("accept", "reject")
UNTOLD = ("a2a_message",)  # meshnode.faces.a2a: an unknown party's message reaches the agent only once delivered


def tell_agent(db: Database, what: str, result, by: str) -> None:
    """The row the agent's context 4 shows: ``gate:<what>`` with the outcome."""
    with db.transaction() as conn:
        conn.execute("INSERT INTO process_log (name, value, tags) VALUES (?, ?, ?)",
                     (f"gate:{what}", json.dumps(result, default=str)[:4000], json.dumps(["gate", "person", by])))


def decide(db: Database, jail, decision: str, paths: list[str] | None, by: str, *,
           all_or_nothing: bool = False) -> dict:
    """Accept or reject the drafts of ``paths`` (None: all it applies to); accepting takes only
    what the person was last shown (``drafts.listing``), the rest is in ``changed_since_listed``.
    ``all_or_nothing`` (the web): an accept that would leave one out, or a path with no open
    draft, is refused before anything is decided ("not_shown", "not_found")."""
    if decision not in DECISIONS:
        raise GateError("bad_decision", f"a decision is 'accept' or 'reject', not {decision!r}")
    if paths is not None and not paths:
        raise GateError("bad_arguments", f"name the drafts to {decision}, or all of them")
    if all_or_nothing:
        unseen = drafts.unshown(db, jail, SESSION, paths)
        if decision == "accept" and unseen:
            raise GateError("not_shown", f"{', '.join(unseen)} changed since the drafts were last listed (or were"
                            " never listed); nothing was decided: look at them again")
    result = drafts.decide_many(db, jail, SESSION, decision, paths)
    tell_agent(db, decision, result, by)
    return result


def edit(db: Database, jail, path: str, content: bytes | str, by: str) -> dict:
    """The person's own content for an open draft (its status stays as it was)."""
    data = content.encode("utf-8", "surrogatepass") if isinstance(content, str) else bytes(content)
    row = drafts.edit(db, jail, SESSION, path, data)
    tell_agent(db, "edit", row, by)
    return row


def commit(db: Database, jail, message: str, by: str) -> int:
    """Write the accepted drafts after a snapshot; returns the snapshot's id."""
    snapshot_id = drafts.commit(db, jail, SESSION, message)
    tell_agent(db, "commit", snapshot_id, by)
    return snapshot_id


def rollback(db: Database, jail, snapshot_id: int, by: str) -> int:
    """Restore the snapshot's files; returns the id of the snapshot of the state before."""
    new_id = snapshots.restore(db, jail, snapshot_id)
    tell_agent(db, f"rollback of {snapshot_id}", new_id, by)
    return new_id


def answer(db: Database, request_id: int, approve: bool, now_ms: int, by: str) -> dict:
    """Approve or reject a confirmation request; a running node acts on it at its next tick."""
    row = confirm.decide(db, request_id, approve, now_ms, by)
    told = {k: row[k] for k in ("id", "tool", "status")} if row["tool"] in UNTOLD else row
    tell_agent(db, "confirmation", told, by)
    return row


def reset_limit(db: Database, now_ms: int, by: str) -> dict:
    """A fresh budget of tool calls for the agent, from its next tick."""
    marker = budget.request_reset(db, now_ms, by)
    tell_agent(db, "limit reset", marker, by)
    return marker
