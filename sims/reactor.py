"""The reactor scenario: a simulated day of a node with many agents, through the real core.

    python -m sims reactor --agents 200 --hours 24 --seed 1 --out DIR [--speed 1000]

A virtual clock calls ``meshnode.engines.reactor.core.Reactor.step`` once every ``scan_seconds`` of
simulated time, exactly as the node's driver does (the same core, never a second copy of its
rules): the scan's signals from ``sims.reactor_streams`` (notes, due tasks, the hour-scale
liveness tracker's changes), the runs that ended since, and the traces found for the checks the
core asked for. A woken agent runs for a few minutes (``RunEnded``) and leaves traces or not; the
core's trace checks, failures and escalations follow from that.

What is measured is counted here, independently of the core: wakes per agent and per hour, LLM
runs (one per job) against the naive baseline of one run per signal, escalations per level,
signal-to-wake latency, and the limits of design 6.2 (one non-P1 wake per agent and signal kind per
cooldown window, unless a signal's deadline is near; at most ``max_wakes_per_hour`` wakes in any
hour). Wakes on time and once (issue 33): offers that expired while a cooldown held them, and
redundant wakes (an LLM run carrying an event the agent's regular tick had already handled when
the run began: LLM calls spent on what was done). A limit broken, a signal that got no decision at all, an offer expired in a
cooldown or a redundant wake makes the exit status non-zero.

The driver's part is simulated as ``meshnode run`` does it (``Options.settle``): the person's chat
messages go to the reactor only once the tick they caused had ``person_grace_seconds`` to answer
them, events a tick answered are told to the core (``Settled``), and a wake re-checks its events
when its turn comes and calls no LLM when every one was handled. ``settle=False`` is the driver
of before, for the test that shows the counters count.

``--speed N`` paces the virtual clock to at most N times real time (a day at 1000x takes 86 s);
without it the day runs as fast as the machine allows. The wall time is reported either way.
"""

from __future__ import annotations

import argparse
import bisect
import dataclasses
import heapq
import json
import statistics
import time
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from pathlib import Path

from meshnode.net.liveness import LivenessTracker, Thresholds
from meshnode.engines.reactor.adapters import liveness_events
from meshnode.engines.reactor.aliases import AliasRegistry
from meshnode.engines.reactor.core import Reactor, Step
from meshnode.base.config.reactor import DEFAULTS, ReactorConfig
from meshnode.engines.reactor.types import Event, RunEnded, Settled, TracesFound
from sims.report import save_figure
from sims.reactor_streams import (
    HOUR, SELF, T0, Behaviour, ChatStream, Heartbeats, NoteStream, OfferStream, Population, TaskBook, World,
)

EXIT_LIMITS, EXIT_VANISHED, EXIT_LATE = 4, 5, 6
DEADLINE_LEAD_MS = 30 * 60_000  # the stated rule (protocols/reactor.md 6.2): a deadline wakes at most this long before


@dataclass(frozen=True)
class Options:
    world: World = field(default_factory=World)
    scan_seconds: float = 60.0
    speed: float = 0.0                       # 0: unpaced; N: at most N x real time
    reactor: dict = field(default_factory=dict)  # [reactor] settings over the defaults
    settle: bool = True                      # the driver of issue 33 (False: the one of before)


@dataclass
class Tally:
    """What the run did, recorded from each ``Step`` (the figures are computed in ``summary``)."""

    jobs: list[tuple] = field(default_factory=list)  # (created, agent, priority, signal kinds, a deadline near)
    woken_at: dict[str, int] = field(default_factory=dict)          # key -> when a job first carried it
    settled_jobs: int = 0                                           # jobs the driver found handled: no run
    redundant_wakes: int = 0                                        # runs carrying an event a tick had handled
    handled_woken: int = 0                                          # events a run carried already handled
    signals: dict[str, int] = field(default_factory=dict)           # dedupe key -> first signal ms
    signal_agent: dict[str, str] = field(default_factory=dict)      # key -> canonical addressee ("" unknown)
    noise: set[str] = field(default_factory=set)
    resighted: int = 0
    latency_ms: list[int] = field(default_factory=list)             # signal -> first job holding it
    woken_keys: set[str] = field(default_factory=set)
    decided: set[str] = field(default_factory=set)                  # keys with at least one decision
    status: dict[str, str] = field(default_factory=dict)            # key -> last status
    actions: Counter = field(default_factory=Counter)
    escalations: list[tuple[int, int, str]] = field(default_factory=list)  # (at, level, key)
    escalation_keys: set[str] = field(default_factory=set)
    outcomes: Counter = field(default_factory=Counter)              # closed job statuses
    step_ms: list[float] = field(default_factory=list)
    scans: int = 0
    sim_ms: int = 0
    wall_seconds: float = 0.0


