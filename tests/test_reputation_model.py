"""The reputation update rule (meshnode/domain/reputation/model.py) and what trust feeds (weights.py):
properties over arbitrary evidence, plus the documented numbers (protocols/reputation.md)."""

from __future__ import annotations

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from meshnode.domain.reputation import (
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
    consensus_weights,
    decay,
    evidence_ref,
    gossip_app_score,
    initial,
    score_at,
    trust_level,
    validator_outcome,
    validator_rating,
    weighted_share,
)
from meshnode.domain.reputation.weights import GOSSIP_THRESHOLDS, accepts

T0 = 1_800_000_000_000
DAY = 24 * 60 * 60 * 1000
P = DEFAULT_PARAMS
EPS = 1e-12

POSITIVE = sorted(k for k, r in RULES.items() if r.direction > 0)
NEGATIVE = sorted(k for k, r in RULES.items() if r.direction < 0)

scores = st.floats(min_value=0.0, max_value=1.0)
times = st.integers(min_value=T0, max_value=T0 + 400 * DAY)
counts = st.integers(min_value=1, max_value=10_000)
refs = st.none() | st.text(min_size=1, max_size=20)


@st.composite
def evidence(draw, kinds=None):
    kind = draw(st.sampled_from(kinds or sorted(RULES) + [EQUIVOCATION]))
    ref = draw(st.text(min_size=1, max_size=20)) if kind == EQUIVOCATION else draw(refs)
    return Evidence(kind, draw(times), draw(counts), ref)


@st.composite
def states(draw):
    capped = draw(st.booleans())
    score = draw(st.floats(0.0, P.equivocation_cap)) if capped else draw(scores)
    t = draw(times)
    return PeerScore(score, t, t + P.equivocation_hold_ms if capped else 0)


@st.composite
def params(draw):
    prior = draw(st.floats(0.1, 0.9))
    rules = {f"k{i}": Rule(draw(st.sampled_from([1, -1])), draw(scores), draw(st.floats(0.001, 0.999)))
             for i in range(draw(st.integers(1, 4)))}
    return Params(prior=prior, half_life_ms=draw(st.integers(1, 100 * DAY)), rules=rules,
                  equivocation_cap=draw(st.floats(0.0, prior * 0.99)))


# --- properties ---------------------------------------------------------------------


@given(states(), st.lists(evidence(), max_size=30))
def test_scores_always_stay_within_0_and_1(state, events):
    for ev in events:
        state = apply(state, ev)
        assert 0.0 <= state.score <= 1.0


@given(params(), st.data())
def test_scores_stay_in_range_under_any_rule_table(p, data):
    kinds = sorted(p.rules)
    state = initial(T0, p)
    for _ in range(data.draw(st.integers(0, 20))):
        ev = Evidence(data.draw(st.sampled_from(kinds)), data.draw(times), data.draw(counts))
        state = apply(state, ev, p)
        assert 0.0 <= state.score <= 1.0
        assert 0.0 <= score_at(state, data.draw(times), p) <= 1.0


@given(states(), times, times)
def test_decay_moves_toward_the_prior_monotonically(state, t1, t2):
    t1, t2 = sorted((t1, t2))
    p = P.prior
    s0 = state.score
    s1, s2 = score_at(state, t1), score_at(state, t2)
    # never crosses the prior, and each later time is no farther from it
    assert (s1 - p) * (s0 - p) >= -EPS and (s2 - p) * (s0 - p) >= -EPS
    if t1 >= state.updated_ms:
        assert abs(s1 - p) <= abs(s0 - p) + EPS
    assert abs(s2 - p) <= abs(s1 - p) + EPS


@given(states(), evidence(NEGATIVE))
def test_negative_evidence_never_raises_a_score(state, ev):
    assert apply(state, ev).score <= decay(state, ev.at_ms).score + EPS


@given(states(), evidence(POSITIVE))
def test_positive_evidence_never_lowers_a_score(state, ev):
    assert apply(state, ev).score >= decay(state, ev.at_ms).score - EPS


