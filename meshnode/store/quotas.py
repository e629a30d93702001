"""Storage quotas for unknown authors: what strangers can make a node keep on disk.

Identities cost nothing, so every container from an author this node does
not know (``store.known``) counts against two quotas: one per author
(containers and bytes) and one for all unknown authors together. Admission
is decided in the same write transaction as the insert, from the usage the
store keeps itself (``author_usage`` and ``store_usage``, maintained by
triggers: migration 0015), so concurrent writes and restarts never skew it.

* Over its own quota an unknown author's new container is refused: not
  stored, and not held against the peer that relayed it.
* An unknown author's container that no known author or peer vouches for
  enters the strangers' pool (``containers.pooled``, migration 0029): a
  known peer did not send it (``received_from``; gossip: forwarded, passed
  as ``vouched``), and no container of a known author points at it
  (``related``). (What the person or the agent puts here is not admitted:
  never pooled.) Over the pool's limits the oldest
  received pooled containers are evicted until the pool is ``slack`` below
  them. Oldest first, not least referenced or least trusted: references
  and trust among strangers are what a Sybil swarm makes for itself, the
  order of arrival it cannot fake, so new junk only pushes out older junk.
  Before anything is evicted each vouch is checked again against the known
  authors of the moment; a container vouched for since it arrived leaves
  the pool (``unpooled``) instead.
* Over the global quota, unknown authors' containers are evicted until the
  total is ``slack`` below the quota (so eviction runs once per many
  arrivals, not on each): first those no known author or peer vouches for,
  then the least trusted authors', then the oldest received.
  A known author's container is never evicted, and neither is the one that
  just arrived.

Functions run in the store's writer thread (``await store.write(admit, ...)``).
"""

from __future__ import annotations

import json
import sqlite3
from dataclasses import dataclass
from typing import Iterable

from meshnode.base.container import Container, cbor
from meshnode.store.database import Database, _insert, sql_errors
from meshnode.store.hooks import StoreHooks
from meshnode.store.removal import remove_containers
from meshnode.domain.sync.versions import DEFAULT_TRUST

REFUSED_AUTHOR_QUOTA = "author_quota"
GMP_PENDING = "gmp_pending"  # a GMP container waiting for containers it names (gmp.store_admission)
GMP_PENDING_FULL = "gmp_pending_full"  # one that would wait, but the pending set has no room for it (not kept)


@dataclass(frozen=True)
class Quotas:
    author_containers: int = 64
    author_bytes: int = 1024 * 1024
    total_containers: int = 16_384
    total_bytes: int = 64 * 1024 * 1024
    slack: float = 0.05  # eviction frees this share of the global quota (and the pool's) beyond what is over
    pool_containers: int = 1024  # unvouched strangers' containers held at most (protocols/mesh.md section 6)
    pool_bytes: int = 8 * 1024 * 1024


@dataclass(frozen=True)
class Admission:
    outcome: str  # "new", "duplicate", "refused" or "pending" (GMP, held aside; or "failed", "busy": not stored,
    # see mesh_admission); a refusal by a class's admission raises AdmissionRefused (GMP: GmpRefused) out of admit
    evicted: int = 0
    reason: str = ""
    gone: tuple[tuple[str, str], ...] = ()  # (container DID, author) of each container evicted
    pooled: bool = False  # stored in the strangers' pool (no known author or peer vouches for it)
    pool_evicted: int = 0  # of ``evicted``, those the pool's limits evicted
    unpooled: int = 0  # containers that left the pool: vouched for since they arrived

    @property
    def new(self) -> bool:
        return self.outcome == "new"


def stored_size(c: Container) -> int:
    """Bytes a container takes in ``containers`` (core and side blocks), as the triggers count them."""
    return len(c.core_bytes()) + (len(cbor.encode(c.side)) if c.side else 0)


def _held_aside(conn, did: str) -> Admission:
    """What a GMP container that was not stored became: held aside pending, or, when the pending set
    had no room for it (its author's, its sender's or the whole set's limit), not kept at all: busy,
    to come again later (an ack must not call it held aside)."""
    if conn.execute("SELECT 1 FROM gmp_pending WHERE did = ?", (did,)).fetchone():
        return Admission("pending", reason=GMP_PENDING)
    return Admission("busy", reason=GMP_PENDING_FULL)


