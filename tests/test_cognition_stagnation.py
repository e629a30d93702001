"""Anti-stagnation plans: diagnosis by the seed's rules, cheap tuning first, rated by effect."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from meshnode.engines.cognition import stagnation as s


def test_the_seed_s_diagnoses():
    assert s.diagnose(1, new_inputs=0, context_changed=False) == s.EXTERNAL
    assert s.diagnose(1, new_inputs=3, context_changed=False) == s.CONTEXT
    assert s.diagnose(2, new_inputs=3, context_changed=True) == s.INTERNAL
    assert s.diagnose(s.OVERHEATED, new_inputs=3, context_changed=True) == s.PAUSE


@given(st.integers(1, 50), st.integers(0, 10), st.booleans())
def test_tuning_rises_with_the_streak_within_bounds(streak, inputs, changed):
    p, q = s.plan(streak, inputs, changed), s.plan(streak + 1, inputs, changed)
    assert s.DEFAULT_TEMPERATURE < p.temperature <= q.temperature <= 1.3
    assert 0 < p.presence_penalty <= q.presence_penalty <= 1.0
    assert p.notice and (p.pause_factor > 1) == (p.diagnosis == s.PAUSE)


def test_a_strategy_is_rated_by_the_novelty_it_brought():
    assert s.effect(0.8) == 1 and s.effect(0.1) == -1
