"""Known authors: whose containers strangers' traffic may never evict or rate-limit.

A node knows its own DID, its friends (``store.sharing``), the consensus
committee, and every author whose trust (``store.trust``, the newest
reputation score) is at least ``min_trust``. The default of that threshold
(``[limits] known_min_trust``, 0.7) lies above 0.65, the most a peer earns
by sending valid containers alone (``reputation.model``: ``valid_container``
aims at 0.65), so trust that makes an author known comes only from judged
work, never from being present and chatty. Everyone else is an unknown
author: quotas (``store.quotas``) and the gossip relay rate
(``net.author_rate``) apply to them.

The Mesh keeps a :class:`KnownAuthors` snapshot, read from the store at
start, every maintenance round and when friends change.
"""

from __future__ import annotations

from typing import Iterable

from meshnode.store.database import Database, sql_errors
from meshnode.store.sharing import friends


def known_authors(db: Database, *, fixed: Iterable[str], min_trust: float) -> frozenset[str]:
    """``fixed`` (own DID, committee) with friends and authors trusted at ``min_trust`` or more."""
    with sql_errors("reading known authors"):
        trusted = db.conn.execute(
            "SELECT r.agent_id FROM agent_reputation r"
            " JOIN (SELECT agent_id, MAX(id) AS id FROM agent_reputation GROUP BY agent_id) m ON m.id = r.id"
            " WHERE r.reputation_score >= ?", (min_trust,)).fetchall()
    return frozenset(fixed) | frozenset(friends(db)) | frozenset(r[0] for r in trusted)


class KnownAuthors:
    """The set the Mesh consults (``did in mesh.known``); replaced whole on each refresh."""

    def __init__(self, fixed: Iterable[str] = ()):
        self.fixed = frozenset(fixed)
        self._all = self.fixed

    def __contains__(self, did: object) -> bool:
        return did in self._all

    def __len__(self) -> int:
        return len(self._all)

    def __iter__(self):
        return iter(self._all)

    def replace(self, dids: Iterable[str]) -> None:
        self._all = self.fixed | frozenset(dids)

    def snapshot(self) -> frozenset[str]:
        return self._all
