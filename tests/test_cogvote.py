"""The CogConsensus tally (meshnode/domain/consensus/cogvote.py): selection, decay, score, thresholds, states."""

from __future__ import annotations

import math
from fractions import Fraction

import pytest
from hypothesis import given
from hypothesis import strategies as st

from meshnode.domain.consensus.cogvote import (
    DECISIONS,
    Ballot,
    ConsensusError,
    Rule,
    ballot_of,
    decay,
    decide,
    make_vote,
    newest_per_voter,
    tally,
)
from meshnode.base.container import ContainerError, build_container, decode_container
from meshnode.base.identity.keys import NodeKey

KEYS = [NodeKey(bytes([i]) * 32) for i in range(40, 46)]
T0 = 1_800_000_000_000
TARGET = "did:hmp:container:uEiAtarget"
OTHER = "did:hmp:container:uEiAother"
DAY = 86_400_000
VOTERS = [f"did:key:z6Mkvoter{i}" for i in range(8)]


def ballot(n: int, voter: int, value, t: int = 0, *, target=TARGET, decision="general", expires=None) -> Ballot:
    return Ballot(f"did:hmp:container:uEiA{n:04d}", VOTERS[voter], target, decision, value, T0 + t, expires)


def state_of(values_trusts, decision="general", min_voters=1, min_trust=0.0):
    return decide(((v, t, 1.0) for v, t in values_trusts), Rule(decision, 0, min_voters, min_trust)).state


# --- decay -----------------------------------------------------------------------------


def test_decay_halves_every_half_life():
    assert decay(0, DAY) == 1.0
    assert decay(DAY, DAY) == 0.5
    assert decay(3 * DAY, DAY) == 0.125
    assert decay(10 * DAY, 0) == 1.0  # half-life 0: no decay
    assert decay(-5, DAY) == 1.0  # never more than full weight


@given(st.integers(0, 10**12), st.integers(0, 10**12), st.integers(1, 10**11))
def test_decay_is_in_unit_range_and_never_grows_with_age(a, b, half_life):
    young, old = sorted((a, b))
    assert 0.0 <= decay(old, half_life) <= decay(young, half_life) <= 1.0


# --- the score -------------------------------------------------------------------------

values = st.one_of(st.sampled_from([-1, 0, 1]), st.floats(-1, 1))
unit = st.floats(0, 1)


@given(st.lists(st.tuples(values, unit, unit), max_size=30), st.sampled_from(sorted(DECISIONS)))
def test_score_is_within_minus_one_and_one(entries, decision):
    o = decide(entries, Rule(decision, 0, 1, 0.0))
    assert -1.0 <= o.score <= 1.0
    assert o.state in ("approved", "rejected", "disputed", "pending")
    weights = [Fraction(t) * Fraction(d) for _, t, d in entries]
    if not any(weights):
        assert o.score == 0.0
    else:  # the formula, summed exactly and rounded once
        assert o.score == float(sum(Fraction(v) * w for (v, _, _), w in zip(entries, weights)) / sum(weights))


def test_score_is_the_weighted_mean():
    o = decide([(1, 1.0, 1.0), (-1, 0.5, 1.0), (0, 0.5, 0.5)], Rule(min_voters=1))
    assert o.score == pytest.approx((1 - 0.5) / (1 + 0.5 + 0.25))
    assert (o.approve, o.reject, o.neutral) == (1.0, 0.5, 0.25)
    assert o.percent() == pytest.approx({"approved": 100 / 1.75, "rejected": 50 / 1.75, "neutral": 25 / 1.75})


# --- thresholds at their exact boundaries -----------------------------------------------


@given(st.integers(0, 12), st.integers(0, 12), st.integers(0, 5), st.floats(0.001, 1))
def test_general_needs_more_than_half_of_the_decided_weight(approvers, objectors, abstainers, trust):
    entries = [(1, trust)] * approvers + [(-1, trust)] * objectors + [(0, trust)] * abstainers
    state = state_of(entries)
    if not entries:
        assert state == "pending"
    elif approvers > objectors:
        assert state == "approved"
    elif objectors > approvers:
        assert state == "rejected"
    else:  # a tie, or only abstentions
        assert state == "disputed"


@given(st.integers(0, 12), st.integers(0, 12), st.integers(0, 5), st.floats(0.001, 1))
def test_ethical_needs_two_thirds_of_the_decided_weight(approvers, objectors, abstainers, trust):
    entries = [(1, trust)] * approvers + [(-1, trust)] * objectors + [(0, trust)] * abstainers
    state = state_of(entries, "ethical")
    if not entries:
        assert state == "pending"
    elif approvers + objectors and approvers >= 2 * objectors:
        assert state == "approved"
    elif approvers + objectors and objectors >= 2 * approvers:
        assert state == "rejected"
    else:
        assert state == "disputed"


