"""Isolated mode (seed 000, "Emergency Consensus"): decisions taken without the mesh, kept to revisit.

With no peer connected the mind still acts, validated on this node only. A
decision "needed the mesh" when the mesh would have had a say in it or sees
its effect: it acts through the mesh (proposals, messages, sync, announce),
is a vote or a change of the ethics policies, shares something (a note for
friends or the public; diary entries, concepts and links, which CogSync
gives to friends), or acts on the host through the action gate (files,
programs). Each such command is one row of ``emergency_decisions``, on this
node only -- not a diary entry and never shared -- whether the LLM or a
person (releasing a held command) decided it. Reading, local memory,
goals, tasks and cycle settings are not recorded. When the mesh is back,
one pinned task lists what was decided alone since the last revisit.
Functions run in the store's worker thread.
"""

from __future__ import annotations

import json

from meshnode.engines.cognition import gate_commands, mesh_commands, processes
from meshnode.engines.cognition.command_types import command_type
from meshnode.store.database import Database, sql_errors

TAG = "emergency_consensus"
_SHARED_KNOWLEDGE = ("diary_add", "concept_add", "link_add")
_SHARED_WORK = ("task_delegate", "task_accept", "task_refuse")  # answers another agent waits for
_LISTED = 50  # decisions named in the revisit task; the rest are counted
KEEP = 10_000  # rows kept


def needs_mesh(cmd_type: str, args: dict) -> str | None:
    """Why a command of this type needed the mesh, or None when it did not."""
    kind = command_type(cmd_type)
    if cmd_type in mesh_commands.MESH_TYPES:
        return "acts through the mesh"
    if cmd_type == "consensus_vote":
        return "a vote for the committee"
    if cmd_type.startswith("ethics_") and (kind is None or kind.mutating):
        return "changes the ethics policies"
    if cmd_type == "note_add" and args.get("audience", "private") != "private":
        return f"leaves the node (audience {args.get('audience')})"
    if cmd_type in _SHARED_WORK:
        return "work shared with other agents (GMP)"
    if cmd_type in _SHARED_KNOWLEDGE:
        return "knowledge shared with friends"
    if cmd_type in (*gate_commands.ASYNC_TYPES, *processes.ASYNC_TYPES) and (kind is None or kind.mutating):
        return "acts on the host"
    return None


def record(conn, now_ms: int, tick: int | None, results: list[tuple[dict, dict]], by: str = "agent") -> int:
    """One row per decision that needed the mesh, inside the caller's transaction. ``results``:
    (command as {"cmd_id", "type", "args"}, its result). A command that did not run is no
    decision, except one that acts through the mesh (its failure is the thing to revisit)."""
    n = 0
    for cmd, result in results:
        why = needs_mesh(cmd["type"], cmd.get("args") or {})
        ok = result.get("status") == "ok"
        if why is None or not (ok or cmd["type"] in mesh_commands.MESH_TYPES):
            continue
        inner = result.get("result")
        outcome = f"error: {result.get('error')}" if not ok else \
            f"ok ({inner['status']})" if isinstance(inner, dict) and isinstance(inner.get("status"), str) else "ok"
        args = json.dumps(cmd.get("args") or {}, ensure_ascii=False, sort_keys=True, default=str)
        summary = f"{cmd['type']} ({cmd['cmd_id']}) {args[:200]}{'...' if len(args) > 200 else ''} -> {outcome[:160]}"
        conn.execute("INSERT INTO emergency_decisions (created_ms, tick, cmd_id, type, why, summary, status,"
                     " decided_by) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                     (now_ms, tick, cmd["cmd_id"], cmd["type"], why, _text(summary), "ok" if ok else "error", by[:64]))
        n += 1
    if n:  # bounded: the oldest go first (a revisit task already lists what was revisited)
        conn.execute("DELETE FROM emergency_decisions WHERE id <= (SELECT max(id) FROM emergency_decisions) - ?",
                     (KEEP,))
    return n


def record_now(db: Database, now_ms: int, tick: int | None, results: list[tuple[dict, dict]],
               by: str = "agent") -> int:
    """``record`` in a transaction of its own."""
    with db.transaction() as conn:
        return record(conn, now_ms, tick, results, by)


def to_revisit(db: Database) -> int:
    with sql_errors("reading emergency decisions"):
        return db.conn.execute("SELECT count(*) FROM emergency_decisions WHERE revisit_task IS NULL").fetchone()[0]


def revisit_task(db: Database) -> int | None:
    """The mesh is back: one pinned task lists the decisions taken alone since the last revisit;
    returns its id (None when there were none)."""
    with db.transaction() as conn:
        rows = conn.execute("SELECT id, why, summary, decided_by FROM emergency_decisions WHERE revisit_task IS NULL"
                            " ORDER BY id").fetchall()
        if not rows:
            return None
        lines = [f"- #{i} {summary} [{why}{'' if by == 'agent' else f'; released by {by}'}]"
                 for i, why, summary, by in rows[:_LISTED]]
        if len(rows) > _LISTED:
            lines.append(f"- ... and {len(rows) - _LISTED} more (table emergency_decisions)")
        task_id = conn.execute(
            "INSERT INTO tasks (name, description, tags, priority, pinned) VALUES (?, ?, ?, 5, 1)",
            (f"revisit {len(rows)} decision(s) taken in isolated mode",
             "The mesh is back. These were decided on this node alone; check them with the mesh"
             " (consensus, peers' views), and redo what failed for want of it:\n" + "\n".join(lines),
             json.dumps([TAG, "revisit"]))).lastrowid
        conn.execute("UPDATE emergency_decisions SET revisit_task = ? WHERE revisit_task IS NULL AND id <= ?",
                     (task_id, rows[-1][0]))
    return task_id


def _text(s: str) -> str:
    return s.encode("utf-8", "backslashreplace").decode("utf-8")
