"""CogConsensus core: the votes on one container in, a weighted score and a state out.

Theory of operation (the rules are specified in protocols/cogconsensus.md):

* A *ballot* is one agent's signed opinion on a target container: today a ``vote``
  container (HMP v5 ``vote``: ``target_did``, ``vote_value`` -1/0/+1); evaluations
  become ballots too once their side-block signatures are verified. A ballot is cast
  under a *decision* kind, ``general`` or ``ethical``; each (target, decision) is its
  own question.
* Selection, at a time ``at``: ballots on the target under the decision, cast at or
  before ``at``; of those, the newest of each voter (``head.timestamp``, then the
  larger container DID); a newest ballot that has expired by ``at`` leaves its voter
  with no ballot (it still replaces the older ones).
* Weight ``w = trust x decay``; ``decay = 2 ** (-(at - timestamp) / half_life)``.
  ``score = sum(value x w) / sum(w)`` (0 when the sum is 0), always in [-1, 1].
* Quorum: at least ``min_voters`` counted voters with trust > 0, whose trust (not
  decayed: decay shifts weight among those who took part, it does not undo their
  taking part) adds up to at least ``min_trust``.
* Shares of the *decided* weight ``D = approve + reject`` (abstentions count toward
  quorum and the score only): general decisions pass when approve > D/2, ethical
  ones when approve >= 2/3 D; the mirror rule rejects. States: ``pending`` without
  quorum, else ``approved`` / ``rejected`` when a side reaches its threshold, else
  ``disputed``. Sums and comparisons are exact (fractions of the float inputs), so
  the state at a threshold never depends on rounding or on the order of the votes.

Pure: containers, trust values and a time come in; nothing here reads a clock, a
database or the network. result.py verifies a consensus_result with these same
functions, so a result and its verification cannot drift apart.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction
from typing import Iterable, Mapping

from meshnode.base.container import Container, build_container, parse_ms
from meshnode.base.container.errors import ContainerError
from meshnode.base.errors import MeshnodeError
from meshnode.base.identity.keys import NodeKey
from meshnode.domain.sync.versions import DEFAULT_TRUST

DAY_MS = 86_400_000
DEFAULT_HALF_LIFE_MS = 30 * DAY_MS
DEFAULT_MIN_VOTERS = 3
DEFAULT_MIN_TRUST = 1.0
MAX_VOTES = 512  # per result: the votes list and related.depends_on must fit one container

# decision kind -> (numerator, denominator, strict): a side wins when its share of the
# decided weight is more than (strict) or at least (not strict) numerator / denominator.
DECISIONS: dict[str, tuple[int, int, bool]] = {
    "general": (1, 2, True),   # HMP v5 6.2.7: "50 % + 1" of the weighted vote
    "ethical": (2, 3, False),  # HMP v5 6.5: ">= 2/3"
}
STATES = ("approved", "rejected", "disputed", "pending")
VOTE_TYPES = {1: "approval", 0: "abstain", -1: "objection"}  # HMP vote_type for each vote_value

# code -> meaning, for every way a vote, a rule or a result can be refused
CODES = {
    "not_a_vote": "a container counted as a vote is not a well-formed vote",
    "bad_rule": "a consensus rule parameter is out of range",
    "bad_target": "the target asked about is not a DID",
    "unknown_target": "a vote on a container this node does not hold",
    "bad_trust": "a trust value is not a number in [0, 1]",
    "bad_decay": "a decay value is not a number in [0, 1]",
    "too_many_votes": "more votes than one consensus_result can list",
    "not_a_result": "the container is not a consensus_result meshnode can read",
    "duplicate_vote": "a result lists the same vote twice",
    "related_mismatch": "a result's related links do not match its payload",
    "missing_vote": "a vote the result lists is not at hand",
    "wrong_voter": "a listed vote was not signed by the voter the result names",
    "wrong_target": "a listed vote is on another target",
    "wrong_decision": "a listed vote was cast under another decision kind",
    "wrong_value": "a listed vote has another value than the result says",
    "vote_after_result": "a listed vote was cast after the result's computed_at",
    "expired_vote": "a listed vote had expired at the result's computed_at",
    "decay_mismatch": "a listed decay is not the rule's decay for the vote's age",
    "not_newest": "a result lists two votes of one voter",
    "tally_mismatch": "the listed trust and decay values do not give the listed weights",
    "score_mismatch": "the listed votes do not give the listed score",
    "state_mismatch": "the listed votes do not give the listed state",
    "summary_mismatch": "the listed votes do not give the listed summary_percent",
}


class ConsensusError(MeshnodeError):
    """A vote, rule or result refused: ``code`` is one of :data:`CODES`."""

    def __init__(self, code: str, reason: str):
        assert code in CODES, code
        super().__init__(code, reason)


@dataclass(frozen=True)
class Rule:
    """The parameters a tally is computed with; a consensus_result carries them."""

    decision: str = "general"
    half_life_ms: int = DEFAULT_HALF_LIFE_MS  # 0: no decay
    min_voters: int = DEFAULT_MIN_VOTERS
    min_trust: float = DEFAULT_MIN_TRUST

    def __post_init__(self) -> None:
        if self.decision not in DECISIONS:
            raise ConsensusError("bad_rule", f"decision must be one of {', '.join(DECISIONS)}")
        if type(self.half_life_ms) is not int or not 0 <= self.half_life_ms <= 2**53:
            raise ConsensusError("bad_rule", "half_life_ms must be a whole number of milliseconds, 0 or more")
        if type(self.min_voters) is not int or not 1 <= self.min_voters <= 1_000_000:
            raise ConsensusError("bad_rule", "min_voters must be a whole number from 1 to 1000000")
        if type(self.min_trust) not in (int, float) or not 0 <= self.min_trust <= 1e9:
            raise ConsensusError("bad_rule", "min_trust must be a number from 0 to 1e9")


@dataclass(frozen=True)
class Ballot:
    """One signed opinion on a target, as the tally needs it."""

    vote: str  # the vote container's DID
    voter: str  # its signer (head.sender_did)
    target: str
    decision: str
    value: int | float  # -1 .. 1
    timestamp_ms: int
    expires_ms: int | None = None

    def newer_than(self, other: "Ballot") -> bool:
        return (self.timestamp_ms, self.vote) > (other.timestamp_ms, other.vote)


def ballot_of(c: Container) -> Ballot:
    """The ballot a ``vote`` container casts; ConsensusError(not_a_vote) when it is none."""
    if c.cls != "vote":
        raise ConsensusError("not_a_vote", f"{c.did} is a {c.cls} container, not a vote")
    p = c.payload
    if type(p) is not dict:
        raise ConsensusError("not_a_vote", f"vote {c.did} has no payload map")
    target, value, decision = p.get("target_did"), p.get("vote_value"), p.get("decision", "general")
    if type(target) is not str:
        raise ConsensusError("not_a_vote", f"vote {c.did} names no target_did")
    if type(value) not in (int, float) or not -1 <= value <= 1:
        raise ConsensusError("not_a_vote", f"vote {c.did} has no vote_value in [-1, 1]")
    if decision not in DECISIONS:
        raise ConsensusError("not_a_vote", f"vote {c.did} has an unknown decision kind")
    try:
        expires = parse_ms(c.head["ttl"], "ttl") if "ttl" in c.head else None
    except ContainerError as exc:
        raise ConsensusError("not_a_vote", f"vote {c.did}: {exc.reason}") from None
    return Ballot(c.did, c.sender_did, target, decision, value, c.timestamp_ms, expires)


def make_vote(key: NodeKey, target_did: str, value: int, *, now_ms: int, decision: str = "general",
              arguments: list[dict] | None = None, evidence: list[str] | None = None,
              replaces: list[str] | None = None, ttl_ms: int | None = None) -> Container:
    """Sign a vote (HMP v5): ``related.in_reply_to`` the target, ``depends_on`` the evidence,
    ``previous_version`` the voter's earlier votes it revises. The newest vote counts, so a
    revision must be timestamped after the vote it replaces (the caller picks ``now_ms``)."""
    if type(value) is not int or value not in VOTE_TYPES:
        raise ConsensusError("not_a_vote", "a vote's value is -1, 0 or 1")
    if decision not in DECISIONS:
        raise ConsensusError("not_a_vote", f"decision must be one of {', '.join(DECISIONS)}")
    payload: dict = {"target_did": target_did, "vote_value": value, "vote_type": VOTE_TYPES[value]}
    if decision != "general":
        payload["decision"] = decision
    if arguments:
        payload["arguments"] = list(arguments)
    related: dict = {"in_reply_to": [target_did]}
    if evidence:
        related["depends_on"] = sorted(set(evidence))
    if replaces:
        related["previous_version"] = sorted(set(replaces))
    return build_container(key, "vote", payload, timestamp_ms=now_ms, related=related, ttl_ms=ttl_ms)


def decay(age_ms: int, half_life_ms: int) -> float:
    """Weight left to a vote ``age_ms`` old: halves every ``half_life_ms`` (0: never decays)."""
    if half_life_ms == 0:
        return 1.0
    return 2.0 ** (-max(age_ms, 0) / half_life_ms)


def newest_per_voter(ballots: Iterable[Ballot]) -> tuple[dict[str, Ballot], list[Ballot]]:
    """The newest ballot of each voter, and the ones they replace. Order of input is irrelevant."""
    unique: dict[str, Ballot] = {}
    best: dict[str, Ballot] = {}
    for b in ballots:
        unique.setdefault(b.vote, b)
        held = best.get(b.voter)
        if held is None or b.newer_than(held):
            best[b.voter] = b
    chosen = {b.vote for b in best.values()}
    return best, [b for b in unique.values() if b.vote not in chosen]


@dataclass(frozen=True)
class Counted:
    """A ballot as counted: with the trust and decay its weight came from."""

    ballot: Ballot
    trust: float
    decay: float


@dataclass(frozen=True)
class Outcome:
    score: float
    state: str
    approve: float  # sum of w x value over positive values
    reject: float  # sum of w x -value over negative values
    neutral: float  # the rest of the weight: abstentions, and the unspent part of partial values
    voters: int  # counted voters with trust > 0
    trust_sum: float
    quorum: bool

    def percent(self) -> dict[str, float]:
        """HMP's summary_percent: each part as a percentage of the whole weight (0s when none)."""
        parts = {"approved": Fraction(self.approve), "rejected": Fraction(self.reject),
                 "neutral": Fraction(self.neutral)}
        total = sum(parts.values())
        return {k: float(100 * v / total) if total else 0.0 for k, v in parts.items()}


