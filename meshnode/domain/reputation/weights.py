"""What trust feeds: consensus weights, the validators' rating, GossipSub's application score.

Pure helpers; the consensus, cognition, sync and gossip code call them with
trust values they read from the store (``records.effective_trust``). The
numbers are explained in protocols/reputation.md, "What trust feeds".
"""

from __future__ import annotations

import math
from typing import Iterable, Mapping

from meshnode.domain.reputation.model import ReputationError
from meshnode.domain.sync.versions import DEFAULT_TRUST

# Strictly above the prior: an identity nothing is known about (or one that has
# only been online and well-formed for a short while) carries no weight, so
# minting identities buys no votes.
CONSENSUS_FLOOR = 0.55

# GossipSub application-specific score: +REWARD at trust 1, 0 at the prior,
# -PENALTY at trust 0 (linear on each side). The asymmetry follows GossipSub's
# thresholds, which are all negative: with p6 weight 1, suggested thresholds
# are gossip -10 (trust < 0.45), publish -50 (trust < 0.25) and graylist -80
# (trust < 0.1: every equivocator, held at 0.05, is graylisted).
GOSSIP_REWARD = 10.0
GOSSIP_PENALTY = 100.0
GOSSIP_THRESHOLDS = {"gossip_threshold": -10.0, "publish_threshold": -50.0, "graylist_threshold": -80.0}


def _unit(x: float) -> float:
    return min(1.0, max(0.0, float(x))) if isinstance(x, (int, float)) and not math.isnan(x) else 0.0


def consensus_weights(trust: Mapping[str, float], *, floor: float = CONSENSUS_FLOOR) -> dict[str, float]:
    """A vote weight per agent: its trust when at least ``floor``, else 0 (not normalised;
    divide by the sum for shares). Agents missing from ``trust`` are not in the result."""
    return {did: (t if t >= floor else 0.0) for did, t in ((d, _unit(v)) for d, v in trust.items())}


def weighted_share(weights: Mapping[str, float], agents: Iterable[str]) -> float:
    """The share of the total weight that ``agents`` hold (0 when no one has weight)."""
    total = math.fsum(weights.values())
    if total <= 0:
        return 0.0
    return math.fsum(weights.get(a, 0.0) for a in set(agents)) / total


def validator_rating(scores: Iterable[tuple[float, float]]) -> float | None:
    """rating = sum(score_i * trust_i) / sum(trust_i) over (score, trust) pairs (seed 000,
    the Cognitive & Ethical Validation Reflex); None when the trusts sum to 0, i.e. no
    validator has any weight. Non-finite scores are refused."""
    num, den = [], []
    for score, trust in scores:
        if not isinstance(score, (int, float)) or not math.isfinite(score):
            raise ReputationError("bad_rating", f"a validator score must be a finite number, not {score!r}")
        t = _unit(trust)
        num.append(score * t)
        den.append(t)
    total = math.fsum(den)
    return None if total <= 0 else math.fsum(num) / total


def gossip_app_score(trust: float, *, prior: float = DEFAULT_TRUST, reward: float = GOSSIP_REWARD,
                     penalty: float = GOSSIP_PENALTY) -> float:
    """GossipSub's application-specific score (p6) for a peer with ``trust``."""
    t = _unit(trust)
    if t >= prior:
        return reward * (t - prior) / (1.0 - prior) if prior < 1.0 else 0.0
    return -penalty * (prior - t) / prior


def accepts(trust: float | None, min_trust: float, *, prior: float = DEFAULT_TRUST) -> bool:
    """CogSync acceptance: take knowledge from a peer only when its trust (the prior when
    unknown) is at least ``min_trust``."""
    return (prior if trust is None else _unit(trust)) >= min_trust