@given(scores, st.lists(evidence(), max_size=20), st.text(min_size=1, max_size=10))
def test_equivocation_caps_the_score_for_the_whole_hold(start, later, ref):
    state = apply(PeerScore(start, T0), Evidence(EQUIVOCATION, T0, ref=ref))
    assert state.score <= min(P.equivocation_cap, start * P.equivocation_factor) + EPS
    for ev in sorted(later, key=Evidence.sort_key):  # in time order: the hold is judged at the state's time
        state = apply(state, ev)
        if ev.at_ms < state.capped_until_ms:
            assert state.score <= P.equivocation_cap + EPS
    assert state.capped_until_ms == max([T0] + [ev.at_ms for ev in later if ev.kind == EQUIVOCATION]) \
        + P.equivocation_hold_ms
    if state.updated_ms < state.capped_until_ms:
        assert score_at(state, state.capped_until_ms - 1) <= P.equivocation_cap + EPS


def test_after_the_hold_an_equivocator_drifts_back_toward_the_prior():
    state = apply(PeerScore(0.9, T0), Evidence(EQUIVOCATION, T0, ref="did:hmp:container:uEiAproof"))
    assert state.score == pytest.approx(0.05)
    held = score_at(state, T0 + P.equivocation_hold_ms - 1)
    assert held == pytest.approx(0.05)
    later = score_at(state, T0 + P.equivocation_hold_ms + P.half_life_ms)
    assert 0.05 < later < P.prior


@given(states(), st.lists(evidence(), max_size=12), st.randoms())
def test_the_order_events_are_collected_in_does_not_matter(state, events, rnd):
    shuffled = list(events)
    rnd.shuffle(shuffled)
    assert apply_all(state, events) == apply_all(state, shuffled)


@given(scores, st.sampled_from(sorted(RULES)), st.integers(1, 40))
def test_a_batch_of_n_is_n_single_observations(start, kind, n):
    batch = apply(PeerScore(start, T0), Evidence(kind, T0, n)).score
    one_by_one = PeerScore(start, T0)
    for _ in range(n):
        one_by_one = apply(one_by_one, Evidence(kind, T0))
    assert batch == pytest.approx(one_by_one.score, abs=1e-9)


@given(st.lists(st.tuples(st.sampled_from(["valid_container", "liveness_ok"]), counts), max_size=10))
def test_cheap_evidence_alone_never_reaches_its_target_from_below(batches):
    state = initial(T0)
    for kind, n in batches:
        state = apply(state, Evidence(kind, T0, n))
    assert state.score <= RULES["valid_container"].target + EPS
    assert trust_level(state.score) != "high"


# --- the documented numbers ----------------------------------------------------------


def test_documented_examples():
    s = apply(initial(T0), Evidence("task_success", T0)).score
    assert s == pytest.approx(0.5 + 0.05 * 0.5)
    s = apply(PeerScore(0.8, T0), Evidence("invalid_container", T0, 2)).score
    assert s == pytest.approx(0.8 * 0.95 ** 2)
    assert score_at(PeerScore(0.9, T0), T0 + P.half_life_ms) == pytest.approx(0.7)
    assert score_at(PeerScore(0.1, T0), T0 + 2 * P.half_life_ms) == pytest.approx(0.4)
    s = apply(PeerScore(0.9, T0), Evidence("liveness_dead", T0, 24)).score
    assert s == pytest.approx(0.3 + 0.6 * 0.99 ** 24)
    assert apply(PeerScore(0.2, T0), Evidence("liveness_dead", T0, 1000)).score == 0.2  # below its target already
    assert apply(PeerScore(0.8, T0), Evidence("valid_container", T0)).score == 0.8  # above its target already


def test_an_out_of_order_event_decays_nothing():
    state = PeerScore(0.9, T0 + DAY)
    late = apply(state, Evidence("task_success", T0))
    assert late.updated_ms == T0 + DAY
    assert late.score == pytest.approx(0.9 + 0.05 * 0.1)


