"""Per-peer trust from evidence: the update rule (pure: evidence and times in, scores out).

Theory of operation (the full text, with the numbers, is protocols/reputation.md):

* A peer's state is a score ``s`` in [0, 1], the time ``t`` it refers to, a
  cumulative count of each kind of evidence, and (after equivocation) a time
  until which the score is held under a cap.
* Before anything is applied at time ``now``, the score decays toward the prior
  ``p``: ``s = p + (s - p) * 2^(-(now - t) / half_life)``. Old behaviour fades;
  an idle peer drifts back to "unknown", from above or from below.
* Each evidence kind has a *direction*, a *target* and a *weight*. One
  observation moves the score the fraction ``w`` of the way toward the target,
  and never away from it; ``n`` observations at once move it
  ``t_k + (s - t_k) * (1 - w)^n``. Positive kinds only ever raise a score
  (they do nothing above their target), negative kinds only ever lower it.
  Cheap evidence (well-formed containers, being online) has a target only a
  little above the prior, so an identity cannot reach high trust by being
  present and chatty; high trust comes only from judged work (tasks, validator
  accuracy, consensus conduct).
* Equivocation (two conflicting signed statements, e.g. two votes in one
  round) is severe: the score is multiplied by a small factor, capped, and
  held under the cap for a long time, whatever else arrives meanwhile. It is
  only accepted with a reference to the evidence object (the caller verifies
  that object before recording it; the model keeps the reference).

Nothing here reads a clock, a database or the network: the same calls give the
same result on every node, which is what lets a node explain (and others
recompute) a published score.
"""

from __future__ import annotations

import hashlib
import math
from dataclasses import dataclass, field, replace
from types import MappingProxyType
from typing import Iterable, Mapping

from meshnode.base.errors import MeshnodeError
from meshnode.domain.sync.versions import DEFAULT_TRUST

DAY_MS = 24 * 60 * 60 * 1000
EQUIVOCATION = "equivocation"
MAX_REF = 256


class ReputationError(MeshnodeError):
    """Evidence, a trust statement or a request about reputation that cannot be used as given."""


@dataclass(frozen=True)
class Rule:
    """How one kind of evidence moves a score: ``direction`` +1 raises, -1 lowers,
    toward ``target``, by the fraction ``weight`` per observation."""

    direction: int
    target: float
    weight: float


# The evidence table. Targets and weights are the documented defaults
# (protocols/reputation.md, "Evidence"); a node may pass other Params.
RULES: Mapping[str, Rule] = MappingProxyType({
    # the exchange layer: every container a peer sends is checked
    "valid_container": Rule(+1, 0.65, 0.01),
    "invalid_container": Rule(-1, 0.0, 0.05),
    # heartbeats: one observation per hour heard (ok/quiet) or per hour dead
    "liveness_ok": Rule(+1, 0.65, 0.01),
    "liveness_dead": Rule(-1, 0.3, 0.01),
    # work judged by its outcome
    "task_success": Rule(+1, 1.0, 0.05),
    "task_failure": Rule(-1, 0.0, 0.08),
    # a validator's score agreed (or not) with the final outcome
    "validator_agree": Rule(+1, 1.0, 0.03),
    "validator_disagree": Rule(-1, 0.0, 0.05),
    # consensus conduct: a round completed by the rules, or a rule broken (late, malformed, wrong round)
    "consensus_ok": Rule(+1, 0.9, 0.02),
    "consensus_fault": Rule(-1, 0.0, 0.1),
})


@dataclass(frozen=True)
class Params:
    prior: float = DEFAULT_TRUST
    half_life_ms: int = 30 * DAY_MS
    rules: Mapping[str, Rule] = field(default_factory=lambda: RULES)
    equivocation_factor: float = 0.1
    equivocation_cap: float = 0.05
    equivocation_hold_ms: int = 180 * DAY_MS

    def __post_init__(self) -> None:
        def bad(reason: str) -> ReputationError:
            return ReputationError("bad_params", reason)

        if not 0.0 <= self.prior <= 1.0:
            raise bad("the prior must be in [0, 1]")
        if type(self.half_life_ms) is not int or self.half_life_ms <= 0:
            raise bad("half_life_ms must be a positive integer")
        if not 0.0 <= self.equivocation_cap < self.prior or not 0.0 <= self.equivocation_factor <= 1.0:
            raise bad("the equivocation cap must be below the prior, and the factor in [0, 1]")
        if type(self.equivocation_hold_ms) is not int or self.equivocation_hold_ms < 0:
            raise bad("equivocation_hold_ms must be a non-negative integer")
        for kind, rule in self.rules.items():
            if kind == EQUIVOCATION:
                raise bad("equivocation is not a table rule; it has its own parameters")
            if rule.direction not in (1, -1) or not 0.0 <= rule.target <= 1.0 or not 0.0 < rule.weight < 1.0:
                raise bad(f"rule {kind!r}: direction must be +1 or -1, target in [0, 1], weight in (0, 1)")

    def kinds(self) -> tuple[str, ...]:
        return tuple(sorted(self.rules)) + (EQUIVOCATION,)


DEFAULT_PARAMS = Params()


