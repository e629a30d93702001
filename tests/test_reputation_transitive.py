"""Transitive trust (meshnode/domain/reputation/transitive.py), checked against a brute-force
enumeration of every path, plus the bounds the spec promises."""

from __future__ import annotations

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from meshnode.domain.reputation import ReputationError, TransitiveParams, combined, reach

ME = "me"
AGENTS = ["a", "b", "c", "d", "e", "f"]
unit = st.floats(min_value=0.0, max_value=1.0)


@st.composite
def graphs(draw):
    direct = draw(st.dictionaries(st.sampled_from(AGENTS), unit, max_size=3))
    signers = st.sampled_from(AGENTS + [ME])
    statements = draw(st.dictionaries(signers, st.dictionaries(st.sampled_from(AGENTS + [ME]), unit, max_size=4),
                                      max_size=7))
    params = TransitiveParams(depth_decay=draw(unit), max_depth=draw(st.integers(1, 4)),
                              min_voucher=draw(unit))
    return direct, statements, params


def brute_force(direct, statements, params) -> dict[str, float]:
    """Every simple path me -> B1 -> ... -> C of at most max_depth hops whose vouchers are
    trusted at least min_voucher along the path; the best value per agent."""
    best: dict[str, float] = {}

    def walk(path: tuple[str, ...], value: float) -> None:
        last = path[-1]
        best[last] = max(best.get(last, -1.0), value)
        if len(path) == params.max_depth or value < params.min_voucher:
            return
        for subject, x in statements.get(last, {}).items():
            if subject == ME or subject in path or subject in direct:
                continue
            walk(path + (subject,), value * x * params.depth_decay)

    for did, value in direct.items():
        walk((did,), value)
    return best


@given(graphs())
def test_reach_is_the_best_path_within_the_depth(g):
    direct, statements, params = g
    got = combined(ME, direct, statements, params)
    want = brute_force(direct, statements, params)
    assert got.keys() == want.keys()
    for did in got:
        assert math.isclose(got[did], want[did], rel_tol=1e-9, abs_tol=1e-12), did


@given(graphs())
def test_each_value_is_the_product_along_its_path_and_respects_max_depth(g):
    direct, statements, params = g
    for did, r in reach(ME, direct, statements, params).items():
        assert 1 <= r.depth <= params.max_depth and len(r.path) == r.depth and r.path[-1] == did
        assert len(set(r.path)) == len(r.path) and ME not in r.path
        value = direct[r.path[0]]
        for signer, subject in zip(r.path, r.path[1:]):
            value *= statements[signer][subject] * params.depth_decay
        assert r.value == pytest.approx(value, abs=1e-12)
        # the product bound: never above the voucher trust, nor above any statement on the path
        assert r.value <= direct[r.path[0]] * params.depth_decay ** (r.depth - 1) + 1e-12
        for signer, subject in zip(r.path, r.path[1:]):
            assert r.value <= statements[signer][subject] + 1e-12


@given(graphs())
def test_direct_evidence_wins_and_me_is_never_rated(g):
    direct, statements, params = g
    got = combined(ME, direct, statements, params)
    assert ME not in got
    for did, value in direct.items():
        assert got[did] == value


@given(graphs(), st.randoms())
def test_deterministic_whatever_the_order_of_the_inputs(g, rnd):
    direct, statements, params = g

    def shuffled(d):
        items = list(d.items())
        rnd.shuffle(items)
        return dict(items)

    again = reach(ME, shuffled(direct), {k: shuffled(v) for k, v in shuffled(statements).items()}, params)
    assert again == reach(ME, direct, statements, params)


@given(graphs(), st.dictionaries(st.sampled_from(["s1", "s2", "s3"]),
                                 st.dictionaries(st.sampled_from(AGENTS + ["s1", "s2", "s3"]), unit), min_size=1))
def test_a_sybil_ring_nobody_trusts_adds_nothing(g, ring):
    direct, statements, params = g
    before = reach(ME, direct, statements, params)
    with_ring = {**statements, **ring}
    assert reach(ME, direct, with_ring, params) == before


def test_hmp_example_and_depth_decay():
    # HMP v4.1: transitive trust multiplies along the chain (0.9 x 0.8 = 0.72), with depth decay
    r = reach(ME, {"a": 0.9}, {"a": {"b": 0.8}, "b": {"c": 1.0}, "c": {"d": 1.0}})
    assert r["b"].value == pytest.approx(0.9 * 0.8 * 0.8) and r["b"].path == ("a", "b")
    assert r["c"].value == pytest.approx(0.9 * 0.8 * 1.0 * 0.8 ** 2) and r["c"].depth == 3
    assert "d" not in r  # beyond max_depth 3


def test_distrusted_vouchers_and_bad_values_carry_nothing():
    r = reach(ME, {"a": 0.5, "b": 0.9}, {"a": {"x": 1.0}, "b": {"y": math.nan, "z": 1.5, "b": 1.0, ME: 1.0}})
    assert set(r) == {"a", "b"}


def test_ties_go_to_fewer_hops_then_the_smaller_path():
    r = reach(ME, {"a": 1.0, "b": 1.0}, {"a": {"x": 0.5}, "b": {"x": 0.5}},
              TransitiveParams(depth_decay=1.0, min_voucher=0.0))
    assert r["x"].path == ("a", "x")
    r = reach(ME, {"a": 1.0}, {"a": {"x": 1.0, "y": 1.0}, "y": {"x": 1.0}},
              TransitiveParams(depth_decay=1.0, min_voucher=0.0))
    assert r["x"].depth == 2


def test_bad_params_are_refused():
    for bad in (dict(max_depth=0), dict(max_depth=9), dict(depth_decay=1.5), dict(min_voucher=-0.1)):
        with pytest.raises(ReputationError):
            TransitiveParams(**bad)
