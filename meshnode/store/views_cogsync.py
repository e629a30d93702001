"""CogSync knowledge as views: diary entries, concepts and links.

Each lineage of versions (``store.lineage``) is one row, showing the version
``sync.versions.choose`` picks; forks are counted beside it. A link row is
one (source, target, relation) of the shown ``semantic_edges`` version; links
name concepts by container DID (any version), and ``from_concept_id`` /
``to_concept_id`` point at the concept rows when this node holds them.
"""

from __future__ import annotations

import json
import sqlite3

from meshnode.base.container import Container, Limits, decode_container, format_ms
from meshnode.store import lineage
from meshnode.domain.sync.versions import choose

# stored containers were verified on arrival; re-reading them ignores limits and the clock
_STORED = Limits(max_bytes=64 * 1024 * 1024, max_depth=256, max_items=64 * 1024 * 1024, clock_skew_ms=2**62)


def refresh(conn: sqlite3.Connection, c: Container) -> None:
    """Index a versioned container and redraw the rows of the lineages it touches."""
    table, write = _WRITERS[c.cls]
    redraw, gone = lineage.index_version(conn, c)
    for root in gone:
        conn.execute(f"DELETE FROM {table} WHERE lineage = ?", (root,))
    for root in redraw:
        # choose() needs only the heads; the one just verified by the caller is not decoded again
        versions = [c if did == c.did else load_stored(conn, did) for did in lineage.heads(conn, root)]
        versions = [v for v in versions if v.payload.get("retracted") is not True]  # knowledge_edits.retract
        if not versions:  # every head withdrawn: the lineage is gone from the view
            conn.execute(f"DELETE FROM {table} WHERE lineage = ?", (root,))
            continue
        shown, forks = choose(versions)  # from the containers only: every node that holds them agrees
        write(conn, root, shown, forks)


def load_stored(conn: sqlite3.Connection, did: str) -> Container:
    """A held container, read again whatever limits it arrived under (``_STORED``)."""
    core = conn.execute("SELECT core FROM containers WHERE did = ?", (did,)).fetchone()[0]
    return decode_container(core, now_ms=2**62, limits=_STORED)


def _diary(conn: sqlite3.Connection, root: str, shown: Container, forks: int) -> None:
    p = shown.payload
    conn.execute(
        """
        INSERT INTO diary_entries (lineage, container_did, author_did, text, tags, timestamp, forks)
        VALUES (?, ?, ?, ?, ?, ?, ?)
        ON CONFLICT (lineage) DO UPDATE SET container_did = excluded.container_did,
            author_did = excluded.author_did, text = excluded.text, tags = excluded.tags,
            timestamp = excluded.timestamp, forks = excluded.forks
        """,
        (root, shown.did, shown.sender_did, p["content"], json.dumps(p.get("topics", [])),
         format_ms(shown.timestamp_ms), forks),
    )


def _concept(conn: sqlite3.Connection, root: str, shown: Container, forks: int) -> None:
    p = shown.payload
    conn.execute(
        """
        INSERT INTO concepts (lineage, container_did, author_did, name, description, aliases, tags,
                              timestamp, forks)
        VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)
        ON CONFLICT (lineage) DO UPDATE SET container_did = excluded.container_did,
            author_did = excluded.author_did, name = excluded.name, description = excluded.description,
            aliases = excluded.aliases, tags = excluded.tags, timestamp = excluded.timestamp,
            forks = excluded.forks
        """,
        (root, shown.did, shown.sender_did, p["label"], p.get("description"), json.dumps(p.get("aliases", [])),
         json.dumps(shown.head.get("tags", [])), format_ms(shown.timestamp_ms), forks),
    )
    concept_id = conn.execute("SELECT id FROM concepts WHERE lineage = ?", (root,)).fetchone()[0]
    versions = lineage.members(conn, root)
    marks = ",".join("?" * len(versions))
    conn.execute(f"UPDATE links SET from_concept_id = ? WHERE from_did IN ({marks})", [concept_id, *versions])
    conn.execute(f"UPDATE links SET to_concept_id = ? WHERE to_did IN ({marks})", [concept_id, *versions])


def _concept_id(conn: sqlite3.Connection, did: str) -> int | None:
    root = lineage.root_of(conn, did)
    row = conn.execute("SELECT id FROM concepts WHERE lineage = ?", (root,)).fetchone() if root else None
    return row[0] if row else None


def _links(conn: sqlite3.Connection, root: str, shown: Container, forks: int) -> None:
    p = shown.payload
    conn.execute("DELETE FROM links WHERE lineage = ?", (root,))
    rows = []
    for source, edges in sorted(p["edges"].items()):
        for edge in edges:
            for target in edge["targets"]:
                rows.append((_concept_id(conn, source), _concept_id(conn, target), edge["relation"],
                             json.dumps(shown.head.get("tags", [])), format_ms(shown.timestamp_ms), root,
                             shown.did, shown.sender_did, source, target, edge.get("inverse_relation"),
                             int(bool(edge.get("bidirectional", False))), edge.get("context"), p.get("domain")))
    conn.executemany(
        "INSERT INTO links (from_concept_id, to_concept_id, relation_type, tags, timestamp, lineage, container_did,"
        " author_did, from_did, to_did, inverse_relation, bidirectional, context, domain)"
        " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)", rows)


_WRITERS = {
    "diary_entry": ("diary_entries", _diary),
    "semantic_node": ("concepts", _concept),
    "semantic_edges": ("links", _links),
}
