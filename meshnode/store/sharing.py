"""Friends, and which containers a node may share with a given peer.

Notes (seed 000's distributed chat): ``private`` never leaves the node;
``public`` goes to anyone; ``friends`` goes to the DIDs its ``head.recipient``
names — the author's friends when it was written — from the author or from
any node that holds it. A friend is a peer whose ``agent_peers.tags`` holds
"Friend".

GMP 1.1 goals, tasks and workflow entries (gmp.md section 7) go to their goal's
audience (``gmp_audience``, drawn by ``gmp.store_views``), and, when the goal is
public, to anyone whose sync want has ``public_goals``; a fetch of one by DID is
checked against the audience too (a public goal's containers may be fetched by
anyone: public is public, the want only says what a node cares to receive).
``workflow_entry`` 1.0 stays private.
"""

from __future__ import annotations

import json
import sqlite3

from meshnode.base.container.gmp_classes import CLASSES as GMP_CLASSES
from meshnode.base.container.gmp_classes import VERSION as GMP_VERSION
from meshnode.store.database import Database, sql_errors
from meshnode.domain.sync.selective import PUBLIC_GOAL

FRIEND = "Friend"
# never given out: HMP workflow entries are private by default; the spawn classes go point to point (spawn.md 8)
PRIVATE_CLASSES = ("workflow_entry", "spawn_invitation", "spawn_hello")
COGSYNC_FRIENDS = ("diary_entry", "semantic_node", "semantic_edges")  # CogSync knowledge: to friends
# what anyone may check, so everyone gets it: votes, results, trust statements, equivocation proofs
PUBLIC_CLASSES = ("vote", "consensus_result", "trust", "equivocation_evidence")


def set_friend(db: Database, did: str, peer_id: str, now_ms: int, friend: bool = True) -> None:
    from meshnode.store.peers import upsert_peer

    upsert_peer(db, did, peer_id=peer_id, now_ms=now_ms, source="exchange")
    with db.transaction() as conn:
        set_friend_tag(conn, did, friend)


def set_friend_tag(conn: sqlite3.Connection, did: str, friend: bool = True) -> None:
    """Put the Friend tag on (or take it off) ``did``'s agent_peers row, inside the caller's
    transaction; a DID with no row is left alone (``set_friend`` creates the row first)."""
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


# The rows of one query: (timestamp_ms, DID, class, tags joined by \x1f) of every container
# a node (``:me``) may give a peer (``:peer``); ``:peer_is_friend`` is 1 or 0.
_SHAREABLE = """
WITH shared(did) AS (
    SELECT n.container_did FROM notes n WHERE n.audience = 'public' {only_n}
    UNION
    SELECT r.did FROM container_recipients r JOIN notes n ON n.container_did = r.did
    WHERE n.audience = 'friends' AND r.recipient = :peer {only_r}
    UNION
    SELECT n.container_did FROM notes n JOIN containers c ON c.did = n.container_did
    WHERE n.audience = 'friends' AND :peer_is_friend AND n.forward >= 1 {only_n} AND (
        c.sender_did = :me
        OR EXISTS (SELECT 1 FROM container_recipients r WHERE r.did = c.did AND r.recipient = :me)
        OR (n.forward >= 2 AND (c.received_from = c.sender_did OR EXISTS (
            SELECT 1 FROM container_recipients r WHERE r.did = c.did AND r.recipient = c.received_from))))
    UNION
    SELECT c.did FROM containers c LEFT JOIN container_forward f ON f.did = c.did
    WHERE :peer_is_friend AND c.class IN ({cogsync}) {only_c} AND (
        f.forward IS NULL OR c.sender_did = :me OR (f.forward >= 1 AND c.received_from = c.sender_did))
    UNION
    SELECT c.did FROM containers c WHERE c.class IN ({public}) {only_c}
    UNION
    SELECT m.did FROM gmp_audience a JOIN gmp_members m ON m.goal_lineage = a.goal_lineage
    WHERE a.did = :peer {only_m}
)
SELECT c.timestamp_ms, c.did, c.class, (SELECT group_concat(t.tag, char(31)) FROM container_tags t WHERE t.did = c.did)
FROM shared s JOIN containers c ON c.did = s.did
"""

