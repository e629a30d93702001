"""Reputation and trust (HMP RTE): per-peer trust in [0, 1] from evidence.

Owns: the update rule (``model``: evidence in, scores out, decay toward the
prior), transitive trust over published statements (``transitive``), what
trust feeds (``weights``: consensus weights, the validators' rating,
GossipSub's application score), trust containers (``statements``), which of
them are signed and gossiped (``publishing``). The store side is
meshnode.records.reputation (``records`` writes ``agent_reputation``, ``reading`` reads it).
May call: the container codec. Must never: read a clock or the
network in the pure modules, or let a peer's statement override this node's
own evidence. The formula and every number are in protocols/reputation.md.
"""

from meshnode.domain.reputation.model import (
    DEFAULT_PARAMS,
    EQUIVOCATION,
    RULES,
    Evidence,
    Params,
    PeerScore,
    ReputationError,
    Rule,
    apply,
    apply_all,
    decay,
    evidence_ref,
    initial,
    score_at,
    trust_level,
    validator_outcome,
)
from meshnode.domain.reputation.transitive import DEFAULT_TRANSITIVE, Reach, TransitiveParams, combined, reach
from meshnode.domain.reputation.weights import (
    CONSENSUS_FLOOR,
    GOSSIP_THRESHOLDS,
    accepts,
    consensus_weights,
    gossip_app_score,
    validator_rating,
    weighted_share,
)

__all__ = [
    "CONSENSUS_FLOOR",
    "DEFAULT_PARAMS",
    "DEFAULT_TRANSITIVE",
    "EQUIVOCATION",
    "GOSSIP_THRESHOLDS",
    "RULES",
    "Evidence",
    "Params",
    "PeerScore",
    "Reach",
    "ReputationError",
    "Rule",
    "TransitiveParams",
    "accepts",
    "apply",
    "apply_all",
    "combined",
    "consensus_weights",
    "decay",
    "evidence_ref",
    "gossip_app_score",
    "initial",
    "reach",
    "score_at",
    "trust_level",
    "validator_outcome",
    "validator_rating",
    "weighted_share",
]