def escalation_level(key: str) -> int:
    return 2 if key.startswith("esc:operator:") else 1


class ReactorSim:
    """One node's reactor over the simulated day; ``run`` plays it and returns the ``Tally``.
    ``reactor`` is the real core, replaceable before ``run`` (a test swaps in a misconfigured one
    to show the checker catches it)."""

    def __init__(self, options: Options, progress=None):
        self.o, w = options, options.world
        self.progress = progress
        self.pop = Population.build(w.agents)
        table = {**DEFAULTS, "scan_seconds": options.scan_seconds, **options.reactor, "mentors": self.pop.mentors}
        cfg = ReactorConfig.from_mapping(table, self_id=SELF)
        self.cfg = dataclasses.replace(cfg, local_agents=frozenset(self.pop.ids))
        self.aliases = AliasRegistry.from_mapping(self.pop.registry_table(), self_id=SELF)
        self.reactor = Reactor(self.cfg, self.aliases)
        self.start, self.end = T0, T0 + int(w.hours * HOUR)
        self.notes = NoteStream(w, self.pop, self.start, self.cfg)
        self.tasks = TaskBook(w, self.pop, self.start, self.cfg.stale_task_hours)
        self.beats = Heartbeats.build(w, self.pop, self.start, self.cfg.quiet_hours, self.cfg.stale_hours,
                                      self.cfg.dead_hours)
        self.tracker = LivenessTracker(Thresholds(int(self.cfg.quiet_hours * HOUR), int(self.cfg.stale_hours * HOUR),
                                                  int(self.cfg.dead_hours * HOUR)))
        for agent, heard in self.beats.last_heard.items():
            self.tracker.heard(agent, heard)
        self.behaviour = Behaviour(w, self.pop, self.beats)
        self.offers = OfferStream(w, self.start)
        self.chat = ChatStream(w, self.start, self.cfg.person_grace_ms if options.settle else 0)
        self.told: set[str] = set()           # chat messages the core was given and not told settled
        self.tally = Tally()
        self.open: dict[str, Event] = {}      # signals the adapters would still see (unread, task still due)
        self.task_key: dict[str, str] = {}    # lineage -> key of its open episode stage
        self.runs: list[tuple[int, str]] = []  # (ended, job id)
        self.reports: dict[str, object] = {}
        self.ended: dict[str, int] = {}
        self.found: list[TracesFound] = []
        self.settled: set[str] = set()        # jobs the re-check found handled (their end: "settled")

    # --- the scan loop ---------------------------------------------------------------

    def run(self) -> Tally:
        scan_ms = int(self.cfg.scan_seconds * 1000)
        total = max(1, (self.end - self.start) // scan_ms)  # scans at start, start + scan, ... before the end
        started = time.perf_counter()
        for k in range(total):
            now = self.start + k * scan_ms
            inputs = self._signals(now, resight=k > 0 and k % self.o.world.resight_scans == 0)
            inputs += self._settled(now)
            inputs += self.found
            self.found = []
            while self.runs and self.runs[0][0] <= now:
                ended, job_id = heapq.heappop(self.runs)
                if job_id in self.settled:
                    self.settled.discard(job_id)
                    inputs.append(RunEnded(job_id, ended, "settled"))
                    continue
                inputs.append(RunEnded(job_id, ended, "ok", self.reports.pop(job_id, None)))
            t = time.perf_counter()
            step = self.reactor.step(now, inputs)
            self.tally.step_ms.append((time.perf_counter() - t) * 1000)
            self._record(now, step)
            self._act(now, step)
            self.tally.scans += 1
            if self.progress:
                self.progress(k + 1, total, now - self.start)
            if self.o.speed > 0:
                ahead = (now - self.start) / 1000 / self.o.speed - (time.perf_counter() - started)
                if ahead > 0:
                    time.sleep(ahead)
        self.tally.sim_ms = self.end - self.start
        self.tally.wall_seconds = time.perf_counter() - started
        return self.tally

    def _signals(self, now: int, *, resight: bool) -> list:
        fresh = self.notes.until(now) + self.tasks.until(now) + self.offers.until(now) + self.chat.until(now)
        changes = [c for agent, heard in self.beats.until(now, self.start) if (c := self.tracker.heard(agent, heard))]
        changes += self.tracker.tick(now)
        fresh += liveness_events(changes, now, self.cfg, last_heard=self.tracker.last_heard_ms)
        for e in fresh:
            if e.dedupe_key in self.tally.signals:
                continue
            self.tally.signals[e.dedupe_key] = e.at_ms
            self.tally.signal_agent[e.dedupe_key] = self._canonical(e.agent)
            if e.noise:
                self.tally.noise.add(e.dedupe_key)
            elif e.dedupe_key in self.chat.by_key:
                self.told.add(e.dedupe_key)
                self.open[e.dedupe_key] = e
            elif e.event_type == "task.offer":
                self.open[e.dedupe_key] = e
            elif e.source == "notes" or e.source == "gmp":
                self.open[e.dedupe_key] = e
                if e.source == "gmp":
                    self.open.pop(self.task_key.get(e.subject, ""), None)  # the adapter sees the latest stage
                    self.task_key[e.subject] = e.dedupe_key
        inputs: list = list(fresh)
        if resight:
            for key in [k for k in self.open if self._gone(k, now)]:  # expired offers, messages answered
                del self.open[key]
            seen = {e.dedupe_key for e in fresh}
            again = [e for key, e in self.open.items() if key not in seen]
            self.tally.resighted += len(again)
            inputs += again
        return inputs

    def _gone(self, key: str, now: int) -> bool:
        """Whether the adapters no longer see ``key``: an offer expired, a message read (answered)."""
        expires = self.offers.expires.get(key)
        return (expires is not None and expires <= now) or self.chat.handled(key, now)

    def _settled(self, now: int) -> list:
        """The driver after the cycle's ticks: the messages a tick answered, told to the core."""
        if not self.o.settle:
            return []
        done = tuple(sorted(k for k in self.told if self.chat.handled(k, now)))
        self.told.difference_update(done)
        return [Settled(done, now, "tick")] if done else []

    def _run_start(self, agent: str, now: int) -> int:
        """When a wake's run gets the agent: the node's own core is busy until the tick a chat
        message started ends (the wake slot waits for it); an external agent at once."""
        if agent != SELF:
            return now
        ticks = self.o.world.tick_seconds * 1000
        busy = [c.at_ms + ticks for c in self.chat.chats if c.at_ms <= now < c.at_ms + ticks]
        return max([now, *busy])

    def _canonical(self, name: str) -> str:
        return self.aliases.resolve(name) or ""

    def _record(self, now: int, step: Step) -> None:
        t = self.tally
        for d in step.decisions:
            t.actions[d.action] += 1
            t.decided.add(d.dedupe_key)
        for e in step.accepted:  # an escalation to a local mentor is a pending note.escalation event
            if e.event_type == "note.escalation":
                self._escalated(now, escalation_level(e.dedupe_key), e.dedupe_key)
        for x in step.escalations:  # to a remote mentor or to the operator: a note the driver sends
            self._escalated(now, x.level, x.key)
        for key, (status, _job) in step.changed.event_status.items():
            t.status[key] = status
        for job in step.changed.jobs:
            if job.status in ("ok", "failed", "interrupted", "skipped"):
                t.outcomes[job.status] += 1
        for job in step.jobs:
            near = any(self._deadline_near(key, job.created_ms) for key in job.events)
            t.jobs.append((job.created_ms, job.agent, int(job.priority), tuple(job.reason), near))
            for key in job.events:
                t.woken_at.setdefault(key, job.created_ms)
                if key in t.signals and key not in t.woken_keys:
                    t.woken_keys.add(key)
                    t.latency_ms.append(job.created_ms - max(t.signals[key], self.start))  # backlog: from the start

    def _deadline_near(self, key: str, at: int) -> bool:
        """The stated rule, computed here: a cooldown holds an offer at most until its expiry less
        half its validity, at most ``DEADLINE_LEAD_MS``."""
        expires = self.offers.expires.get(key)
        if expires is None:
            return False
        given = expires - self.tally.signals.get(key, at)
        return at >= expires - min(DEADLINE_LEAD_MS, max(0, given // 2))

    def _escalated(self, now: int, level: int, key: str) -> None:
        if key not in self.tally.escalation_keys:
            self.tally.escalation_keys.add(key)
            self.tally.escalations.append((now, level, key))

    def _act(self, now: int, step: Step) -> None:
        """The driver's I/O, simulated: start each job's run, answer each trace check."""
        for job in step.jobs:
            begins = self._run_start(job.agent, now)
            handled = [k for k in job.events if self.chat.handled(k, begins)]
            if self.o.settle and handled and len(handled) == len(job.events):  # the re-check: no LLM call
                self.tally.settled_jobs += 1
                heapq.heappush(self.runs, (begins, job.job_id))
                self.settled.add(job.job_id)
                continue
            self.tally.handled_woken += len(handled)
            self.tally.redundant_wakes += bool(handled)
            ended, report = self.behaviour.run(job.job_id, job.agent, now)
            self.ended[job.job_id] = ended
            if report is not None:
                self.reports[job.job_id] = report
            heapq.heappush(self.runs, (ended, job.job_id))
        for check in step.checks:  # a wake's check, or a watch after an escalation (no run: not in ended)
            traces = self.behaviour.traces(check, self.ended.get(check.job_id), now)
            self.found.append(TracesFound(check.job_id, now, traces))
            for trace in traces:  # the agent read the note / updated the task: the adapters stop seeing it
                e = self.open.pop(trace.event_key, None)
                if e is not None and e.source == "gmp":
                    self.tasks.updated(e.subject, now)
                    self.task_key.pop(e.subject, None)


# --- figures ----------------------------------------------------------------------------


def violations(jobs: list[tuple], cooldown_ms: int, per_hour: int) -> dict:
    """Limits of design 6.2 counted from the jobs alone. A job is (created, agent, priority) or
    (created, agent, priority, signal kinds, a deadline near): a non-P1 wake breaks the cooldown
    when every kind it carries woke that agent less than the cooldown before and none of its
    signals' deadlines is near (a 3-tuple: one kind, no deadline); a wake breaks the ceiling when
    it makes more than ``per_hour`` in the hour ending with it."""
    cooldown = hourly = 0
    last: dict[tuple[str, str], int] = {}
    for job in sorted(jobs):
        created, agent, priority = job[:3]
        kinds = job[3] if len(job) > 3 else ("*",)
        near = job[4] if len(job) > 4 else False
        if priority == 1:
            continue
        if not near and kinds and all((agent, k) in last and created - last[(agent, k)] < cooldown_ms for k in kinds):
            cooldown += 1
        for k in kinds:
            last[(agent, k)] = created
    times = sorted(job[0] for job in jobs)
    lo = 0
    for hi, t in enumerate(times):
        while times[lo] <= t - HOUR:
            lo += 1
        if hi - lo + 1 > per_hour:
            hourly += 1
    return {"cooldown": cooldown, "hourly": hourly}


def late_offers(offers: dict[str, tuple[int, int]], woken_at: dict[str, int], job_times: list[int], per_hour: int,
                start_ms: int, scan_ms: int, end_ms: int) -> dict:
    """Offers (key -> (signal ms, expiry ms)) that expired before ``end_ms`` with no wake carrying
    them in time, counted from the jobs alone: ``unwoken`` all of them; ``in_cooldown`` those for
    which a scan came, after the moment no cooldown may hold them any more (their expiry less
    half their validity, at most ``DEADLINE_LEAD_MS``) and before their expiry, with room under
    the hourly ceiling: nothing but a cooldown held them then."""
    times = sorted(job_times)
    unwoken = in_cooldown = 0
    for key, (at, expires) in offers.items():
        if expires > end_ms or woken_at.get(key, expires) < expires:
            continue
        unwoken += 1
        hold = max(at, expires - min(DEADLINE_LEAD_MS, max(0, (expires - at) // 2)))
        t = start_ms + -(-(hold - start_ms) // scan_ms) * scan_ms  # the first scan at or after it
        while t < expires:
            used = bisect.bisect_left(times, t) - bisect.bisect_right(times, t - HOUR)
            if used < per_hour:
                in_cooldown += 1
                break
            t += scan_ms
    return {"unwoken": unwoken, "in_cooldown": in_cooldown}


def _pct(values: list[float], q: float) -> float:
    if not values:
        return 0.0
    s = sorted(values)
    return s[min(len(s) - 1, int(q * len(s)))]


def summary(sim: ReactorSim, tally: Tally) -> dict:
    w, cfg = sim.o.world, sim.cfg
    per_agent = Counter(job[1] for job in tally.jobs)
    wakes = [per_agent.get(a, 0) for a in sim.pop.ids]
    broken = violations(tally.jobs, int(cfg.wake_cooldown_hours * HOUR), cfg.max_wakes_per_hour)
    vanished = sorted(k for k in tally.signals if k not in tally.decided and k not in tally.status)
    # an agent with signals is served when woken, or when each of its events has a status (held, digest...)
    targets = defaultdict(list)
    for key, agent in tally.signal_agent.items():
        if agent and key not in tally.noise:
            targets[agent].append(key)
    unserved = [a for a, keys in targets.items()
                if not per_agent.get(a) and not all(k in tally.status or k in tally.woken_keys for k in keys)]
    levels = Counter(level for _, level, _ in tally.escalations)
    offers = {k: (tally.signals.get(k, at), at) for k, at in sim.offers.expires.items()}
    late = late_offers(offers, tally.woken_at, [job[0] for job in tally.jobs], cfg.max_wakes_per_hour, sim.start,
                       int(cfg.scan_seconds * 1000), sim.end)
    naive = len(tally.signals)
    lat_min = [ms / 60_000 for ms in tally.latency_ms]
    return {
        "scenario": "reactor", "seed": w.seed, "agents": w.agents, "hours": w.hours, "scans": tally.scans,
        "signals": naive, "noise": len(tally.noise), "resighted": tally.resighted,
        "unknown_addressee": tally.actions.get("unknown_agent", 0), "duplicates": tally.actions.get("duplicate", 0),
        "llm_runs": len(tally.jobs) - tally.settled_jobs, "naive_runs": naive,
        "runs_ratio": round((len(tally.jobs) - tally.settled_jobs) / max(naive, 1), 4),
        "wakes_per_agent_max": max(wakes or [0]), "wakes_per_agent_mean": round(statistics.fmean(wakes or [0]), 3),
        "wakes_per_agent_p99": _pct(wakes, 0.99), "agents_woken": sum(1 for x in wakes if x),
        "coordinator_wakes": per_agent.get(SELF, 0), "p1_wakes": sum(1 for job in tally.jobs if job[2] == 1),
        "jobs_ok": tally.outcomes.get("ok", 0), "jobs_failed": tally.outcomes.get("failed", 0),
        "escalations_level1": levels.get(1, 0), "escalations_level2": levels.get(2, 0),
        "escalations_capped": tally.actions.get("escalation_capped", 0),
        "held_cooldown": tally.actions.get("held_cooldown", 0), "held_budget": tally.actions.get("held_budget", 0),
        "routed_coordinator": tally.actions.get("routed_coordinator", 0),
        "latency_p50_min": round(_pct(lat_min, 0.5), 1), "latency_p95_min": round(_pct(lat_min, 0.95), 1),
        "signals_woken": len(tally.woken_keys),
        "events_by_status": dict(sorted(Counter(tally.status.values()).items())),
        "vanished_events": len(vanished), "unserved_agents": len(unserved),
        "limit_violations": broken["cooldown"] + broken["hourly"], "violations_cooldown": broken["cooldown"],
        "violations_hourly": broken["hourly"],
        "offers": len(sim.offers.expires), "offers_expired_unwoken": late["unwoken"],
        "offers_expired_in_cooldown": late["in_cooldown"], "person_messages": len(sim.chat.chats),
        "redundant_wakes": tally.redundant_wakes, "handled_events_woken": tally.handled_woken,
        "wakes_settled_unrun": tally.settled_jobs, "step_ms_p99": round(_pct(tally.step_ms, 0.99), 2),
        "sim_hours": round(tally.sim_ms / HOUR, 2), "wall_seconds": round(tally.wall_seconds, 2),
        "speed": round(tally.sim_ms / 1000 / max(tally.wall_seconds, 1e-9)),
    }


def exit_status(rows: dict) -> int:
    if rows["limit_violations"]:
        return EXIT_LIMITS
    if rows["vanished_events"]:
        return EXIT_VANISHED
    return EXIT_LATE if rows["offers_expired_in_cooldown"] or rows["redundant_wakes"] else 0


def plots(sim: ReactorSim, tally: Tally, out: Path) -> list[Path]:
    """Wakes per hour (with the hourly ceiling), signal-to-wake latency, escalations over time."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    out.mkdir(parents=True, exist_ok=True)
    written = []
    hours = max(1, int(-(-tally.sim_ms // HOUR)))

    def save(fig, name: str) -> None:
        written.append(save_figure(fig, out / name))

    fig, ax = plt.subplots(figsize=(8, 4))
    urgent, other = [0] * hours, [0] * hours
    for created, _, priority, *_rest in tally.jobs:
        h = min(hours - 1, (created - sim.start) // HOUR)
        (urgent if priority == 1 else other)[h] += 1
    ax.bar(range(hours), other, label="P2-P4 wakes")
    ax.bar(range(hours), urgent, bottom=other, label="P1 wakes")
    ax.axhline(sim.cfg.max_wakes_per_hour, color="red", linestyle="--", label="max_wakes_per_hour")
    top = max([sim.cfg.max_wakes_per_hour] + [u + o for u, o in zip(urgent, other)])
    ax.set(xlabel="simulated hour", ylabel="wakes (LLM runs)", title=f"Wakes per hour, {sim.o.world.agents} agents",
           ylim=(0, top * 1.35 + 1))
    ax.legend(loc="upper right", ncols=3)
    save(fig, "wakes_per_hour.png")

    fig, ax = plt.subplots(figsize=(7, 4))
    ax.hist([ms / 60_000 for ms in tally.latency_ms] or [0], bins=40)
    ax.set(xlabel="signal to wake (simulated minutes)", ylabel="signals", title="Signal-to-wake latency")
    save(fig, "latency_histogram.png")

    fig, ax = plt.subplots(figsize=(7, 4))
    for level, label in ((1, "level 1 (mentor)"), (2, "level 2 (operator)")):
        times = [(at - sim.start) / HOUR for at, lv, _ in tally.escalations if lv == level]
        ax.step([0, *times, tally.sim_ms / HOUR], [0, *range(1, len(times) + 1), len(times)], where="post", label=label)
    ax.set(xlabel="simulated hour", ylabel="escalations (cumulative)", title="Escalations over time")
    ax.legend()
    save(fig, "escalations_over_time.png")
    return written


# --- command line -----------------------------------------------------------------------


def _setting(text: str) -> tuple[str, object]:
    key, sep, value = text.partition("=")
    if not sep:
        raise argparse.ArgumentTypeError("a setting is KEY=VALUE (a [reactor] key, VALUE in JSON)")
    try:
        return key.strip(), json.loads(value)
    except json.JSONDecodeError:
        return key.strip(), value


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--agents", type=int, default=200, help="agents on the node, the coordinator included (2 to 5000)")
    p.add_argument("--hours", type=float, default=24.0, help="simulated hours")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--speed", type=float, default=0.0,
                   help="pace the virtual clock to at most this many times real time (default: unpaced)")
    p.add_argument("--scan-seconds", type=float, default=60.0, help="virtual seconds between scans")
    p.add_argument("--notes-per-hour", type=float, default=World.notes_per_agent_hour, help="mean notes per agent-hour")
    p.add_argument("--fail-share", type=float, default=World.fail_share,
                   help="share of agents that never leave a trace")
    p.add_argument("--trace-probability", type=float, default=World.trace_probability)
    p.add_argument("--set", type=_setting, action="append", default=[], metavar="KEY=VALUE",
                   help="a [reactor] setting for the run, e.g. --set max_wakes_per_hour=12 (repeatable)")
    p.add_argument("--out", type=Path, help="write summary.json and PNG plots into this folder")
    p.add_argument("--quiet", action="store_true", help="no progress bar")


def main(args: argparse.Namespace, parser: argparse.ArgumentParser) -> int:
    from sims.report import ProgressBar, table

    if not 2 <= args.agents <= 5000:
        parser.error("--agents must be between 2 and 5000")
    if not 0 < args.hours <= 24 * 14:
        parser.error("--hours must be in (0, 336]")
    world = World(agents=args.agents, hours=args.hours, seed=args.seed, notes_per_agent_hour=args.notes_per_hour,
                  fail_share=args.fail_share, trace_probability=args.trace_probability)
    try:
        options = Options(world=world, scan_seconds=args.scan_seconds, speed=args.speed, reactor=dict(args.set))
        bar = None if args.quiet else ProgressBar(unit="scans")
        sim = ReactorSim(options, progress=bar)
    except ValueError as e:
        parser.error(str(e))
    tally = sim.run()
    if bar:
        bar.close()
    rows = summary(sim, tally)
    print(table(rows))
    if args.out:
        args.out.mkdir(parents=True, exist_ok=True)
        (args.out / "summary.json").write_text(json.dumps(rows, indent=1) + "\n")
        print(f"wrote {args.out / 'summary.json'}")
        for path in plots(sim, tally, args.out):
            print(f"wrote {path}")
    print(json.dumps(rows))
    return exit_status(rows)
