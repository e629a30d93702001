"""Friends, and which containers a node may share with a given peer.

Notes (seed 000's distributed chat): ``private`` never leaves the node;
``public`` goes to anyone; ``friends`` goes to the DIDs its ``head.recipient``
names — the author's friends when it was written — from the author or from
any node that holds it. A friend is a peer whose ``agent_peers.tags`` holds
"Friend".
"""

from __future__ import annotations

import json

from meshnode.store.database import Database, sql_errors

FRIEND = "Friend"


def set_friend(db: Database, did: str, peer_id: str, now_ms: int, friend: bool = True) -> None:
    from meshnode.store.peers import upsert_peer

    upsert_peer(db, did, peer_id=peer_id, now_ms=now_ms, source="exchange")
    with db.transaction() as conn:
        row = conn.execute("SELECT tags FROM agent_peers WHERE id = ?", (did,)).fetchone()
        tags = set(json.loads(row[0])) if row and row[0] else set()
        tags = (tags | {FRIEND}) if friend else (tags - {FRIEND})
        conn.execute("UPDATE agent_peers SET tags = ? WHERE id = ?", (json.dumps(sorted(tags)), did))


def friends(db: Database) -> list[str]:
    with sql_errors("listing friends"):
        rows = db.conn.execute(
            "SELECT agent_peers.id FROM agent_peers, json_each(agent_peers.tags)"
            " WHERE json_valid(agent_peers.tags) AND json_each.value = ? ORDER BY agent_peers.id", (FRIEND,)).fetchall()
    return [r[0] for r in rows]


def shareable_notes(db: Database, peer_did: str) -> list[tuple[int, str]]:
    """(timestamp_ms, container DID) of every note this node may give ``peer_did``."""
    with sql_errors("listing shareable notes"):
        rows = db.conn.execute(
            """
            SELECT c.timestamp_ms, c.did FROM containers c JOIN notes n ON n.container_did = c.did
            WHERE n.audience = 'public'
            UNION
            SELECT c.timestamp_ms, c.did FROM containers c
            JOIN notes n ON n.container_did = c.did
            JOIN container_recipients r ON r.did = c.did
            WHERE n.audience = 'friends' AND r.recipient = ?
            """,
            (peer_did,),
        ).fetchall()
    return [(ts, did) for ts, did in rows]


def may_share(db: Database, container_did: str, peer_did: str) -> bool:
    """Whether ``peer_did`` may receive this container from us (fetch requests are checked too)."""
    with sql_errors("checking a share"):
        row = db.conn.execute(
            """
            SELECT n.audience, EXISTS (SELECT 1 FROM container_recipients r WHERE r.did = ? AND r.recipient = ?)
            FROM notes n WHERE n.container_did = ?
            """,
            (container_did, peer_did, container_did),
        ).fetchone()
    if row is None:  # not a note: other classes follow their own rules (CogSync); shared for now
        return True
    audience, listed = row
    return audience == "public" or (audience == "friends" and bool(listed))
