"""Agent tables as views of containers.

``materialize`` writes the table row(s) a container stands for; running it
again for the same container is harmless (upsert by container DID), so the
tables can always be rebuilt from the ``containers`` table. Local columns
(read marks, local tags, hidden) are left alone by a rebuild; ``local`` gives
their first values (``tags``, ``read``).
"""

from __future__ import annotations

import json
import sqlite3

from meshnode.base.container import Container, format_ms
from meshnode.store import views_cogsync
from meshnode.store.hooks import StoreHooks
from meshnode.store.lineage import VERSIONED
from meshnode.domain.sync.selective import tags_of


def materialize(conn: sqlite3.Connection, c: Container, hooks: StoreHooks, local: dict | None = None) -> None:
    """The rows ``c`` stands for: its own class's hooks draw them when it has some (GMP 1.1:
    admitted already, ``database._insert``), else this module's handler for its class."""
    handler = _HANDLERS.get(c.cls)
    if c.known_class and type(c.payload) is dict:  # not for encrypted payloads
        conn.executemany("INSERT OR IGNORE INTO container_tags (did, tag) VALUES (?, ?)",
                         [(c.did, tag) for tag in tags_of(c)])
        own = hooks.of(c)
        if own is not None:
            own.materialise(conn, c)
        elif handler is not None:
            handler(conn, c, local or {})


def _note(conn: sqlite3.Connection, c: Container, local: dict) -> None:
    p = c.payload
    conn.execute(
        """
        INSERT INTO notes (container_did, topic, text, code, mentions, hashtags, agent_did, source,
                           priority, timestamp, audience, tags, user_did, forward, read)
        VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
        ON CONFLICT (container_did) DO UPDATE SET
            topic = excluded.topic, text = excluded.text, code = excluded.code,
            mentions = excluded.mentions, hashtags = excluded.hashtags, agent_did = excluded.agent_did,
            source = excluded.source, priority = excluded.priority, timestamp = excluded.timestamp,
            audience = excluded.audience, forward = excluded.forward
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
            p.get("forward", 0),
            int(bool(local.get("read"))),  # the agent's own notes start read: they are not its mail
        ),
    )
    _hide_replaced(conn, c)


def _hide_replaced(conn: sqlite3.Connection, c: Container) -> None:
    """A note its own author replaced by a newer note is hidden, whichever arrived first
    (knowledge_edits.update_note); a note naming someone else's hides nothing."""
    # ``+agent_did``: the author is only a filter. As an index key (reactor_notes_by_author, 0018) it
    # made SQLite walk all of the author's notes on every insert; the few DIDs the note names are the key.
    conn.execute("UPDATE notes SET hidden = 1 WHERE +agent_did = ? AND container_did IN (SELECT target_did FROM"
                 " container_links WHERE source_did = ? AND relation = 'previous_version')", (c.sender_did, c.did))
    if replaced_by_own_note(conn, c.did, c.sender_did):
        conn.execute("UPDATE notes SET hidden = 1 WHERE container_did = ?", (c.did,))


def replaced_by_own_note(conn: sqlite3.Connection, did: str, author: str) -> bool:
    """Whether a note of ``author`` held here names ``did`` as its previous version."""
    return conn.execute("SELECT 1 FROM container_links l JOIN containers n ON n.did = l.source_did WHERE"
                        " l.target_did = ? AND l.relation = 'previous_version' AND n.class = 'note'"
                        " AND n.sender_did = ? LIMIT 1", (did, author)).fetchone() is not None


def _versioned(conn: sqlite3.Connection, c: Container, local: dict) -> None:
    views_cogsync.refresh(conn, c)


_HANDLERS = {"note": _note, **{cls: _versioned for cls in VERSIONED}}
