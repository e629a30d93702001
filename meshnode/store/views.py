"""Agent tables as views of containers.

``materialize`` writes the table row(s) a container stands for; running it
again for the same container is harmless (upsert by container DID), so the
tables can always be rebuilt from the ``containers`` table. Local columns
(read marks, local tags, hidden) are left alone by a rebuild.
"""

from __future__ import annotations

import json
import sqlite3

from meshnode.container import Container, Limits, decode_container, format_ms
from meshnode.sync.versions import choose, lineage_root


def materialize(conn: sqlite3.Connection, c: Container, local: dict | None = None) -> None:
    handler = _HANDLERS.get(c.cls)
    if handler is not None and c.known_class and type(c.payload) is dict:  # not for encrypted payloads
        handler(conn, c, local or {})


def _note(conn: sqlite3.Connection, c: Container, local: dict) -> None:
    p = c.payload
    conn.execute(
        """
        INSERT INTO notes (container_did, topic, text, code, mentions, hashtags, agent_did, source,
                           priority, timestamp, audience, tags, user_did)
        VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
        ON CONFLICT (container_did) DO UPDATE SET
            topic = excluded.topic, text = excluded.text, code = excluded.code,
            mentions = excluded.mentions, hashtags = excluded.hashtags, agent_did = excluded.agent_did,
            source = excluded.source, priority = excluded.priority, timestamp = excluded.timestamp,
            audience = excluded.audience
        """,
        (
            c.did,
            p.get("topic"),
            p["text"],
            p.get("code"),
            json.dumps(p.get("mentions", [])),
            json.dumps(p.get("hashtags", [])),
            c.sender_did,
            p["source"],
            p.get("priority", 0),
            format_ms(c.timestamp_ms),
            p["audience"],
            json.dumps(local["tags"]) if local.get("tags") else None,
            p.get("user_did", "ALL"),
        ),
    )


def _diary_entry(conn: sqlite3.Connection, c: Container, local: dict) -> None:
    """Re-derive the diary rows this version affects from every version held.

    Usually only its own lineage changes. When it joins lineages (several
    previous versions) or arrives after versions that descend from it, the
    lineages of every version are recomputed, so the view never depends on the
    order containers arrived in.
    """
    previous: dict[str, list[str]] = {did: [] for (did,) in conn.execute(
        "SELECT did FROM containers WHERE class = 'diary_entry'")}
    for source, target in conn.execute(
            "SELECT l.source_did, l.target_did FROM container_links l JOIN containers c ON c.did = l.source_did"
            " WHERE c.class = 'diary_entry' AND l.relation = 'previous_version'"):
        previous.setdefault(source, []).append(target)
    roots = {did: lineage_root(did, previous) for did in previous}
    late_ancestor = any(c.did in parents for parents in previous.values())
    if len(previous.get(c.did, [])) > 1 or late_ancestor:
        affected = set(roots.values())
    else:
        affected = {roots[c.did]}
    for root in affected:
        members = [d for d, r in roots.items() if r == root]
        versions = [decode_container(conn.execute("SELECT core FROM containers WHERE did = ?", (d,)).fetchone()[0],
                                     now_ms=2**62, limits=_STORED) for d in members]
        shown, forks = choose(versions)
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
    # rows of lineages that are no longer roots (their first version arrived late, or they were joined)
    current = set(roots.values())
    stale = [(lineage,) for (lineage,) in conn.execute("SELECT lineage FROM diary_entries WHERE lineage IS NOT NULL")
             if lineage not in current]
    conn.executemany("DELETE FROM diary_entries WHERE lineage = ?", stale)


# stored containers were verified on arrival; re-reading them ignores limits and the clock
_STORED = Limits(max_bytes=64 * 1024 * 1024, max_depth=256, clock_skew_ms=2**62)
_HANDLERS = {"note": _note, "diary_entry": _diary_entry}
