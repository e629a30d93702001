"""The reactor's simulated day (sims/reactor.py): the real core driven by a virtual clock over
seeded signal streams. Both the short day and the full 24 h, 200-agent day run here: unpaced, the
full day takes about a second (only `--speed` paces it to wall time)."""

from __future__ import annotations

import dataclasses
import json
import subprocess
import sys
from pathlib import Path

import pytest

from meshnode.engines.reactor.core import Reactor
from sims.reactor import EXIT_LIMITS, Options, ReactorSim, exit_status, summary, violations
from sims.reactor_streams import HOUR, World

ROOT = Path(__file__).resolve().parent.parent
TIMING = {"wall_seconds", "speed", "step_ms_p99"}  # the only figures that depend on the machine


def day(**world) -> dict:
    sim = ReactorSim(Options(world=World(**world)))
    return summary(sim, sim.run())


@pytest.fixture(scope="module")
def short_day() -> dict:
    return day(agents=50, hours=2, seed=1)


def test_a_short_day_keeps_every_wake_limit(short_day):
    assert short_day["llm_runs"] > 0
    assert short_day["limit_violations"] == 0, short_day
    assert short_day["wakes_per_agent_max"] >= 1


def test_the_reactor_runs_the_llm_less_than_one_run_per_signal(short_day):
    assert short_day["llm_runs"] < short_day["naive_runs"]
    assert short_day["runs_ratio"] < 1


def test_failures_reach_a_mentor(short_day):
    assert short_day["escalations_level1"] >= 1, short_day


def test_nothing_vanishes_every_addressee_is_woken_or_its_events_are_held(short_day):
    assert short_day["signals"] > short_day["noise"] > 0
    assert short_day["vanished_events"] == 0
    assert short_day["unserved_agents"] == 0


def test_the_same_seed_gives_the_same_day_and_another_seed_another(short_day):
    again = day(agents=50, hours=2, seed=1)
    other = day(agents=50, hours=2, seed=2)
    strip = lambda rows: {k: v for k, v in rows.items() if k not in TIMING}  # noqa: E731
    assert strip(again) == strip(short_day)
    assert strip(other) != strip(short_day)


def test_the_limit_counter_is_independent_of_the_core_and_does_catch_breaches():
    cooldown = 6 * HOUR
    ok = [(0, "a", 2), (cooldown, "a", 2), (HOUR, "a", 1), (10, "b", 3)]  # a P1 may come inside the window
    assert violations(ok, cooldown, 6) == {"cooldown": 0, "hourly": 0}
    assert violations([(0, "a", 2), (cooldown - 1, "a", 3)], cooldown, 6)["cooldown"] == 1
    burst = [(i * 1000, f"x{i}", 1) for i in range(7)]
    assert violations(burst, cooldown, 6)["hourly"] == 1
    spread = [(i * HOUR // 6, f"x{i}", 1) for i in range(12)]  # six an hour, never seven in one
    assert violations(spread, cooldown, 6)["hourly"] == 0


def test_the_day_catches_a_core_that_wakes_more_than_the_limits_allow():
    """The same day with a core configured without cooldown and with a loose ceiling, while the
    checker keeps the real limits: the breaches are counted and the exit status says so."""
    sim = ReactorSim(Options(world=World(agents=50, hours=2, seed=1)))
    loose = dataclasses.replace(sim.cfg, wake_cooldown_hours=0.0, max_wakes_per_hour=100, max_jobs_per_scan=50)
    sim.reactor = Reactor(loose, sim.aliases)
    rows = summary(sim, sim.run())
    assert rows["violations_cooldown"] > 0 and rows["violations_hourly"] > 0
    assert exit_status(rows) == EXIT_LIMITS


def test_the_command_line_writes_the_summary_and_plots(tmp_path):
    result = subprocess.run([sys.executable, "-m", "sims", "reactor", "--agents", "20", "--hours", "1", "--seed", "3",
                             "--out", str(tmp_path), "--quiet"], capture_output=True, text=True, timeout=120,
                            cwd=ROOT, stdin=subprocess.DEVNULL)
    assert result.returncode == 0, result.stderr[-2000:]
    last = json.loads(result.stdout.strip().splitlines()[-1])
    assert last["scenario"] == "reactor" and last["agents"] == 20
    assert json.loads((tmp_path / "summary.json").read_text()) == last
    for name in ("wakes_per_hour.png", "latency_histogram.png", "escalations_over_time.png"):
        assert (tmp_path / name).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_a_full_day_of_200_agents_keeps_the_limits():
    rows = day(agents=200, hours=24, seed=1)
    assert rows["limit_violations"] == 0, rows
    assert rows["vanished_events"] == 0 and rows["unserved_agents"] == 0
    assert rows["llm_runs"] < rows["naive_runs"]
    assert rows["escalations_level1"] >= 1
