"""The lineage index: the first version every versioned container descends from.

An arriving version usually starts a lineage or extends one; then its root is
one lookup. When it joins lineages, or arrives after versions that descend
from it, the roots of its whole connected set of versions are derived again
(``versions.lineage_root``), so the index never depends on arrival order and
the work stays proportional to that one lineage, not to the store.
"""

from __future__ import annotations

import sqlite3

from meshnode.base.container import Container
from meshnode.domain.sync.versions import lineage_root

VERSIONED = ("diary_entry", "semantic_node", "semantic_edges")  # CogSync knowledge (views_cogsync)
MAX_COMPONENT = 100_000  # versions of one lineage walked at most


def _parents(conn: sqlite3.Connection, did: str, cls: str) -> list[str]:
    return [r[0] for r in conn.execute(
        "SELECT l.target_did FROM container_links l JOIN containers c ON c.did = l.target_did"
        " WHERE l.source_did = ? AND l.relation = 'previous_version' AND c.class = ?", (did, cls))]


def _children(conn: sqlite3.Connection, did: str, cls: str) -> list[str]:
    return [r[0] for r in conn.execute(
        "SELECT l.source_did FROM container_links l JOIN containers c ON c.did = l.source_did"
        " WHERE l.target_did = ? AND l.relation = 'previous_version' AND c.class = ?", (did, cls))]


def index_version(conn: sqlite3.Connection, c: Container) -> tuple[set[str], set[str]]:
    """Record ``c`` (already in ``containers``); returns (lineages to redraw, lineages gone)."""
    cls = c.cls
    parents = _parents(conn, c.did, cls)
    children = _children(conn, c.did, cls)
    if not children and len(parents) <= 1:  # the common case: a new lineage, or one more version
        root = c.did
        if parents:
            row = conn.execute("SELECT root FROM container_versions WHERE did = ?", (parents[0],)).fetchone()
            root = row[0] if row else parents[0]
            conn.execute("UPDATE container_versions SET head = 0 WHERE did = ?", (parents[0],))
        conn.execute("INSERT OR REPLACE INTO container_versions (did, class, root, head) VALUES (?, ?, ?, 1)",
                     (c.did, cls, root))
        return {root}, set()
    # a merge or a late ancestor: walk every version connected to this one
    previous: dict[str, list[str]] = {}
    todo = [c.did]
    while todo and len(previous) < MAX_COMPONENT:
        did = todo.pop()
        if did in previous:
            continue
        previous[did] = _parents(conn, did, cls)
        todo.extend(previous[did])
        todo.extend(_children(conn, did, cls))
    old = {r[0] for r in conn.execute(
        f"SELECT DISTINCT root FROM container_versions WHERE did IN ({','.join('?' * len(previous))})",
        list(previous))}
    roots = {did: lineage_root(did, previous) for did in previous}
    # a head of its own lineage: a version that joins lineages replaces only the one it belongs to
    replaced = {p for d, parents in previous.items() for p in parents if roots[p] == roots[d]}
    conn.executemany("INSERT OR REPLACE INTO container_versions (did, class, root, head) VALUES (?, ?, ?, ?)",
                     [(did, cls, root, int(did not in replaced)) for did, root in roots.items()])
    current = set(roots.values())
    return current, old - current


def members(conn: sqlite3.Connection, root: str) -> list[str]:
    return [r[0] for r in conn.execute("SELECT did FROM container_versions WHERE root = ?", (root,))]


def heads(conn: sqlite3.Connection, root: str) -> list[str]:
    """The lineage's versions that no other version of it replaces."""
    return [r[0] for r in conn.execute("SELECT did FROM container_versions WHERE root = ? AND head = 1", (root,))]


def root_of(conn: sqlite3.Connection, did: str) -> str | None:
    row = conn.execute("SELECT root FROM container_versions WHERE did = ?", (did,)).fetchone()
    return row[0] if row else None


def missing(conn: sqlite3.Connection) -> int:
    """Versioned containers the index does not know (a database from before the index)."""
    return conn.execute(
        f"SELECT count(*) FROM containers WHERE class IN ({','.join('?' * len(VERSIONED))})"
        " AND did NOT IN (SELECT did FROM container_versions)", VERSIONED).fetchone()[0]