# GMP containers of public goals whose audience does not include ``:peer``
_PUBLIC_GOALS = """
SELECT c.timestamp_ms, c.did, c.class, (SELECT group_concat(t.tag, char(31)) FROM container_tags t WHERE t.did = c.did)
FROM goals g JOIN gmp_members m ON m.goal_lineage = g.lineage JOIN containers c ON c.did = m.did
WHERE g.audience = 'public' AND g.lineage IS NOT NULL {only_m} AND NOT EXISTS (
    SELECT 1 FROM gmp_audience a WHERE a.goal_lineage = g.lineage AND a.did = :peer)
"""


def shareable(db: Database, peer_did: str, me: str, only: str | None = None,
              public_goals: bool | None = None) -> list[tuple[int, str, str, tuple]]:
    """(timestamp_ms, container DID, class, tags) of every container this node (``me``) may
    give ``peer_did``: public notes; friends notes that name it; friends notes whose author
    allowed forwarding, to our friends, within the hop limit; to friends, every version
    of the CogSync knowledge held (diary entries, concepts, links) within its hop limit;
    and the GMP containers of the goals whose audience has ``peer_did``.

    Hop limit (``payload.forward``, 0 to 2): the author's copy is hop 0, a recipient's hop 1,
    a copy that came from the author or a recipient hop 2; a node shares a friends note on
    with its friends when its own hop is at most ``forward``. A copy whose path this node
    cannot tell is not shared on, so a note may stop short of its limit, never go past it.

    Knowledge with no ``payload.forward`` goes from every holder to its friends. With one
    (0 or 1), the author gives it to its friends (hop 1); with 1, a holder whose copy came
    straight from the author gives it on to its own friends (hop 2); no one else does.

    Public goals outside the peer's audience: with ``public_goals`` None (a sync catalog,
    built before the peer's want is known) they are listed with the pseudo-tag
    ``selective.PUBLIC_GOAL``, which only a want with ``public_goals`` lets through; True
    lists them plainly, False leaves them out."""
    restrict = {"only_n": "AND n.container_did = :only", "only_r": "AND r.did = :only",
                "only_c": "AND c.did = :only", "only_m": "AND m.did = :only"} if only is not None else dict.fromkeys(
        ("only_n", "only_r", "only_c", "only_m"), "")
    sql = _SHAREABLE.format(cogsync=",".join(f"'{c}'" for c in COGSYNC_FRIENDS),
                            public=",".join(f"'{c}'" for c in PUBLIC_CLASSES), **restrict)
    params = {"peer": peer_did, "me": me, "peer_is_friend": int(peer_did in friends(db)), "only": only}
    with sql_errors("listing shareable containers"):
        rows = db.conn.execute(sql, params).fetchall()
        public = [] if public_goals is False else db.conn.execute(
            _PUBLIC_GOALS.format(only_m=restrict["only_m"]), params).fetchall()
    out = [(ts, did, cls, tuple(tags.split("\x1f")) if tags else ()) for ts, did, cls, tags in rows]
    mark = (PUBLIC_GOAL,) if public_goals is None else ()
    return out + [(ts, did, cls, (tuple(tags.split("\x1f")) if tags else ()) + mark) for ts, did, cls, tags in public]


def may_share(db: Database, container_did: str, peer_did: str, me: str, public_goals: bool = True) -> bool:
    """Whether ``peer_did`` may receive this container from us (fetch requests are checked too).
    Containers that are neither notes, CogSync knowledge, GMP nor private (announces, containers
    that were gossiped) go to anyone who asks."""
    with sql_errors("checking a share"):
        row = db.conn.execute("SELECT class, class_version FROM containers WHERE did = ?",
                              (container_did,)).fetchone()
    if row is None:
        return False
    if row[0] in GMP_CLASSES and row[1] == GMP_VERSION:
        return bool(shareable(db, peer_did, me, only=container_did, public_goals=public_goals))
    if row[0] in PRIVATE_CLASSES:
        return False
    if row[0] != "note" and row[0] not in COGSYNC_FRIENDS:
        return True  # public classes, and containers that were gossiped
    return bool(shareable(db, peer_did, me, only=container_did))