def decide(entries: Iterable[tuple[int | float, float, float]], rule: Rule) -> Outcome:
    """Score, weights and state of ``(value, trust, decay)`` entries, one per voter.

    Exact: every float is taken as the rational it is, so sums do not depend on order
    and a threshold is met or not whatever the rounding. Only the reported numbers are
    rounded (once, to the nearest float).
    """
    approve = reject = neutral = trust_sum = Fraction(0)
    voters = 0
    for value, trust, dec in entries:
        _check_unit(trust, "trust")
        _check_unit(dec, "decay")
        w = Fraction(trust) * Fraction(dec)
        v = Fraction(value)
        if v > 0:
            approve += w * v
        elif v < 0:
            reject -= w * v
        neutral += w * (1 - abs(v))
        if trust > 0:
            voters += 1
            trust_sum += Fraction(trust)
    total = approve + reject + neutral
    score = (approve - reject) / total if total else Fraction(0)
    quorum = voters >= rule.min_voters and trust_sum >= Fraction(rule.min_trust)
    decided = approve + reject
    num, den, strict = DECISIONS[rule.decision]

    def wins(side: Fraction) -> bool:
        if decided == 0:
            return False
        return side * den > num * decided if strict else side * den >= num * decided

    if not quorum:
        state = "pending"
    elif wins(approve):
        state = "approved"
    elif wins(reject):
        state = "rejected"
    else:
        state = "disputed"
    return Outcome(float(score), state, float(approve), float(reject), float(neutral), voters,
                   float(trust_sum), quorum)


