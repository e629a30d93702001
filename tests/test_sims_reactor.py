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
from sims.reactor import EXIT_LATE, EXIT_LIMITS, Options, ReactorSim, exit_status, late_offers, summary, violations
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


# --- wakes on time and once (issue 33) ----------------------------------------------------


def test_a_short_day_has_no_offer_expired_in_a_cooldown_and_no_redundant_wake(short_day):
    assert short_day["offers"] > 0 and short_day["person_messages"] > 0, short_day
    assert short_day["offers_expired_in_cooldown"] == 0, short_day
    assert short_day["redundant_wakes"] == 0 and short_day["handled_events_woken"] == 0, short_day
    assert exit_status(short_day) == 0


def test_late_offers_are_counted_from_the_jobs_alone():
    scan, start = 60_000, 0
    offers = {"o1": (0, HOUR), "o2": (0, HOUR), "o3": (0, 2 * HOUR)}
    woken = {"o2": HOUR - 1}  # woken in time
    full = [HOUR // 2 - 1000 - 10 * k for k in range(6)]  # six wakes just before o1 must wake
    assert late_offers(offers, woken, [], 6, start, scan, 3 * HOUR) == {"unwoken": 2, "in_cooldown": 2}
    # the ceiling full from o1's last half hour on (and through o3's): the ceiling held them, not a cooldown
    busy = full + [HOUR + 60_000 * k for k in range(6)] + [HOUR + HOUR // 2 + 10 * k for k in range(6)]
    assert late_offers(offers, woken, busy, 6, start, scan, 3 * HOUR) == {"unwoken": 2, "in_cooldown": 0}


def test_the_day_counts_offers_a_cooldown_held_past_their_expiry():
    """The same day with a core that lets a cooldown hold a signal past its deadline (as before
    issue 33): the offers it lets expire are counted, and the exit status says so."""
    sim = ReactorSim(Options(world=World(agents=50, hours=6, seed=1, offers_per_day=48)))
    queues = sim.reactor.queues
    queues.deadline_due = lambda agent: None  # no deadline ends a cooldown's hold ...
    queues.hold_end_of = lambda key: None      # ... nor ranks or rides along
    queues.take_with_deadline = lambda agents, limit, metas: []
    rows = summary(sim, sim.run())
    assert rows["offers_expired_in_cooldown"] > 0, rows
    assert exit_status(rows) == EXIT_LATE


def test_the_day_counts_redundant_wakes_with_the_driver_of_before():
    """Without the person's grace, the settling of what a tick answered and the re-check before
    the LLM, a chat message makes a tick and a wake that runs on what the tick answered."""
    world = World(agents=3, hours=12, seed=1, person_messages_per_hour=6)  # the node's wakes not crowded out
    rows = summary(*_played(Options(world=world, settle=False)))
    assert rows["redundant_wakes"] > 0 and rows["handled_events_woken"] > 0, rows
    assert exit_status(rows) == EXIT_LATE
    fixed = summary(*_played(Options(world=world)))
    assert fixed["redundant_wakes"] == 0 and fixed["handled_events_woken"] == 0, fixed


def _played(options):
    sim = ReactorSim(options)
    return sim, sim.run()