@given(st.floats(1e-6, 0.5))
def test_the_boundaries_are_exact_whatever_the_trust_values(x):
    # approve weight exactly 2/3 of the decided weight: ethical passes; one ulp less: it does not
    assert state_of([(1, 2 * x), (-1, x)], "ethical") == "approved"
    assert state_of([(1, math.nextafter(2 * x, 0)), (-1, x)], "ethical") == "disputed"
    assert state_of([(1, x), (-1, 2 * x)], "ethical") == "rejected"
    # exactly half is not more than half; one ulp more is
    assert state_of([(1, x), (-1, x)]) == "disputed"
    assert state_of([(1, math.nextafter(x, 1)), (-1, x)]) == "approved"
    assert state_of([(1, x), (-1, math.nextafter(x, 1))]) == "rejected"


def test_the_boundary_does_not_depend_on_float_rounding():
    # in floats 1.0 + 1e-17 == 1.0, a tie; the tally sums exactly, so the tiny vote tips it, in any order
    assert 1.0 + 1e-17 == 1.0
    entries = [(1, 1.0), (1, 1e-17), (-1, 1.0)]
    assert {state_of(entries[i:] + entries[:i]) for i in range(3)} == {"approved"}
    assert state_of([(1, 1.0), (-1, 1e-17), (-1, 1.0)]) == "rejected"


def test_abstentions_count_toward_quorum_and_score_not_the_shares():
    rule = Rule("general", 0, 3, 0.0)
    o = decide([(1, 1.0, 1.0), (0, 1.0, 1.0), (0, 1.0, 1.0)], rule)
    assert o.state == "approved" and o.quorum and o.score == pytest.approx(1 / 3)
    assert decide([(1, 1.0, 1.0), (0, 1.0, 1.0)], rule).state == "pending"
    assert decide([(0, 1.0, 1.0)] * 3, rule).state == "disputed"  # quorum, but no side


# --- quorum ------------------------------------------------------------------------------


def test_pending_without_enough_voters_or_trust():
    three_fresh = [(1, 0.5, 1.0)] * 3
    assert decide(three_fresh, Rule(min_voters=3, min_trust=1.0)).state == "approved"
    assert decide(three_fresh[:2], Rule(min_voters=3, min_trust=1.0)).state == "pending"
    assert decide(three_fresh, Rule(min_voters=3, min_trust=1.6)).state == "pending"
    # untrusted voters do not make a quorum
    assert decide(three_fresh[:2] + [(1, 0.0, 1.0)] * 5, Rule(min_voters=3, min_trust=0.0)).state == "pending"
    # decay shifts weight, it does not undo participation
    old = [(1, 0.5, 2.0 ** -40)] * 3
    assert decide(old, Rule(min_voters=3, min_trust=1.0)).state == "approved"


def test_rules_out_of_range_are_refused():
    for bad in (dict(decision="royal"), dict(half_life_ms=-1), dict(half_life_ms=1.5), dict(min_voters=0),
                dict(min_trust=-0.1), dict(min_trust=float("nan"))):
        with pytest.raises(ConsensusError) as info:
            Rule(**bad)
        assert info.value.code == "bad_rule"
    with pytest.raises(ConsensusError) as info:
        decide([(1, 1.5, 1.0)], Rule())
    assert info.value.code == "bad_trust"


# --- selection: the newest vote of each voter ----------------------------------------------

ballot_specs = st.lists(st.tuples(st.integers(0, 4), st.sampled_from([-1, 0, 1]), st.integers(0, 20)),
                        min_size=1, max_size=25)


@given(ballot_specs, st.randoms())
def test_only_the_newest_vote_of_each_voter_counts_whatever_the_order(specs, rnd):
    ballots = [ballot(n, voter, value, t) for n, (voter, value, t) in enumerate(specs)]
    shuffled = list(ballots)
    rnd.shuffle(shuffled)
    a = tally(ballots, TARGET, trust={}, at_ms=T0 + 100, rule=Rule(min_voters=1))
    b = tally(shuffled, TARGET, trust={}, at_ms=T0 + 100, rule=Rule(min_voters=1))
    assert a == b
    counted = {c.ballot.voter: c.ballot for c in a.counted}
    assert set(counted) == {b.voter for b in ballots}
    for voter, chosen in counted.items():  # latest time, then the larger DID
        assert chosen == max((b for b in ballots if b.voter == voter), key=lambda b: (b.timestamp_ms, b.vote))
    replaced = {d for d, _, why in a.excluded if why == "replaced by a newer vote"}
    assert replaced == {b.vote for b in ballots} - {b.vote for b in counted.values()}


