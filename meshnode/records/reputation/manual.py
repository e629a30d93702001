"""A person's own judgement of an agent: ``meshnode reputation set DID SCORE``.

Reputation is evidence-based (protocols/reputation.md), and the LLM never sets
a score. A person may: what they know (met the operator, caught it lying) is
evidence the node cannot see. The set is one more event in the same model: at
that moment the score becomes the person's value (under an equivocation cap
it stays at the cap until the hold ends: the proof outweighs an opinion), then
it decays toward the prior and moves with new evidence like any other score.
It is counted as ``person_set`` in the evidence counts a trust container
publishes, and listed with its reason by ``reputation show``.
"""

from __future__ import annotations

from dataclasses import replace

from meshnode.domain.reputation.model import DEFAULT_PARAMS, Params, PeerScore, ReputationError, decay
from meshnode.records.reputation.records import _ensure_peer, _write, check_did, load_state
from meshnode.store.database import Database

PERSON_SET = "person_set"
MAX_REASON = 200


def set_by_person(db: Database, did: str, score: float, *, now_ms: int, reason: str = "",
                  own_did: str | None = None, params: Params = DEFAULT_PARAMS) -> dict:
    """Set ``did``'s score to ``score`` now; returns the stored score (lower under a cap)."""
    check_did(did)
    if did == own_did or db.conn.execute("SELECT 1 FROM identity WHERE id = ?", (did,)).fetchone():
        raise ReputationError("bad_did", "that is this node's own DID; a node holds no trust in itself")
    if isinstance(score, bool) or not isinstance(score, (int, float)) or not 0.0 <= score <= 1.0:
        raise ReputationError("bad_score", "a trust score is a number from 0 to 1")
    reason = " ".join(str(reason or "").split())
    if len(reason) > MAX_REASON:
        raise ReputationError("bad_reason", f"the reason is at most {MAX_REASON} characters")
    with db.transaction() as conn:
        _ensure_peer(conn, did)
        state = load_state(conn, did, now_ms)
        state = decay(state, now_ms, params) if state is not None else None
        counts = dict(state.counts) if state else {}
        counts[PERSON_SET] = counts.get(PERSON_SET, 0) + 1
        capped_until = state.capped_until_ms if state else 0
        held = min(float(score), params.equivocation_cap) if now_ms < capped_until else float(score)
        new = replace(state, score=held, updated_ms=now_ms, counts=counts) if state else \
            PeerScore(held, now_ms, 0, counts)
        conn.execute("INSERT INTO reputation_evidence (did, kind, ref, at_ms) VALUES (?, ?, ?, ?)"
                     " ON CONFLICT DO NOTHING", (did, PERSON_SET, f"person:{now_ms}:{reason}"[:256], now_ms))
        _write(conn, did, new, {PERSON_SET: 1}, now_ms, f"set by the person to {float(score):.3f}"
               + (f": {reason}" if reason else ""))
    return {"did": did, "score": round(held, 4), "capped": held < float(score)}

