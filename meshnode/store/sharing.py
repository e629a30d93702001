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
PRIVATE_CLASSES = ("workflow_entry",)  # HMP: private by default; never given out
COGSYNC_FRIENDS = ("diary_entry",)  # CogSync knowledge shared with friends (concepts and links to follow)


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
    """(timestamp_ms, container DID) of every container this node may give ``peer_did``:
    public notes, friends notes that name it, and, when it is a friend, every version of
    the CogSync knowledge this node holds (diary entries)."""
    with sql_errors("listing shareable containers"):
        rows = db.conn.execute(
            """
            SELECT c.timestamp_ms, c.did FROM containers c JOIN notes n ON n.container_did = c.did
            WHERE n.audience = 'public'
            UNION
            SELECT c.timestamp_ms, c.did FROM containers c
            JOIN notes n ON n.container_did = c.did
            JOIN container_recipients r ON r.did = c.did
            WHERE n.audience = 'friends' AND r.recipient = ?
            UNION
            SELECT c.timestamp_ms, c.did FROM containers c
            WHERE c.class IN ('diary_entry') AND EXISTS (
                SELECT 1 FROM agent_peers p, json_each(p.tags)
                WHERE p.id = ? AND json_valid(p.tags) AND json_each.value = 'Friend')
            """,
            (peer_did, peer_did),
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
    if row is None:  # not a note: CogSync knowledge goes to friends, private classes to no one,
        # and the rest (announces, containers that were gossiped) to anyone who asks
        cls = db.conn.execute("SELECT class FROM containers WHERE did = ?", (container_did,)).fetchone()
        if cls is not None and cls[0] in COGSYNC_FRIENDS:
            return peer_did in friends(db)
        return cls is not None and cls[0] not in PRIVATE_CLASSES
    audience, listed = row
    return audience == "public" or (audience == "friends" and bool(listed))