@dataclass(frozen=True)
class Evidence:
    """``count`` observations of ``kind`` at ``at_ms``. ``ref`` names the evidence
    object (a container DID, or "sha256:<hex>" of opaque bytes, see :func:`evidence_ref`):
    required for equivocation, and what store-side de-duplication keys on."""

    kind: str
    at_ms: int
    count: int = 1
    ref: str | None = None

    def __post_init__(self) -> None:
        if type(self.kind) is not str or not self.kind:
            raise ReputationError("bad_evidence", "an evidence kind must be non-empty text")
        if type(self.at_ms) is not int or self.at_ms < 0:
            raise ReputationError("bad_evidence", f"{self.kind}: at_ms must be a non-negative integer")
        if type(self.count) is not int or self.count < 1:
            raise ReputationError("bad_evidence", f"{self.kind}: count must be a positive integer")
        if self.ref is not None and (type(self.ref) is not str or not 0 < len(self.ref) <= MAX_REF):
            raise ReputationError("bad_evidence", f"{self.kind}: ref must be text of 1 to {MAX_REF} characters")
        if self.kind == EQUIVOCATION and self.ref is None:
            raise ReputationError("no_evidence", "equivocation is only recorded with a reference to its evidence")

    def sort_key(self) -> tuple:
        return (self.at_ms, self.kind, self.ref or "", self.count)


def evidence_ref(evidence: str | bytes) -> str:
    """The reference kept for an evidence object: a DID as it is, bytes as "sha256:<hex>"."""
    if isinstance(evidence, (bytes, bytearray)):
        if not evidence:
            raise ReputationError("no_evidence", "the evidence bytes are empty")
        return "sha256:" + hashlib.sha256(evidence).hexdigest()
    if type(evidence) is str and 0 < len(evidence) <= MAX_REF:
        return evidence
    raise ReputationError("no_evidence", f"evidence must be bytes or a DID of at most {MAX_REF} characters")


@dataclass(frozen=True)
class PeerScore:
    """A peer's state. ``counts`` is cumulative per kind; treat it as read-only."""

    score: float
    updated_ms: int
    capped_until_ms: int = 0
    counts: Mapping[str, int] = field(default_factory=dict)

    def capped(self, now_ms: int) -> bool:
        return now_ms < self.capped_until_ms


def initial(now_ms: int, params: Params = DEFAULT_PARAMS) -> PeerScore:
    """The state of a peer nothing is known about yet: the prior."""
    return PeerScore(params.prior, now_ms)


def _clamp(x: float) -> float:
    return 0.0 if not x > 0.0 else (1.0 if x > 1.0 else x)  # NaN never gets through: it becomes 0


def _hold(score: float, state: PeerScore, now_ms: int, params: Params) -> float:
    return min(score, params.equivocation_cap) if state.capped(now_ms) else score


def decay(state: PeerScore, now_ms: int, params: Params = DEFAULT_PARAMS) -> PeerScore:
    """The state at ``now_ms``: the score pulled toward the prior by the time passed.

    A time before ``updated_ms`` (evidence arriving out of order) decays nothing.
    While an equivocation hold lasts the score stays under the cap.
    """
    dt = now_ms - state.updated_ms
    if dt <= 0:
        return state
    p = params.prior
    s = _clamp(p + (state.score - p) * math.pow(2.0, -dt / params.half_life_ms))
    return replace(state, score=_hold(s, state, now_ms, params), updated_ms=now_ms)


def score_at(state: PeerScore, now_ms: int, params: Params = DEFAULT_PARAMS) -> float:
    return decay(state, now_ms, params).score


def apply(state: PeerScore, ev: Evidence, params: Params = DEFAULT_PARAMS) -> PeerScore:
    """Decay to ``ev.at_ms``, then apply ``ev``. Unknown kinds raise ReputationError."""
    state = decay(state, ev.at_ms, params)
    counts = dict(state.counts)
    counts[ev.kind] = counts.get(ev.kind, 0) + ev.count
    s = state.score
    capped_until = state.capped_until_ms
    if ev.kind == EQUIVOCATION:
        for _ in range(min(ev.count, 64)):  # the factor is below 1: a few rounds reach 0.0 anyway
            s *= params.equivocation_factor
        s = min(s, params.equivocation_cap)
        capped_until = max(capped_until, ev.at_ms + params.equivocation_hold_ms)
    else:
        rule = params.rules.get(ev.kind)
        if rule is None:
            raise ReputationError("unknown_evidence",
                                  f"unknown evidence kind {ev.kind!r}; known: {', '.join(params.kinds())}")
        moved = rule.target + (s - rule.target) * math.pow(1.0 - rule.weight, ev.count)
        s = max(s, moved) if rule.direction > 0 else min(s, moved)
    new = PeerScore(_clamp(s), max(state.updated_ms, ev.at_ms), capped_until, counts)
    return replace(new, score=_hold(new.score, new, new.updated_ms, params))


def apply_all(state: PeerScore, events: Iterable[Evidence], params: Params = DEFAULT_PARAMS) -> PeerScore:
    """Apply events in time order (ties in a fixed order), so the result does not
    depend on the order the caller collected them in."""
    for ev in sorted(events, key=Evidence.sort_key):
        state = apply(state, ev, params)
    return state


# --- reading a score ---------------------------------------------------------------

HIGH, MEDIUM = 0.7, 0.4  # HMP's access thresholds start at 0.7 (join sensitive consensus)


def trust_level(score: float) -> str:
    """agent_reputation.trust_level: high (>= 0.7), medium (>= 0.4), low."""
    return "high" if score >= HIGH else ("medium" if score >= MEDIUM else "low")


def validator_outcome(score: float, final: float, *, tolerance: float = 1.0) -> str:
    """validator_agree when a validator's score was within ``tolerance`` of the final
    outcome (both on the same scale, e.g. -3..+3), else validator_disagree."""
    if not (math.isfinite(score) and math.isfinite(final)):
        raise ReputationError("bad_evidence", "validator scores and outcomes must be finite numbers")
    return "validator_agree" if abs(score - final) <= tolerance else "validator_disagree"
