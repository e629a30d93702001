"""Reading the anti-stagnation mini-query's answer strictly, and the growing list of emotions."""

from __future__ import annotations

import json

from hypothesis import given, settings
from hypothesis import strategies as st

from meshnode.engines.cognition.assessment import DEFAULT_EMOTIONS, grow, parse

GOOD = {"assessment": "a new angle on quorums", "novelty_score": 0.7, "new_ideas": ["weighted quorums"],
        "refined_ideas": [], "discarded_ideas": ["flooding"], "tags": ["bft"],
        "emotions": ["curiosity:4", "Wonder:2", "anger:9", "bad"]}


def test_a_well_formed_reply_is_read_and_bad_emotions_are_dropped():
    a = parse("Sure! Here it is:\n" + json.dumps(GOOD) + "\nHope this helps.")
    assert a.novelty_score == 0.7 and a.new_ideas == ("weighted quorums",) and a.tags == ("bft",)
    assert a.emotions == (("curiosity", 4), ("wonder", 2))
    assert grow(DEFAULT_EMOTIONS, a)[-1] == "wonder" and grow(DEFAULT_EMOTIONS, a).count("curiosity") == 1


def test_replies_out_of_form_are_ignored():
    for bad in ("no json here", json.dumps({**GOOD, "novelty_score": 2}), json.dumps({**GOOD, "new_ideas": "one"}),
                json.dumps({**GOOD, "tags": [1, 2]}), json.dumps({**GOOD, "novelty_score": True})):
        assert parse(bad) is None


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=500))
def test_no_reply_makes_parsing_raise(text):
    parse(text)
