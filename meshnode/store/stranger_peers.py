"""Bounding the ``agent_peers`` rows of strangers.

Every identity that sends a heartbeat or an exchange request gets a peer row,
and identities cost nothing, so rows of peers that never became known are
pruned beyond a cap. Strangers with little evidence are forgotten first: those
whose newest reputation row counts at least ``min_evidence`` observations (10,
as ``reputation.publishing`` asks before a stranger is spoken of) are kept
before the rest, so a flood of throw-away identities displaces other
throw-away identities, not the strangers the node has come to know; within
each group the most recently seen stay. A row is never
pruned while it is known (own, committee, trusted: the caller's set), a
friend, marked untrusted or blacklisted, online, a bootstrap peer, banned
(its ``peer_standing`` row holds the ban), or once trusted at ``min_trust``.
Its liveness, standing and reputation rows go with it.
"""

from __future__ import annotations

import json
from typing import Iterable

from meshnode.store.database import Database

_PRUNABLE = """
SELECT p.id FROM agent_peers p
WHERE p.id NOT IN (SELECT value FROM json_each(:known))
  AND COALESCE(p.tags, '') NOT LIKE '%"Friend"%'
  AND COALESCE(p.status, 'unknown') NOT IN ('untrusted', 'blacklisted', 'online')
  AND COALESCE(p.source, '') != 'bootstrap'
  AND NOT EXISTS (SELECT 1 FROM peer_standing s WHERE s.did = p.id AND s.banned_until_ms > :now)
  AND NOT EXISTS (SELECT 1 FROM agent_reputation r WHERE r.agent_id = p.id AND r.reputation_score >= :trusted)
ORDER BY (SELECT COALESCE(SUM(j.value), 0) FROM agent_reputation r, json_each(COALESCE(r.counts, '{}')) j
          WHERE r.id = (SELECT MAX(id) FROM agent_reputation WHERE agent_id = p.id)) >= :evidence DESC,
         p.last_seen DESC, p.id
LIMIT -1 OFFSET :keep
"""


def prune_unknown_peers(db: Database, *, keep: int, known: Iterable[str], now_ms: int, min_trust: float,
                        min_evidence: int = 10) -> int:
    """Delete stranger rows beyond the ``keep`` to remember (those with ``min_evidence`` first, then
    the most recently seen); returns how many went."""
    with db.transaction() as conn:
        gone = [r[0] for r in conn.execute(_PRUNABLE, {"known": json.dumps(sorted(known)), "now": now_ms,
                                                        "trusted": min_trust, "keep": keep,
                                                        "evidence": min_evidence})]
        rows = [(did,) for did in gone]
        conn.executemany("DELETE FROM agent_reputation WHERE agent_id = ?", rows)  # no cascade in 0001
        conn.executemany("DELETE FROM agent_peers WHERE id = ?", rows)
    return len(gone)
