"""Parsing validators' verdicts and aggregating them."""

from __future__ import annotations

from meshnode.cognition.validation import Verdict, parse


def test_verdicts_are_a_rating_and_a_short_comment():
    assert parse("+2 -- sound plan, one unchecked claim") == (2, "sound plan, one unchecked claim")
    assert parse("  -3 --   harmful\nmore text ignored") == (-3, "harmful")
    assert parse("0 -- " + "x" * 300)[1] == "x" * 100
    for bad in ("", "great answer", "+5 -- too high", "2 - one dash", "-- no rating"):
        assert parse(bad) is None


def test_commands_pass_at_plus_one_or_without_validators():
    assert Verdict(auto_pass=True, rating=None).passes
    assert Verdict(auto_pass=False, rating=1.0).passes
    assert not Verdict(auto_pass=False, rating=0.99).passes
    assert not Verdict(auto_pass=False, rating=None).passes  # validators registered, none answered
    v = Verdict(False, 0.5, [{"validator": "a", "rating": 1, "trust": 1, "comment": ""},
                             {"validator": "b", "rating": 1, "trust": 1, "comment": ""},
                             {"validator": "c", "rating": 0, "trust": 1, "comment": ""}])
    assert v.distribution == {"1": 2, "0": 1}