def test_equal_timestamps_are_broken_by_the_larger_vote_did():
    first, second = ballot(1, 0, 1, 5), ballot(2, 0, -1, 5)
    best, replaced = newest_per_voter([second, first])
    assert best[VOTERS[0]] == second and replaced == [first]


def test_votes_on_other_questions_or_from_the_future_are_left_out():
    ballots = [ballot(1, 0, 1, target=OTHER), ballot(2, 1, 1, decision="ethical"), ballot(3, 2, 1, t=500),
               ballot(4, 3, -1, t=0), ballot(5, 3, 1, t=10, expires=T0 + 50), ballot(6, 4, 1)]
    t = tally(ballots, TARGET, trust={VOTERS[4]: 0.9}, at_ms=T0 + 100, rule=Rule(min_voters=1, min_trust=0.0))
    assert [c.ballot.vote for c in t.counted] == [ballots[5].vote]
    assert t.counted[0].trust == 0.9
    why = {d: r for d, _, r in t.excluded}
    assert why == {ballots[0].vote: "other target", ballots[1].vote: "ethical decision",
                   ballots[2].vote: "cast after the tally time", ballots[3].vote: "replaced by a newer vote",
                   ballots[4].vote: "expired"}  # the expired newest vote still replaces the older one
    ethical = tally(ballots, TARGET, trust={}, at_ms=T0 + 100, rule=Rule("ethical", min_voters=1))
    assert [c.ballot.vote for c in ethical.counted] == [ballots[1].vote]


def test_unknown_voters_get_the_default_trust_and_votes_decay_with_age():
    t = tally([ballot(1, 0, 1, 0)], TARGET, trust={}, at_ms=T0 + 2 * DAY, rule=Rule(half_life_ms=DAY))
    assert (t.counted[0].trust, t.counted[0].decay) == (0.5, 0.25)
    assert t.outcome.approve == 0.125


# --- vote containers -----------------------------------------------------------------------


def test_a_vote_container_is_hmp_shaped_and_casts_its_ballot():
    v = make_vote(KEYS[0], TARGET, -1, now_ms=T0, decision="ethical", arguments=[{"reason": "unsafe"}],
                  evidence=[OTHER])
    v = decode_container(v.to_bytes(), now_ms=T0)
    assert v.payload == {"target_did": TARGET, "vote_value": -1, "vote_type": "objection", "decision": "ethical",
                         "arguments": [{"reason": "unsafe"}]}
    assert v.related == {"in_reply_to": [TARGET], "depends_on": [OTHER]}
    assert ballot_of(v) == Ballot(v.did, KEYS[0].did, TARGET, "ethical", -1, T0, None)
    general = make_vote(KEYS[0], TARGET, 1, now_ms=T0 + 1, replaces=[v.did])
    assert "decision" not in general.payload and general.related["previous_version"] == [v.did]
    assert ballot_of(general).decision == "general"


def test_bad_votes_are_refused_with_a_reason():
    with pytest.raises(ConsensusError):
        make_vote(KEYS[0], TARGET, 2, now_ms=T0)
    with pytest.raises(ContainerError) as info:
        build_container(KEYS[0], "vote", {"target_did": TARGET, "vote_value": 1, "vote_type": "approval",
                                          "decision": "royal"}, timestamp_ms=T0)
    assert info.value.code == "class_schema" and "decision" in info.value.reason
    note = build_container(KEYS[0], "note", {"text": "x", "source": "cli", "audience": "private"}, timestamp_ms=T0)
    with pytest.raises(ConsensusError) as refused:
        ballot_of(note)
    assert refused.value.code == "not_a_vote"
    odd = build_container(KEYS[0], "vote", {"target_did": TARGET, "vote_value": 5}, class_version="9.0",
                          timestamp_ms=T0)  # an unknown version passes the decoder, not the tally
    t = tally([odd, note], TARGET, trust={}, at_ms=T0)
    assert t.counted == () and [r for _, _, r in t.excluded][0].startswith("malformed")


def test_a_foreign_hmp_vote_without_meshnode_fields_counts_as_general():
    v = build_container(KEYS[1], "vote", {"target_did": TARGET, "vote_value": 1, "vote_type": "support",
                                          "arguments": [{"reason": "r", "evidence": [OTHER]}]},
                        timestamp_ms=T0, related={"in_reply_to": [TARGET]})
    t = tally([v], TARGET, trust={}, at_ms=T0, rule=Rule(min_voters=1, min_trust=0.5))
    assert t.outcome.state == "approved"
