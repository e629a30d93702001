"""The noise filter (design 4.2): each filter, its order, and the escalation exception."""

from __future__ import annotations

from dataclasses import replace

import pytest

from meshnode.engines.reactor.noise import FILTERS, NoteFacts, classify, normalized_text
from meshnode.base.config.reactor import ReactorConfig

NOW = 1_800_000_000_000
CFG = ReactorConfig.from_mapping({"ignore_subjects": [r"^\[auto\]", "nightly build"]}, self_id="did:key:z6MkSELF1234567")
BASE = NoteFacts(note_id="1", author="did:key:z6MkPEER1234567", own=False, source="llm", tags=("question",),
                 topic="planning", text="Could you look at the deploy plan today?", at_ms=NOW - 60_000,
                 is_escalation=False, same_text_recent=False, author_hour_count=1)


def test_a_plain_note_passes():
    assert classify(BASE, CFG, NOW) == ""


@pytest.mark.parametrize("change, name", [
    ({"own": True}, "own"),
    ({"tags": ("reactor",)}, "own"),
    ({"tags": ("SLA",)}, "ignore_tags"),
    ({"topic": "[auto] report"}, "ignore_subjects"),
    ({"text": "nightly build failed\nsee log"}, "ignore_subjects"),
    ({"source": "system"}, "synthetic"),
    ({"at_ms": NOW - 15 * 86_400_000}, "archive"),
    ({"same_text_recent": True}, "repeat"),
    ({"author_hour_count": 21}, "flood"),
])
def test_each_filter(change, name):
    assert classify(replace(BASE, **change), CFG, NOW) == name


def test_escalations_from_another_reactor_are_not_noise():
    esc = replace(BASE, tags=("reactor", "escalation"), source="system", is_escalation=True)
    assert classify(esc, CFG, NOW) == ""


def test_first_filter_in_order_wins():
    facts = replace(BASE, own=True, tags=("sla",), source="system", same_text_recent=True, author_hour_count=99)
    assert classify(facts, CFG, NOW) == "own"
    assert classify(replace(facts, own=False), CFG, NOW) == "ignore_tags"
    assert FILTERS[0] == "own" and FILTERS[-1] == "flood"


def test_flood_threshold_is_exclusive():
    assert classify(replace(BASE, author_hour_count=CFG.flood_per_author_hour), CFG, NOW) == ""


def test_normalized_text():
    assert normalized_text("  Hello\n  WORLD ") == "hello world"
