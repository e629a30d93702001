"""The local novelty measure of the anti-stagnation reflex."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from meshnode.engines.cognition.novelty import estimated_similarity, jaccard, novelty, shingles, signature

WORDS = st.lists(st.sampled_from("mesh node trust vote peer agent goal task sync ledger quorum round".split()),
                 min_size=0, max_size=60).map(" ".join)


def test_repetition_is_not_novel_and_new_thoughts_are():
    old = "The mesh should replicate diary entries to friends before it gossips them."
    assert novelty(old, [old]) == 0.0
    assert novelty(old.upper() + "!!", [old]) == 0.0  # case and punctuation are not novelty
    assert novelty("Consensus needs two thirds of the weight to commit a value.", [old]) == 1.0
    partial = novelty("The mesh should replicate diary entries to strangers too.", [old])
    assert 0.3 < partial < 1.0
    assert novelty("anything", []) == 1.0


@settings(max_examples=100, deadline=None)
@given(WORDS, WORDS)
def test_similarity_is_a_symmetric_measure_in_range(a, b):
    x, y = shingles(a), shingles(b)
    assert jaccard(x, y) == jaccard(y, x)
    assert 0.0 <= jaccard(x, y) <= 1.0 and jaccard(x, x) == 1.0
    assert 0.0 <= novelty(a, [b]) <= 1.0


@settings(max_examples=40, deadline=None)
@given(st.lists(st.integers(0, 400), min_size=30, max_size=80), st.lists(st.integers(0, 400), min_size=30, max_size=80))
def test_minhash_estimates_the_exact_similarity(xs, ys):
    a = " ".join(f"w{x}" for x in xs)
    b = " ".join(f"w{y}" for y in ys[: len(ys) // 2]) + " " + " ".join(f"w{x}" for x in xs[: len(xs) // 2])
    exact = jaccard(shingles(a), shingles(b))
    assert abs(estimated_similarity(signature(a), signature(b)) - exact) < 0.3  # > 3 standard errors