def test_bad_evidence_is_refused_with_a_reason():
    with pytest.raises(ReputationError) as e:
        Evidence(EQUIVOCATION, T0)
    assert e.value.code == "no_evidence"
    with pytest.raises(ReputationError) as e:
        apply(initial(T0), Evidence("gossiped_a_lot", T0))
    assert e.value.code == "unknown_evidence" and "task_success" in e.value.reason
    for bad in (dict(count=0), dict(at_ms=-1), dict(count=1.5), dict(ref="")):
        with pytest.raises(ReputationError) as e:
            Evidence(**{"kind": "task_success", "at_ms": T0, **bad})
        assert e.value.code == "bad_evidence"
    with pytest.raises(ReputationError):
        Params(equivocation_cap=0.6)
    with pytest.raises(ReputationError):
        Params(rules={"x": Rule(2, 0.5, 0.1)})


def test_evidence_refs():
    assert evidence_ref("did:hmp:container:uEiAx") == "did:hmp:container:uEiAx"
    assert evidence_ref(b"abc") == "sha256:ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
    for bad in (b"", "", 7):
        with pytest.raises(ReputationError):
            evidence_ref(bad)


def test_trust_levels_and_validator_outcomes():
    assert [trust_level(x) for x in (0.0, 0.39, 0.4, 0.69, 0.7, 1.0)] == ["low", "low", "medium", "medium",
                                                                          "high", "high"]
    assert validator_outcome(2, 3) == "validator_agree" and validator_outcome(-1, 2) == "validator_disagree"
    with pytest.raises(ReputationError):
        validator_outcome(math.nan, 1)


# --- weights --------------------------------------------------------------------------


def test_validator_rating_is_the_trust_weighted_mean():
    # seed 000: rating = sum(score_i * trust_score_i) / sum(trust_score_i)
    assert validator_rating([(3, 1.0), (-1, 0.5), (0, 0.5)]) == pytest.approx(1.25)
    assert validator_rating([(2, 0.0), (0, 0.0)]) is None
    assert validator_rating([]) is None
    with pytest.raises(ReputationError):
        validator_rating([(math.inf, 1.0)])


@given(st.lists(st.tuples(st.integers(-3, 3), scores), min_size=1, max_size=10))
def test_validator_rating_lies_between_the_scores(pairs):
    rating = validator_rating(pairs)
    weighted = [s for s, t in pairs if t > 0]
    if not weighted:
        assert rating is None
    else:
        assert min(weighted) - 1e-9 <= rating <= max(weighted) + 1e-9


@given(st.dictionaries(st.text(min_size=1, max_size=5), scores, max_size=10))
def test_consensus_weights_give_nothing_below_the_floor(trust):
    w = consensus_weights(trust)
    assert w.keys() == trust.keys()
    for did, t in trust.items():
        assert w[did] == (t if t >= 0.55 else 0.0)
    assert consensus_weights({"new": P.prior}) == {"new": 0.0}  # a fresh identity carries no weight
    share = weighted_share(w, list(trust)[:1])
    assert 0.0 <= share <= 1.0 + 1e-12


def test_weighted_share():
    assert weighted_share({"a": 0.9, "b": 0.6, "c": 0.0}, ["a", "c"]) == pytest.approx(0.6)
    assert weighted_share({"a": 0.0}, ["a"]) == 0.0


@given(scores, scores)
def test_gossip_score_is_monotone_in_trust(a, b):
    a, b = sorted((a, b))
    assert gossip_app_score(a) <= gossip_app_score(b)


def test_gossip_score_anchors_and_thresholds():
    assert gossip_app_score(P.prior) == 0.0
    assert gossip_app_score(1.0) == 10.0 and gossip_app_score(0.0) == -100.0
    assert gossip_app_score(P.equivocation_cap) < GOSSIP_THRESHOLDS["graylist_threshold"]
    assert gossip_app_score(0.46) > GOSSIP_THRESHOLDS["gossip_threshold"] > gossip_app_score(0.44)
    assert gossip_app_score(math.nan) == -100.0


def test_cogsync_acceptance():
    assert accepts(None, 0.5) and not accepts(None, 0.6)
    assert accepts(0.7, 0.6) and not accepts(0.2, 0.3)


@settings(max_examples=50)
@given(times)
def test_a_fresh_peer_sits_at_the_prior_forever(t):
    assert score_at(initial(T0), t) == P.prior
