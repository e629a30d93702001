"""Long consensus runs, out of the default suite (`make soak`): many more random schedules,
and large committees under attack, also inside a mesh of a thousand nodes."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, assume, given, settings

from sims.consensus import BEHAVIOURS, ConsensusSim, Options
from test_consensus_sim import faulty_runs
from test_consensus_sim_committee import committee_runs

pytestmark = pytest.mark.soak


@settings(max_examples=3000, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(faulty_runs())
def test_safety_over_thousands_of_faulty_schedules(options):
    result = ConsensusSim(options).run()
    assert result.safe, result.violation


@pytest.mark.parametrize("behaviour", BEHAVIOURS)
def test_a_large_committee_under_attack_stays_safe_and_decides(behaviour):
    result = ConsensusSim(Options(nodes=256, byzantine=0.3, behaviour=behaviour, sybils=20, heights=5, seed=7,
                                  loss=0.02, max_time_ms=600_000)).run()
    assert result.safe, result.violation
    assert result.decided_values == 5


@settings(max_examples=500, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(committee_runs())
def test_safety_with_a_committee_smaller_than_the_mesh_over_many_schedules(options):
    sim = ConsensusSim(options)
    assume(sim.byzantine_weight < 1 / 3)
    assert sim.run().safe


@pytest.mark.parametrize("behaviour", BEHAVIOURS)
def test_a_thousand_node_mesh_with_a_committee_of_a_hundred_under_attack(behaviour):
    result = ConsensusSim(Options(nodes=1000, committee=100, byzantine=0.3, behaviour=behaviour, sybils=20,
                                  heights=5, seed=11, loss=0.02, max_time_ms=600_000)).run()
    assert result.safe, result.violation
    assert result.decided_values == 5 and result.client_decisions == result.clients * result.decided_heights
