"""Which trust statements a node signs and gossips in one reputation round (pure: rows in, choice out).

Every stranger that sends one valid input gets a local score; if each of those
became a signed ``trust`` container, gossiped to the node's friends, a flood of
throw-away identities would turn the node into an amplifier of the attacker's
identities (100 to 480 containers per 15 s flood were measured). So local
scores stay as they are (bans, weights and gossip scoring read them) and only
what is published is limited:

* a statement is *due* as before: never published, moved at least
  ``min_change`` since it was, or published ``max_age_ms`` ago or more;
* a due statement is *worth publishing* when its subject is known (own
  friends, committee, trusted: ``store.known``), or has ``min_evidence``
  observations spread over at least ``min_span_ms`` (from the first evidence
  to the newest: a burst followed by silence does not age into a statement), or its score lies at
  least ``margin`` away from the prior (judged work, a person's judgement, an
  equivocation, repeated invalid input); the rest are withheld as
  ``little_evidence``;
* at most ``max_per_round`` are published per round: known subjects first,
  then the largest changes (from the last published value, or from the prior
  when never published); the rest are withheld as ``round_limit`` and wait
  for the next round, where they are due again.

The numbers and their reasons are in protocols/reputation.md, "What is published".
"""

from __future__ import annotations

from dataclasses import dataclass, field

from meshnode.domain.reputation.model import ReputationError
from meshnode.domain.sync.versions import DEFAULT_TRUST

HOUR_MS = 60 * 60 * 1000


@dataclass(frozen=True)
class PublishPolicy:
    min_change: float = 0.05  # republish once the score moved this much
    max_age_ms: int = 24 * HOUR_MS  # ... or once the last statement is this old
    max_per_round: int = 16  # statements signed per round at most
    min_evidence: int = 10  # a stranger is spoken of after this many observations ...
    min_span_ms: int = HOUR_MS  # ... spread over at least this long
    margin: float = 0.16  # ... or once its score is this far from the prior (cheap evidence adds at most 0.15)

    def __post_init__(self) -> None:
        if not (0.0 < self.min_change <= 1.0 and 0.0 < self.margin <= 1.0):
            raise ReputationError("bad_params", "min_change and margin must be in (0, 1]")
        for name in ("max_age_ms", "max_per_round", "min_evidence", "min_span_ms"):
            value = getattr(self, name)
            if type(value) is not int or value < (1 if name == "max_per_round" else 0):
                raise ReputationError("bad_params", f"{name} must be a non-negative integer (max_per_round >= 1)")


DEFAULT_POLICY = PublishPolicy()


@dataclass(frozen=True)
class Candidate:
    """One peer with a local score: ``score`` decayed to now; ``published``/``published_ms`` the
    last statement (None when never); ``evidence`` observations behind the score; ``first_ms``
    and ``last_ms`` when the first and the newest of them were taken in; ``known`` whether it
    is a known author."""

    did: str
    score: float
    published: float | None = None
    published_ms: int | None = None
    evidence: int = 0
    first_ms: int = 0
    last_ms: int = 0
    known: bool = False


@dataclass
class Selection:
    publish: list[str] = field(default_factory=list)
    withheld: dict[str, int] = field(default_factory=dict)  # reason -> statements held back this round

    def hold(self, reason: str) -> None:
        self.withheld[reason] = self.withheld.get(reason, 0) + 1


def is_due(c: Candidate, now_ms: int, policy: PublishPolicy = DEFAULT_POLICY) -> bool:
    return (c.published is None or abs(c.score - c.published) >= policy.min_change
            or now_ms - (c.published_ms or 0) >= policy.max_age_ms)


def worth_publishing(c: Candidate, now_ms: int, policy: PublishPolicy = DEFAULT_POLICY,
                     prior: float = DEFAULT_TRUST) -> bool:
    """Known, or enough evidence over enough time, or a score well away from the prior."""
    return (c.known or abs(c.score - prior) >= policy.margin
            or (c.evidence >= policy.min_evidence and c.last_ms - c.first_ms >= policy.min_span_ms))


def change(c: Candidate, prior: float = DEFAULT_TRUST) -> float:
    return abs(c.score - (prior if c.published is None else c.published))


def select(candidates, now_ms: int, policy: PublishPolicy = DEFAULT_POLICY,
           prior: float = DEFAULT_TRUST) -> Selection:
    """The statements to publish this round, in order, and what is held back (by reason)."""
    out = Selection()
    eligible = []
    for c in candidates:
        if not is_due(c, now_ms, policy):
            continue
        if worth_publishing(c, now_ms, policy, prior):
            eligible.append(c)
        else:
            out.hold("little_evidence")
    eligible.sort(key=lambda c: (not c.known, -change(c, prior), c.did))
    out.publish = [c.did for c in eligible[:policy.max_per_round]]
    for _ in eligible[policy.max_per_round:]:
        out.hold("round_limit")
    return out
