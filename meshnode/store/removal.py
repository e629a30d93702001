"""Taking containers out of the store, with every row ``database._insert`` derived from them.

Containers are immutable and normally never leave; quota eviction
(``store.quotas``) is the one reason they do. What an insert wrote and what
goes with the container: ``container_links``, ``container_recipients`` and
``container_forward`` (ON DELETE CASCADE), ``container_tags``, the note row,
and for the versioned CogSync classes the lineage index and the diary,
concept or link row of every lineage it belonged to, redrawn from the
versions that remain; a note an evicted note replaced is shown again when
nothing held replaces it any more. GMP 1.1 containers take their entry and member rows
with them, and their lineages and goal audiences are drawn again from what remains.
Runs inside the caller's write transaction.
"""

from __future__ import annotations

import sqlite3

from meshnode.gmp.rules import GMP_CLASSES, VERSION as GMP_VERSION
from meshnode.store import lineage, views, views_cogsync, views_gmp

_VIEW_TABLE = {"diary_entry": "diary_entries", "semantic_node": "concepts", "semantic_edges": "links"}


def remove_containers(conn: sqlite3.Connection, dids: list[str]) -> int:
    """Delete these containers and their derived rows; returns how many were held."""
    lineages: dict[str, str] = {}  # root -> class, redrawn once at the end
    replaced: set[tuple[str, str]] = set()  # (note, author) an evicted note of the author hid
    gmp: dict[str, str] = {}  # GMP lineage root -> class
    goals: set[str] = set()  # goals whose audience is drawn again
    recount: set[str] = set()  # lineages whose entries may name what goes (their counting changes)
    removed = 0
    for did in dids:
        row = conn.execute("SELECT class, class_version FROM containers WHERE did = ?", (did,)).fetchone()
        if row is None:
            continue
        cls = row[0]
        if cls in GMP_CLASSES and row[1] == GMP_VERSION:
            goals.update(r[0] for r in conn.execute("SELECT goal_lineage FROM gmp_members WHERE did = ?", (did,)))
            root = lineage.root_of(conn, did)
            if root is not None:
                gmp[root] = cls
            recount.update(r[0] for r in conn.execute("SELECT lineage FROM gmp_entries WHERE did = ?", (did,)))
            conn.execute("DELETE FROM gmp_entries WHERE did = ?", (did,))
            conn.execute("DELETE FROM gmp_members WHERE did = ?", (did,))
        elif cls in lineage.VERSIONED:
            root = lineage.root_of(conn, did)
            if root is not None:
                lineages[root] = cls
        if cls == "note":
            replaced.update(conn.execute(
                "SELECT l.target_did, c.sender_did FROM container_links l JOIN containers c ON c.did = l.source_did"
                " WHERE l.source_did = ? AND l.relation = 'previous_version'", (did,)).fetchall())
        conn.execute("DELETE FROM container_tags WHERE did = ?", (did,))
        conn.execute("DELETE FROM notes WHERE container_did = ?", (did,))
        conn.execute("DELETE FROM container_versions WHERE did = ?", (did,))
        conn.execute("DELETE FROM containers WHERE did = ?", (did,))
        removed += 1
    for root, cls in lineages.items():
        _redraw_lineage(conn, root, cls)
    for root, cls in gmp.items():
        _redraw_gmp(conn, root, cls)
    for root in sorted(recount | set(gmp)):
        views_gmp.recount(conn, root)
    for goal in goals:
        views_gmp.draw_audience(conn, goal)
    for target, author in replaced:
        _show_if_no_longer_replaced(conn, target, author)
    return removed


def _show_if_no_longer_replaced(conn: sqlite3.Connection, note: str, author: str) -> None:
    """A note hidden because its author replaced it is shown again once no held note of that
    author replaces it (``views._hide_replaced`` in reverse): eviction order is arrival order,
    which need not be the order of versions, so the newer note can go first."""
    if not views.replaced_by_own_note(conn, note, author):
        conn.execute("UPDATE notes SET hidden = 0 WHERE container_did = ? AND agent_did = ?", (note, author))


def _redraw_lineage(conn: sqlite3.Connection, root: str, cls: str) -> None:
    """Index the lineage's remaining versions again from scratch: a removed version may have
    been its root, its head or the link between two halves that now stand apart."""
    table = _VIEW_TABLE[cls]
    left = [r[0] for r in conn.execute("SELECT did FROM container_versions WHERE root = ?", (root,))]
    conn.execute(f"DELETE FROM {table} WHERE lineage = ?", (root,))
    conn.executemany("DELETE FROM container_versions WHERE did = ?", [(d,) for d in left])
    for did in left:  # any order: each joined set is walked whole when one of its members has children
        views_cogsync.refresh(conn, views_cogsync.load_stored(conn, did))



def _redraw_gmp(conn: sqlite3.Connection, root: str, cls: str) -> None:
    """A GMP lineage indexed and drawn again from its remaining versions, in arrival order.
    With none left, its row goes unless local rows still point at it (then it stays as it was)."""
    left = [r[0] for r in conn.execute("SELECT v.did FROM container_versions v JOIN containers c ON c.did = v.did"
                                       " WHERE v.root = ? ORDER BY c.rowid", (root,))]
    conn.executemany("DELETE FROM container_versions WHERE did = ?", [(d,) for d in left])
    if not left:
        conn.execute("DELETE FROM task_holders WHERE lineage = ?", (root,))
        if cls == "task":
            conn.execute("DELETE FROM tasks WHERE lineage = ? AND NOT EXISTS (SELECT 1 FROM llm_recent_responses r"
                         " WHERE r.task_id = tasks.id)", (root,))
        else:
            conn.execute("DELETE FROM goal_links WHERE child_goal_id IN (SELECT id FROM goals WHERE lineage = ?)",
                         (root,))
            conn.execute("DELETE FROM goals WHERE lineage = ? AND NOT EXISTS (SELECT 1 FROM tasks t WHERE t.goal_id"
                         " = goals.id) AND NOT EXISTS (SELECT 1 FROM goal_links l WHERE l.parent_goal_id = goals.id)",
                         (root,))
        return
    for did in left:
        views_gmp.refresh(conn, views_cogsync.load_stored(conn, did))