def admit(db: Database, c: Container, *, received_at_ms: int, received_from: str | None, quotas: Quotas,
          known: Iterable[str], vouched: bool = False) -> Admission:
    """Store a verified container from the network if the quotas allow it (see the module doc).
    ``vouched``: a known peer forwarded it (gossip, where ``received_from`` is the author)."""
    known = frozenset(known)
    vouched = vouched or received_from in known
    with db.transaction() as conn:
        if conn.execute("SELECT 1 FROM containers WHERE did = ?", (c.did,)).fetchone():
            unpooled = _unpool(conn, [c.did]) if vouched else 0  # forwarded again, by a known peer now
            return Admission("duplicate", unpooled=unpooled)
        if c.sender_did in known:
            if not _insert(conn, c, received_at_ms, received_from, None, db.hooks):
                return _held_aside(conn, c.did)
            named = [r[0] for r in conn.execute("SELECT target_did FROM container_links WHERE source_did = ?",
                                                (c.did,))]
            return Admission("new", unpooled=_unpool(conn, named) if named else 0)  # it vouches for what it names
        size = stored_size(c)
        used = conn.execute("SELECT containers, bytes FROM author_usage WHERE author = ?", (c.sender_did,)).fetchone()
        count, held = used or (0, 0)
        if count + 1 > quotas.author_containers or held + size > quotas.author_bytes:
            return Admission("refused", reason=REFUSED_AUTHOR_QUOTA)
        if not _insert(conn, c, received_at_ms, received_from, None, db.hooks):
            return _held_aside(conn, c.did)
        pooled = not vouched and not _named_by_known(conn, c.did, known)
        pool_gone, unpooled = (), 0
        if pooled:
            conn.execute("UPDATE containers SET pooled = 1 WHERE did = ?", (c.did,))
            pool_gone, unpooled = _evict_over_pool(conn, quotas, known, c.did, db.hooks)
        gone = pool_gone + _evict_over_quota(conn, quotas, known, c.did, db.hooks)
        return Admission("new", evicted=len(gone), gone=gone, pooled=pooled, pool_evicted=len(pool_gone),
                         unpooled=unpooled)


def _unpool(conn: sqlite3.Connection, dids: list[str]) -> int:
    """Take these containers out of the strangers' pool (vouched for); how many were in it."""
    return conn.execute("UPDATE containers SET pooled = 0 WHERE pooled = 1 AND did IN"
                        " (SELECT value FROM json_each(?))", (json.dumps(dids),)).rowcount


def _named_by_known(conn: sqlite3.Connection, did: str, known: frozenset[str]) -> bool:
    """Whether a container of a known author names ``did`` in ``related`` (it arrived first)."""
    return conn.execute("SELECT 1 FROM container_links l JOIN containers s ON s.did = l.source_did"
                        " WHERE l.target_did = ? AND s.sender_did IN (SELECT value FROM json_each(?)) LIMIT 1",
                        (did, json.dumps(sorted(known)))).fetchone() is not None


def unknown_usage(conn: sqlite3.Connection, known: Iterable[str]) -> tuple[int, int]:
    """(containers, bytes) held for authors outside ``known``."""
    total = conn.execute("SELECT containers, bytes FROM store_usage WHERE id = 1").fetchone() or (0, 0)
    mine = conn.execute("SELECT COALESCE(sum(containers), 0), COALESCE(sum(bytes), 0) FROM author_usage"
                        " WHERE author IN (SELECT value FROM json_each(?))", (json.dumps(sorted(known)),)).fetchone()
    return total[0] - mine[0], total[1] - mine[1]


def read_unknown_usage(db: Database, known: Iterable[str]) -> dict[str, int]:
    with sql_errors("reading storage usage"):
        containers, size = unknown_usage(db.conn, known)
    return {"containers": containers, "bytes": size}


# Unknown authors' containers, the first to go first. A container out of the strangers' pool (vouched
# for), one a known peer sent, or one a known author's container names (a reply to it, a vote on it,
# a version it replaces) goes last.
_VICTIMS = """
WITH known(did) AS (SELECT value FROM json_each(:known))
SELECT c.did, length(c.core) + COALESCE(length(c.side), 0), c.sender_did
FROM author_usage u JOIN containers c ON c.sender_did = u.author
WHERE u.author NOT IN known AND c.did != :spare
ORDER BY
    c.pooled = 0 OR c.received_from IN known OR EXISTS (SELECT 1 FROM container_links l JOIN containers s ON s.did = l.source_did
            WHERE l.target_did = c.did AND s.sender_did IN known),
    COALESCE((SELECT r.reputation_score FROM agent_reputation r WHERE r.agent_id = u.author
              ORDER BY r.id DESC LIMIT 1), :default),
    c.received_at_ms, c.did
"""


