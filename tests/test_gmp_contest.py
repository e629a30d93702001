"""The pure rules of delegation that runs by itself (meshnode.domain.gmp.contest; gmp.md 6.3 and 8)."""

from __future__ import annotations

import hashlib

import pytest

from meshnode.domain.gmp.contest import (BadValue, Tallied, best_nomination, delegation_value, parse_delegation_value,
                                         steward_acts_at, stewards)


def test_the_best_approved_nomination_wins_ties_to_the_earlier_then_the_smaller_did():
    assert best_nomination([]) is None
    assert best_nomination([Tallied("did:n:a", 1, "disputed", 1.0), Tallied("did:n:b", 1, "pending", 1.0)]) is None
    low, high = Tallied("did:n:a", 1, "approved", 0.5), Tallied("did:n:b", 2, "approved", 0.9)
    rejected = Tallied("did:n:c", 0, "rejected", 1.0)
    assert best_nomination([low, rejected, high]) == high  # the score first, whatever the order
    early, late = Tallied("did:n:z", 1, "approved", 0.9), Tallied("did:n:a", 2, "approved", 0.9)
    assert best_nomination([late, early]) == early
    small, big = Tallied("did:n:a", 1, "approved", 0.9), Tallied("did:n:b", 1, "approved", 0.9)
    assert best_nomination([big, small]) == small


def test_a_delegation_value_is_one_canonical_text():
    value = delegation_value("did:t", "did:v", "did:n")
    assert value == b'{"kind":"gmp_delegation","nomination":"did:n","task":"did:t","version":"did:v"}'
    assert parse_delegation_value(value) == {"task": "did:t", "version": "did:v", "nomination": "did:n"}
    assert parse_delegation_value(b"a committee value") is None
    for bad in (b'{"kind":"gmp_delegation", "nomination":"did:n","task":"did:t","version":"did:v"}',
                b'{"kind":"gmp_delegation","nomination":"did:n","task":"did:t"}',
                b'{"kind":"gmp_delegation","nomination":"x","task":"did:t","version":"did:v"}',
                b'{"kind":"gmp_delegation"'):
        with pytest.raises(BadValue):
            parse_delegation_value(bad)


def test_stewards_are_ranked_by_hash_without_the_holders_and_the_creator():
    people = ["did:creator", "did:holder", "did:p1", "did:p2", "did:p3"]
    order = stewards("did:task", "did:v", people, ["did:holder"], "did:creator")
    assert sorted(order) == ["did:p1", "did:p2", "did:p3"]
    assert order == sorted(order, key=lambda p: hashlib.sha256(("did:task" + "did:v" + p).encode()).digest())
    assert [steward_acts_at(1_000_000, 600, k) for k in range(3)] == [1_150_000, 1_300_000, 1_450_000]