def _check_unit(x: float, what: str) -> None:
    if type(x) not in (int, float) or not 0 <= x <= 1:  # NaN fails too
        raise ConsensusError(f"bad_{what}", f"{what} {x!r} is not a number in [0, 1]")


@dataclass(frozen=True)
class Tally:
    """The votes on one (target, decision) at one time, and what they decide."""

    target: str
    rule: Rule
    at_ms: int
    counted: tuple[Counted, ...]  # one per voter, sorted by voter then vote DID
    excluded: tuple[tuple[str, str, str], ...]  # (vote DID, voter, reason)
    outcome: Outcome

    def to_plain(self) -> dict:
        o = self.outcome
        return {
            "target_did": self.target, "decision": self.rule.decision, "at_ms": self.at_ms,
            "rule": {"half_life_ms": self.rule.half_life_ms, "min_voters": self.rule.min_voters,
                     "min_trust": self.rule.min_trust},
            "state": o.state, "score": o.score, "quorum": o.quorum, "voters": o.voters, "trust_sum": o.trust_sum,
            "weights": {"approve": o.approve, "reject": o.reject, "neutral": o.neutral},
            "summary_percent": o.percent(),
            "votes": [{"vote": c.ballot.vote, "voter": c.ballot.voter, "value": c.ballot.value,
                       "trust": c.trust, "decay": c.decay, "timestamp_ms": c.ballot.timestamp_ms}
                      for c in self.counted],
            "excluded": [{"vote": d, "voter": v, "reason": r} for d, v, r in self.excluded],
        }


