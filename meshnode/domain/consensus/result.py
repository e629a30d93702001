"""consensus_result containers: build one from a tally, verify one against its votes.

A result lists the exact votes it used (their DIDs in ``related.depends_on`` and, with
the voter, value, trust and decay each was counted with, in ``payload.votes``), the
rule it applied and the time it was computed at. Anyone holding those votes can
recompute it: the verifier takes the trust values the result states (trust is each
node's own view, so a result can only be checked against the trust it claims) and
the same functions cogvote.py tallies with. How the verifier's own trust and votes
would change the outcome is a separate, informative comparison (:func:`compare_view`).

The builder and verifier are pure (no I/O: GMP admission calls them). The store side
(votes read from a ``Database``, a vote cast, a result published) is :mod:`meshnode.records.consensus`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable, Mapping

from meshnode.domain.consensus.cogvote import (
    MAX_VOTES,
    ConsensusError,
    Rule,
    Tally,
    ballot_of,
    close,
    decay,
    decide,
    tally,
)
from meshnode.base.container import Container, ContainerError, build_container, format_ms, parse_ms
from meshnode.base.container.schema import class_schema
from meshnode.base.identity.keys import NodeKey
from meshnode.domain.sync.versions import DEFAULT_TRUST

RESULT_CLASS = "consensus_result"
RESULT_VERSION = "1.0"


def result_payload(t: Tally) -> dict:
    o = t.outcome
    return {
        "target_did": t.target,
        "decision": t.rule.decision,
        "computed_at": format_ms(t.at_ms),
        "rule": {"half_life_ms": t.rule.half_life_ms, "min_voters": t.rule.min_voters,
                 "min_trust": float(t.rule.min_trust)},
        "votes": [{"vote": c.ballot.vote, "voter": c.ballot.voter, "value": c.ballot.value,
                   "trust": float(c.trust), "decay": float(c.decay)} for c in t.counted],
        "weights": {"approve": o.approve, "reject": o.reject, "neutral": o.neutral},
        "score": o.score,
        "state": o.state,
        "summary_percent": o.percent(),
    }


def build_result(key: NodeKey, t: Tally, *, now_ms: int | None = None) -> Container:
    """Sign ``t`` as a consensus_result (timestamped ``now_ms``, by default the tally's time)."""
    if len(t.counted) > MAX_VOTES:
        raise ConsensusError("too_many_votes", f"{len(t.counted)} voters; one result lists at most {MAX_VOTES}")
    related = {"in_reply_to": [t.target]}
    if t.counted:
        related["depends_on"] = sorted(c.ballot.vote for c in t.counted)
    return build_container(key, RESULT_CLASS, result_payload(t), class_version=RESULT_VERSION,
                           timestamp_ms=t.at_ms if now_ms is None else now_ms, related=related)


# --- reading and verifying ----------------------------------------------------------


@dataclass(frozen=True)
class Listed:
    """One vote as a result lists it."""

    vote: str
    voter: str
    value: int | float
    trust: float
    decay: float


@dataclass(frozen=True)
class Claim:
    """What a consensus_result states, read and shape-checked."""

    did: str
    target: str
    rule: Rule
    at_ms: int
    entries: tuple[Listed, ...]  # in listed order
    weights: dict
    score: float
    state: str
    percent: dict

    @property
    def vote_dids(self) -> list[str]:
        return [e.vote for e in self.entries]


def read_claim(c: Container) -> Claim:
    """The claim of a consensus_result; ConsensusError(not_a_result | bad_rule) otherwise."""
    if c.cls != RESULT_CLASS or c.head.get("class_version") != RESULT_VERSION:
        raise ConsensusError("not_a_result", f"{c.did} is a {c.cls} {c.head.get('class_version')} container, "
                                             f"not a {RESULT_CLASS} {RESULT_VERSION}")
    p = c.payload
    try:  # the decoder checked it already when the payload is CBOR; this covers the other kinds
        class_schema(RESULT_CLASS, RESULT_VERSION).validate(p, code="class_schema")
        at_ms = parse_ms(p["computed_at"], "computed_at")
    except ContainerError as exc:
        raise ConsensusError("not_a_result", f"{c.did}: {exc.reason}") from None
    r = p["rule"]
    rule = Rule(p["decision"], r["half_life_ms"], r["min_voters"], r["min_trust"])
    entries = tuple(Listed(e["vote"], e["voter"], e["value"], e["trust"], e["decay"]) for e in p["votes"])
    return Claim(c.did, p["target_did"], rule, at_ms, entries, p["weights"], p["score"], p["state"],
                 p["summary_percent"])


@dataclass(frozen=True)
class Verdict:
    ok: bool
    code: str  # "ok", or a ConsensusError code
    reason: str
    claim: Claim | None = None

    def line(self) -> str:
        return f"ok {self.reason}" if self.ok else f"{self.code}: {self.reason}"


def verify_result(result: Container, votes: Mapping[str, Container | None]) -> Verdict:
    """Recompute ``result`` from the vote containers it lists (``votes``: DID -> container,
    or None/absent when not at hand) and the trust and decay values it states.

    The first failed check decides the verdict: the claim's shape, its related links,
    each listed vote in turn (present, a vote, by the voter named, on the target,
    under the decision, with the value, cast by computed_at, unexpired then, with the
    rule's decay), one vote per voter, then weights, score, state and summary.
    """
    try:
        claim = read_claim(result)
        _check_related(result, claim)
        _check_votes(claim, votes)
        _check_outcome(claim)
    except ConsensusError as exc:
        return Verdict(False, exc.code, exc.reason)
    return Verdict(True, "ok", f"{claim.did}: {claim.rule.decision} decision on {claim.target} is {claim.state}, "
                               f"score {claim.score:+.4f} from {len(claim.entries)} vote(s) computed at "
                               f"{format_ms(claim.at_ms)}", claim)


def _check_related(result: Container, claim: Claim) -> None:
    listed = claim.vote_dids
    if len(set(listed)) != len(listed):
        dup = next(d for d in listed if listed.count(d) > 1)
        raise ConsensusError("duplicate_vote", f"the result lists vote {dup} more than once")
    if claim.target not in result.related.get("in_reply_to", []):
        raise ConsensusError("related_mismatch", f"related.in_reply_to does not name the target {claim.target}")
    depends = set(result.related.get("depends_on", []))
    if depends != set(listed):
        extra, missing = sorted(depends - set(listed)), sorted(set(listed) - depends)
        what = f"names {extra[0]}, which payload.votes does not list" if extra else \
            f"does not name listed vote {missing[0]}"
        raise ConsensusError("related_mismatch", f"related.depends_on {what}")


def _check_votes(claim: Claim, votes: Mapping[str, Container | None]) -> None:
    half_life = claim.rule.half_life_ms
    by_voter: dict[str, Container] = {}
    for listed in claim.entries:
        c = votes.get(listed.vote)
        if c is None:
            raise ConsensusError("missing_vote", f"listed vote {listed.vote} is not at hand")
        b = ballot_of(c)
        if b.vote != listed.vote:
            raise ConsensusError("missing_vote", f"the container given for {listed.vote} is {b.vote}")
        if b.voter != listed.voter:
            raise ConsensusError("wrong_voter", f"vote {b.vote} was signed by {b.voter}, not {listed.voter}")
        if b.target != claim.target:
            raise ConsensusError("wrong_target", f"vote {b.vote} is on {b.target}, not {claim.target}")
        if b.decision != claim.rule.decision:
            raise ConsensusError("wrong_decision", f"vote {b.vote} is cast under the {b.decision} decision, "
                                                   f"not {claim.rule.decision}")
        if b.value != listed.value:
            raise ConsensusError("wrong_value", f"vote {b.vote} has value {b.value}, the result says {listed.value}")
        if b.timestamp_ms > claim.at_ms:
            raise ConsensusError("vote_after_result", f"vote {b.vote} was cast at {format_ms(b.timestamp_ms)}, "
                                                      f"after computed_at {format_ms(claim.at_ms)}")
        if b.expires_ms is not None and b.expires_ms <= claim.at_ms:
            raise ConsensusError("expired_vote", f"vote {b.vote} expired at {format_ms(b.expires_ms)}, "
                                                 f"before computed_at {format_ms(claim.at_ms)}")
        want = decay(claim.at_ms - b.timestamp_ms, half_life)
        if not close(listed.decay, want):
            raise ConsensusError("decay_mismatch", f"vote {b.vote} is {claim.at_ms - b.timestamp_ms} ms old: its "
                                                   f"decay is {want!r}, the result says {listed.decay!r}")
        other = by_voter.get(b.voter)
        if other is not None:
            older, newer = (other, c) if ballot_of(c).newer_than(ballot_of(other)) else (c, other)
            raise ConsensusError("not_newest", f"vote {older.did} is not {b.voter}'s newest among those listed "
                                               f"({newer.did} is newer)")
        by_voter[b.voter] = c


def _check_outcome(claim: Claim) -> None:
    o = decide(((e.value, e.trust, e.decay) for e in claim.entries), claim.rule)
    for part, value in (("approve", o.approve), ("reject", o.reject), ("neutral", o.neutral)):
        if not close(claim.weights[part], value):
            raise ConsensusError("tally_mismatch", f"the listed trust and decay values give {part} weight "
                                                   f"{value!r}, the result says {claim.weights[part]!r}")
    if not close(claim.score, o.score):
        raise ConsensusError("score_mismatch", f"the listed votes give score {o.score!r}, "
                                               f"the result says {claim.score!r}")
    if claim.state != o.state:
        raise ConsensusError("state_mismatch", f"the listed votes give state {o.state}, "
                                               f"the result says {claim.state}")
    for part, value in o.percent().items():
        if not close(claim.percent[part], value):
            raise ConsensusError("summary_mismatch", f"the listed votes give {value!r} % {part}, "
                                                     f"the result says {claim.percent[part]!r}")


@dataclass(frozen=True)
class View:
    """How the verifier's own trust and votes, at the result's time, would differ."""

    tally: Tally  # this node's own tally at computed_at, under the result's rule
    trust_differs: tuple[tuple[str, float, float], ...]  # (voter, the result's trust, this node's)
    not_listed: tuple[str, ...]  # votes this node counts that the result does not list
    not_counted: tuple[str, ...]  # listed votes this node does not count (not held, or replaced)
    later: tuple[str, ...]  # votes this node holds that were cast after computed_at

    @property
    def same(self) -> bool:
        return not (self.trust_differs or self.not_listed or self.not_counted)

    def line(self) -> str:
        o = self.tally.outcome
        since = f"; {len(self.later)} vote(s) were cast since" if self.later else ""
        if self.same:
            return f"this node's trust and votes give the same result{since}"
        parts = []
        if self.trust_differs:
            parts.append(f"trust differs for {len(self.trust_differs)} voter(s)")
        if self.not_listed:
            parts.append(f"{len(self.not_listed)} vote(s) it holds are not listed")
        if self.not_counted:
            parts.append(f"{len(self.not_counted)} listed vote(s) it would not count")
        return f"this node's view at that time: {o.state}, score {o.score:+.4f} ({'; '.join(parts)}){since}"


def compare_view(claim: Claim, local_votes: Iterable[Container], trust: Mapping[str, float],
                 default_trust: float = DEFAULT_TRUST) -> View:
    """Tally ``local_votes`` with this node's ``trust`` at the claim's time and rule, and say
    what differs from the claim. Informative only: it never makes a result invalid."""
    own = tally(local_votes, claim.target, trust=trust, at_ms=claim.at_ms, rule=claim.rule,
                default_trust=default_trust)
    own_votes = {c.ballot.vote for c in own.counted}
    listed = set(claim.vote_dids)
    differs = tuple((e.voter, e.trust, float(trust.get(e.voter, default_trust))) for e in claim.entries
                    if not close(e.trust, float(trust.get(e.voter, default_trust))))
    later = tuple(sorted(d for d, _, why in own.excluded if why == "cast after the tally time"))
    return View(own, differs, tuple(sorted(own_votes - listed)), tuple(sorted(listed - own_votes)), later)
