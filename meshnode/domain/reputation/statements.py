"""Trust containers (HMP RTE): one agent's signed view of one peer. Pure: build and read.

A node publishes, for a peer it has evidence about, a ``trust`` container
whose payload is HMP's ``agent_did`` + ``total_trust_score`` plus meshnode's
optional explanation: ``basis`` (direct evidence, or transitive), the
``evidence_counts`` behind the score, the DIDs of evidence objects (an
equivocation proof, say), ``computed_at`` and, after equivocation,
``capped_until``. ``related.in_reply_to`` names the peer's newest
``peer_announce`` and ``related.previous_version`` the signer's previous
statement about the same peer, as HMP v5 section 6.9 asks.

Reading one back (:func:`statement_of`) applies the rules every node uses
for the transitive graph: no statements about oneself, no expired ones, and
only direct statements become edges (a republished transitive value would
count the same evidence twice).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable, Mapping

from meshnode.base.container import Container, build_container, format_ms
from meshnode.base.identity.keys import NodeKey
from meshnode.domain.reputation.model import ReputationError

TRUST_CLASS = "trust"
SCORE_DIGITS = 4  # published scores are rounded: 1e-4 is below any threshold that matters
MAX_EVIDENCE_DIDS = 256


@dataclass(frozen=True)
class Statement:
    signer: str
    subject: str
    score: float
    timestamp_ms: int
    container_did: str
    basis: str = "direct"


def build_trust(key: NodeKey, subject: str, score: float, *, now_ms: int, basis: str = "direct",
                counts: Mapping[str, int] | None = None, evidence: Iterable[str] = (),
                capped_until_ms: int = 0, announce_did: str | None = None,
                previous: str | None = None) -> Container:
    """Sign this node's view of ``subject``. ``evidence``: references of evidence objects;
    those that are DIDs are published (others, e.g. hashes of raw bytes, stay local)."""
    if subject == key.did:
        raise ReputationError("self_trust", "a node does not publish trust in itself")
    if not isinstance(score, (int, float)) or not 0.0 <= score <= 1.0:
        raise ReputationError("bad_score", f"a trust score must be in [0, 1], not {score!r}")
    payload: dict = {"agent_did": subject, "total_trust_score": round(float(score), SCORE_DIGITS),
                     "basis": basis, "computed_at": format_ms(now_ms)}
    if counts:
        payload["evidence_counts"] = {k: int(n) for k, n in sorted(counts.items()) if n > 0}
    dids = sorted({ref for ref in evidence if ref.startswith("did:")})[:MAX_EVIDENCE_DIDS]
    if dids:
        payload["evidence"] = dids
    if capped_until_ms > now_ms:
        payload["capped_until"] = format_ms(capped_until_ms)
    related: dict[str, list[str]] = {}
    if announce_did:
        related["in_reply_to"] = [announce_did]
    if previous:
        related["previous_version"] = [previous]
    return build_container(key, TRUST_CLASS, payload, timestamp_ms=now_ms, related=related or None)


def statement_of(c: Container) -> Statement:
    """The statement a verified ``trust`` container makes; ReputationError when it is not one
    that may enter the transitive graph."""
    if c.cls != TRUST_CLASS or not c.known_class:
        raise ReputationError("not_trust", f"{c.did} is a {c.cls} container, not a trust statement")
    p = c.payload
    if type(p) is not dict:  # e.g. an encrypted payload
        raise ReputationError("not_trust", f"{c.did}: the trust payload is not readable")
    if c.expired:
        raise ReputationError("expired", f"{c.did}: the trust statement has expired")
    if p["agent_did"] == c.sender_did:
        raise ReputationError("self_trust", f"{c.did}: an agent's trust in itself says nothing")
    basis = p.get("basis", "direct")
    return Statement(c.sender_did, p["agent_did"], float(p["total_trust_score"]), c.timestamp_ms, c.did, basis)


def newest_statements(statements: Iterable[Statement], *, direct_only: bool = True) -> dict[str, dict[str, float]]:
    """signer -> subject -> score from each signer's newest statement per subject (a later
    timestamp wins; at equal times the larger container DID, so every node agrees)."""
    newest: dict[tuple[str, str], Statement] = {}
    for s in statements:
        key = (s.signer, s.subject)
        old = newest.get(key)
        if old is None or (s.timestamp_ms, s.container_did) > (old.timestamp_ms, old.container_did):
            newest[key] = s
    graph: dict[str, dict[str, float]] = {}
    for (signer, subject), s in sorted(newest.items()):
        if direct_only and s.basis != "direct":
            continue
        graph.setdefault(signer, {})[subject] = s.score
    return graph