def _evict_over_quota(conn: sqlite3.Connection, quotas: Quotas, known: frozenset[str],
                      spare: str, hooks: StoreHooks) -> tuple[tuple[str, str], ...]:
    """Evict down to ``slack`` below the global quota; returns (container DID, author) of each evicted."""
    count, size = unknown_usage(conn, known)
    if count <= quotas.total_containers and size <= quotas.total_bytes:
        return ()
    keep_count = int(quotas.total_containers * (1 - quotas.slack))
    keep_bytes = int(quotas.total_bytes * (1 - quotas.slack))
    victims = []
    cur = conn.execute(_VICTIMS, {"known": json.dumps(sorted(known)), "spare": spare, "default": DEFAULT_TRUST})
    while count > keep_count or size > keep_bytes:
        row = cur.fetchone()
        if row is None:
            break
        victims.append((row[0], row[2]))
        count, size = count - 1, size - row[1]
    cur.close()
    remove_containers(conn, [did for did, _ in victims], hooks)
    return tuple(victims)


# The strangers' pool, oldest received first, each with whether it is vouched for by now.
_POOL = """
WITH known(did) AS (SELECT value FROM json_each(:known))
SELECT c.did, length(c.core) + COALESCE(length(c.side), 0), c.sender_did,
       c.sender_did IN known OR c.received_from IN known
       OR EXISTS (SELECT 1 FROM container_links l JOIN containers s ON s.did = l.source_did
                  WHERE l.target_did = c.did AND s.sender_did IN known)
FROM containers c INDEXED BY containers_pooled
WHERE c.pooled = 1 AND c.did != :spare
ORDER BY c.received_at_ms, c.did
"""


# At most this many evicted by one admission: after the upgrade that made the pool (migration 0029) every
# stranger's container is marked at once, up to 16,384; removing them all in the first admission's
# transaction would hold the one writer for seconds. The pool shrinks over the next admissions instead.
POOL_EVICTIONS_AT_ONCE = 256


def pool_usage(conn: sqlite3.Connection) -> tuple[int, int]:
    """(containers, bytes) marked as in the strangers' pool (vouches not checked again)."""
    row = conn.execute("SELECT count(*), COALESCE(sum(length(core) + COALESCE(length(side), 0)), 0)"
                       " FROM containers WHERE pooled = 1").fetchone()
    return row[0], row[1]


def read_pool_usage(db: Database) -> dict[str, int]:
    with sql_errors("reading the strangers' pool"):
        containers, size = pool_usage(db.conn)
    return {"containers": containers, "bytes": size}


def _evict_over_pool(conn: sqlite3.Connection, quotas: Quotas, known: frozenset[str], spare: str,
                     hooks: StoreHooks) -> tuple[tuple[tuple[str, str], ...], int]:
    """Over the pool's limits: vouches checked again (the vouched leave the pool), then the oldest
    received evicted down to ``slack`` below them. Returns (the evicted (DID, author), how many left)."""
    count, size = pool_usage(conn)
    if count <= quotas.pool_containers and size <= quotas.pool_bytes:
        return (), 0
    rows = conn.execute(_POOL, {"known": json.dumps(sorted(known)), "spare": spare}).fetchall()
    vouched = [did for did, _, _, ok in rows if ok]
    unpooled = _unpool(conn, vouched) if vouched else 0
    count, size = pool_usage(conn)
    keep_count = int(quotas.pool_containers * (1 - quotas.slack))
    keep_bytes = int(quotas.pool_bytes * (1 - quotas.slack))
    victims = []
    for did, nbytes, author, ok in rows:
        if (count <= keep_count and size <= keep_bytes) or len(victims) >= POOL_EVICTIONS_AT_ONCE:
            break
        if not ok:
            victims.append((did, author))
            count, size = count - 1, size - nbytes
    remove_containers(conn, [did for did, _ in victims], hooks)
    return tuple(victims), unpooled
