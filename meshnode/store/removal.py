"""Taking containers out of the store, with every row ``database._insert`` derived from them.

Containers are immutable and normally never leave; quota eviction
(``store.quotas``) is the one reason they do. What an insert wrote and what
goes with the container: ``container_links``, ``container_recipients`` and
``container_forward`` (ON DELETE CASCADE), ``container_tags``, the note row,
and for the versioned CogSync classes the lineage index and the diary,
concept or link row of every lineage it belonged to, redrawn from the
versions that remain; a note an evicted note replaced is shown again when
nothing held replaces it any more. A class with store hooks (GMP 1.1) has its
own rows taken and drawn again by its hooks' ``removal`` (``store.hooks``).
Runs inside the caller's write transaction.
"""

from __future__ import annotations

import sqlite3

from meshnode.store import lineage, views, views_cogsync
from meshnode.store.hooks import ClassHooks, Removal, StoreHooks

_VIEW_TABLE = {"diary_entry": "diary_entries", "semantic_node": "concepts", "semantic_edges": "links"}


def remove_containers(conn: sqlite3.Connection, dids: list[str], hooks: StoreHooks) -> int:
    """Delete these containers and their derived rows; returns how many were held. ``hooks``:
    the store's (``Database.hooks``), for the classes whose rows are their hooks' own."""
    lineages: dict[str, str] = {}  # root -> class, redrawn once at the end
    replaced: set[tuple[str, str]] = set()  # (note, author) an evicted note of the author hid
    hooked: dict[ClassHooks, Removal] = {}  # one removal per hooks object that takes part
    hooks.check()
    removed = 0
    for did in dids:
        row = conn.execute("SELECT class, class_version FROM containers WHERE did = ?", (did,)).fetchone()
        if row is None:
            continue
        cls = row[0]
        own = hooks.of_class(cls, row[1])
        if own is not None:
            if own not in hooked:
                hooked[own] = own.removal(conn)
            hooked[own].take(did, cls)
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
    for removal in hooked.values():
        removal.finish()
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
