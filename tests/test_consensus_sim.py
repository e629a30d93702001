"""The BFT core at scale, in sims/: safety under any schedule and faults while the Byzantine
weight is below a third, liveness once the network behaves, and a checker that does catch
split decisions when the bound is broken."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from sims.consensus import BEHAVIOURS, ConsensusSim, Options

ROOT = Path(__file__).resolve().parent.parent


@st.composite
def faulty_runs(draw):
    nodes = draw(st.integers(4, 10))
    byzantine = draw(st.integers(0, (nodes - 1) // 3))  # strictly below a third of the weight
    partition = None
    if draw(st.booleans()):
        start = draw(st.integers(0, 3000))
        partition = (start, start + draw(st.integers(100, 8000)))
    return Options(nodes=nodes, byzantine=byzantine / nodes, behaviour=draw(st.sampled_from(BEHAVIOURS)),
                   sybils=draw(st.integers(0, 3)), heights=draw(st.integers(3, 8)), seed=draw(st.integers(0, 2**32)),
                   latency_ms=draw(st.sampled_from([5.0, 50.0, 200.0])), jitter=draw(st.sampled_from([0.1, 0.5, 1.5])),
                   loss=draw(st.sampled_from([0.0, 0.05, 0.3])), duplication=draw(st.sampled_from([0.0, 0.2])),
                   partition=partition, max_time_ms=120_000,
                   submit_every_ms=draw(st.sampled_from([0, 20, 100])))  # 0, 20: several values a block


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(faulty_runs())
def test_no_two_honest_nodes_ever_commit_different_values(options):
    result = ConsensusSim(options).run()
    assert result.safe, result.violation


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.integers(4, 13), st.sampled_from(BEHAVIOURS), st.integers(0, 2**32))
@example(nodes=5, behaviour="equivocate", seed=2966)  # one validator misses the last block: its resends fetch the commit
def test_with_a_well_behaved_network_every_decision_is_reached(nodes, behaviour, seed):
    byzantine = (nodes - 1) // 3
    result = ConsensusSim(Options(nodes=nodes, byzantine=byzantine / nodes, behaviour=behaviour, heights=4,
                                  seed=seed, max_time_ms=120_000)).run()
    assert result.safe and result.decided_values == 4, (result.decided_values, result.violation)
    if behaviour == "equivocate" and byzantine:
        assert result.evidence >= 1  # honest nodes exposed equivocators with signed evidence


def test_the_checker_catches_split_decisions_when_half_the_weight_equivocates():
    """Not a property of the protocol (the bound is broken on purpose): proof the check can fail."""
    violations = [ConsensusSim(Options(nodes=4, byzantine=0.5, heights=3, seed=seed, relay=0,
                                       max_time_ms=60_000)).run() for seed in range(30)]
    assert any(not r.safe for r in violations)


def test_a_lone_validator_cut_off_decides_nothing_while_each_half_of_a_split_decides_provisionally():
    """Emergency mode (protocols/consensus.md 6, issue 35 defect 10): one honest validator of four cut
    off for 45 s (beyond ``emergency_after_ms``) records no emergency decision, only that its side
    has no quorum, while the other three decide; in a 2/2 split each half records a provisional one."""
    for seed in (1, 2, 3):
        alone = ConsensusSim(Options(nodes=4, heights=3, seed=seed, isolate=(150, 45_000), max_time_ms=90_000)).run()
        assert alone.safe and alone.decided_values == 3, (seed, alone.decided_values)
        assert alone.emergencies == 0 and alone.no_quorum == 1, (seed, alone.emergencies, alone.no_quorum)
    split = ConsensusSim(Options(nodes=4, heights=3, seed=1, partition=(150, 45_000), max_time_ms=90_000)).run()
    assert split.safe and split.emergencies == 4 and split.no_quorum == 0


def test_a_run_is_reproducible_from_its_seed():
    def run():
        r = ConsensusSim(Options(nodes=7, byzantine=2 / 7, loss=0.1, heights=3, seed=42)).run()
        return r.latencies_ms, r.messages_per_height, r.sent, r.steps

    assert run() == run()


def test_the_command_line_runs_reports_and_plots(tmp_path):
    out = tmp_path / "plots"
    result = subprocess.run([sys.executable, "-m", "sims", "consensus", "--nodes", "8", "--byzantine", "0.25",
                             "--heights", "3", "--seed", "1", "--out", str(out)],
                            cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr
    summary = json.loads(result.stdout.strip().splitlines()[-1])
    assert summary["safe"] is True and summary["values_decided"] == 3 and summary["nodes"] == 8
    assert "decisions" in result.stderr  # the progress report
    for name in ("decision_latency.png", "messages_per_decision.png", "trust_over_time.png"):
        assert (out / name).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
