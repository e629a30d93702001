"""agent_peers, peer_liveness and peer_standing: what the node knows of other nodes.

Functions take a :class:`~meshnode.store.database.Database` and run in the
store's worker thread (``await store.write(upsert_peer, ...)``).
"""

from __future__ import annotations

import json
import sqlite3

from meshnode.base.container import format_ms
from meshnode.store.database import Database, sql_errors
from meshnode.store.trust import trust_scores
from meshnode.domain.sync.versions import DEFAULT_TRUST


def upsert_peer(db: Database, did: str, *, peer_id: str, now_ms: int, source: str,
                addresses: list[str] | None = None, name: str | None = None,
                announce_did: str | None = None, interests: list[str] | None = None,
                online: bool | None = None) -> None:
    """Create or refresh a peer row; fields given as None keep their stored value."""
    with db.transaction() as conn:
        upsert_peer_row(conn, did, peer_id=peer_id, now_ms=now_ms, source=source, addresses=addresses, name=name,
                        announce_did=announce_did, interests=interests, online=online)


def upsert_peer_row(conn: sqlite3.Connection, did: str, *, peer_id: str, now_ms: int, source: str,
                    addresses: list[str] | None = None, name: str | None = None,
                    announce_did: str | None = None, interests: list[str] | None = None,
                    online: bool | None = None) -> None:
    """``upsert_peer`` inside a transaction the caller holds (several rows written as one)."""
    status = None if online is None else ("online" if online else "offline")
    conn.execute(
        """
        INSERT INTO agent_peers (id, peer_id, name, addresses, source, last_seen, status, announce_did,
                                 interests)
        VALUES (:id, :peer_id, :name, :addresses, :source, :last_seen, COALESCE(:status, 'unknown'),
                :announce_did, :interests)
        ON CONFLICT (id) DO UPDATE SET
            peer_id = excluded.peer_id,
            name = COALESCE(:name, agent_peers.name),
            addresses = COALESCE(:addresses, agent_peers.addresses),
            last_seen = excluded.last_seen,
            status = CASE WHEN agent_peers.status IN ('untrusted', 'blacklisted') THEN agent_peers.status
                          ELSE COALESCE(:status, agent_peers.status) END,
            announce_did = COALESCE(:announce_did, agent_peers.announce_did),
            interests = COALESCE(:interests, agent_peers.interests)
        """,
        {"id": did, "peer_id": peer_id, "name": name, "source": source, "last_seen": format_ms(now_ms),
         "addresses": json.dumps(addresses) if addresses is not None else None, "status": status,
         "announce_did": announce_did, "interests": json.dumps(interests) if interests is not None else None},
    )


def set_liveness(db: Database, did: str, *, state: str, last_heard_ms: int, last_seq: int, now_ms: int) -> None:
    with db.transaction() as conn:
        conn.execute(
            """
            INSERT INTO peer_liveness (did, state, last_heard_ms, last_seq, changed_at_ms) VALUES (?, ?, ?, ?, ?)
            ON CONFLICT (did) DO UPDATE SET
                changed_at_ms = CASE WHEN peer_liveness.state = excluded.state THEN peer_liveness.changed_at_ms
                                     ELSE excluded.changed_at_ms END,
                state = excluded.state, last_heard_ms = excluded.last_heard_ms, last_seq = excluded.last_seq
            """,
            (did, state, last_heard_ms, last_seq, now_ms),
        )
        conn.execute(
            "UPDATE agent_peers SET status = ? WHERE id = ? AND COALESCE(status, 'unknown') NOT IN ('untrusted', 'blacklisted')",
            ("online" if state in ("ok", "quiet") else "offline", did),
        )


def save_standing(db: Database, did: str, summary: dict, now_ms: int) -> None:
    with db.transaction() as conn:
        conn.execute(
            """
            INSERT INTO peer_standing (did, valid, invalid, invalid_by_code, rate_limited, banned_until_ms,
                                       updated_at_ms) VALUES (?, ?, ?, ?, ?, ?, ?)
            ON CONFLICT (did) DO UPDATE SET valid = excluded.valid, invalid = excluded.invalid,
                invalid_by_code = excluded.invalid_by_code, rate_limited = excluded.rate_limited,
                banned_until_ms = excluded.banned_until_ms, updated_at_ms = excluded.updated_at_ms
            """,
            (did, summary["valid"], summary["invalid"], json.dumps(summary["invalid_by_code"], sort_keys=True),
             summary["rate_limited"], summary["banned_until_ms"], now_ms),
        )


def active_bans(db: Database, now_ms: int) -> dict[str, int]:
    """DID -> banned_until_ms of every peer still cut off at ``now_ms``."""
    with sql_errors("reading bans"):
        rows = db.conn.execute("SELECT did, banned_until_ms FROM peer_standing WHERE banned_until_ms > ?",
                               (now_ms,)).fetchall()
    return dict(rows)


def list_peers(db: Database) -> list[dict]:
    with sql_errors("listing peers"):
        cur = db.conn.execute(
            """
            SELECT p.id AS did, p.peer_id, p.name, p.addresses, p.status, p.source, p.last_seen,
                   p.interests, l.state AS liveness, l.last_heard_ms, s.invalid
            FROM agent_peers p
            LEFT JOIN peer_liveness l ON l.did = p.id
            LEFT JOIN peer_standing s ON s.did = p.id
            ORDER BY p.name, p.id
            """
        )
        names = [d[0] for d in cur.description]
        rows = [dict(zip(names, r)) for r in cur.fetchall()]
    for r in rows:
        r["addresses"] = json.loads(r["addresses"]) if r["addresses"] else []
        r["interests"] = json.loads(r["interests"]) if r["interests"] else []
    return rows


def liveness_rows(db: Database) -> list[dict]:
    """Each peer with a liveness as last recorded: ``did``, ``liveness``, ``last_heard_ms`` (what
    ``status`` counts: not every peer the node ever met)."""
    with sql_errors("reading liveness"):
        rows = db.conn.execute("SELECT l.did, l.state, l.last_heard_ms FROM peer_liveness l"
                               " JOIN agent_peers p ON p.id = l.did").fetchall()
    return [{"did": did, "liveness": state, "last_heard_ms": heard} for did, state, heard in rows]


def last_known_addresses(db: Database, did: str, limit: int = 8) -> list[str]:
    """The addresses this node last knew for ``did`` (its announce's, or the bootstrap line's), without
    a ``/p2p/`` part: what a node that restarted alone can still dial."""
    with sql_errors("reading a peer's addresses"):
        row = db.conn.execute("SELECT addresses FROM agent_peers WHERE id = ?", (did,)).fetchone()
    try:
        stored = json.loads(row[0]) if row is not None and row[0] else []
    except ValueError:
        return []
    out = [a.split("/p2p/")[0] for a in stored if isinstance(a, str) and a.startswith("/")]
    return list(dict.fromkeys(out))[:limit]


def peer_trust(db: Database, did: str) -> float:
    """The newest reputation score recorded for ``did`` (0..1), or DEFAULT_TRUST."""
    with sql_errors("reading trust"):
        return trust_scores(db.conn, [did]).get(did, DEFAULT_TRUST)
