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


def test_metrics_show_coverage_agreement_and_a_validator_drifting():
    import json

    from meshnode.cognition.validation import metrics

    rows = []
    for i in range(40):  # "b" agrees for 20 answers, then leans +2 above the aggregate
        lean_b = 0 if i < 20 else 2
        said = [{"validator": "a", "rating": 1, "trust": 1, "ms": 10}, {"validator": "b", "rating": 1 + lean_b,
                                                                         "trust": 1, "ms": 30}]
        rows.append((0, json.dumps(said), 1.0))
    rows.append((1, "[]", None))  # an auto_pass answer: not judged
    m = metrics(rows)
    assert m["coverage"] == round(40 / 41, 3)
    assert m["drift"] == {"a": 0.0, "b": 2.0}
    assert m["response_ms"] == {"a": 10, "b": 30} and 0 < m["agreement"] < 1