def tally(votes: Iterable[Container | Ballot], target: str, *, trust: Mapping[str, float], at_ms: int,
          rule: Rule = Rule(), default_trust: float = DEFAULT_TRUST) -> Tally:
    """Count ``votes`` on ``target`` under ``rule`` as of ``at_ms``.

    ``votes`` may hold anything found near the target: containers that are not votes,
    votes on other targets or under another decision are left out (and listed in
    ``excluded`` with the reason). ``trust`` maps voter DIDs to [0, 1]; voters it does
    not name get ``default_trust``.
    """
    excluded: list[tuple[str, str, str]] = []
    candidates: list[Ballot] = []
    for item in votes:
        if isinstance(item, Container):
            try:
                item = ballot_of(item)
            except ConsensusError as exc:
                if item.cls == "vote":
                    excluded.append((item.did, item.sender_did, f"malformed: {exc.reason}"))
                continue
        if item.target != target:
            excluded.append((item.vote, item.voter, "other target"))
        elif item.decision != rule.decision:
            excluded.append((item.vote, item.voter, f"{item.decision} decision"))
        elif item.timestamp_ms > at_ms:
            excluded.append((item.vote, item.voter, "cast after the tally time"))
        else:
            candidates.append(item)
    best, replaced = newest_per_voter(candidates)
    excluded.extend((b.vote, b.voter, "replaced by a newer vote") for b in replaced)
    counted = []
    for b in sorted(best.values(), key=lambda b: (b.voter, b.vote)):
        if b.expires_ms is not None and b.expires_ms <= at_ms:
            excluded.append((b.vote, b.voter, "expired"))
            continue
        t = trust.get(b.voter, default_trust)
        _check_unit(t, "trust")
        counted.append(Counted(b, float(t), decay(at_ms - b.timestamp_ms, rule.half_life_ms)))
    outcome = decide(((c.ballot.value, c.trust, c.decay) for c in counted), rule)
    excluded.sort(key=lambda e: (e[1], e[0]))
    return Tally(target, rule, at_ms, tuple(counted), tuple(excluded), outcome)


def close(a: float, b: float, epsilon: float = 1e-9) -> bool:
    """Equal within ``epsilon``, relative for numbers above 1 (the verifier's tolerance)."""
    return math.isfinite(a) and math.isfinite(b) and abs(a - b) <= epsilon * max(1.0, abs(a), abs(b))
