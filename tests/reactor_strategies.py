"""Hypothesis strategies and a scripted driver for the reactor core (tests and the simulator).

``scans()`` draws a stream of scans: each one a time step, the events seen in it, and a list of
"fates" (small ints) that decide how the jobs of the previous scan end and which traces appear.
``Driver`` plays such a stream through a ``Reactor`` the way the node's service does: jobs of one
scan end (RunEnded, LeaseRefused) at the next, checks are answered (TracesFound) at the next.
"""

from __future__ import annotations

from itertools import cycle

from hypothesis import strategies as st

from meshnode.engines.reactor.aliases import AliasRegistry
from meshnode.engines.reactor.core import Reactor
from meshnode.base.config.reactor import ReactorConfig
from meshnode.engines.reactor.types import (
    Event, FinalReport, LeaseRefused, RunEnded, Severity, Step, Trace, TraceKind, TracesFound,
)

SELF = "did:key:z6MkSELFxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"
MENTOR = "did:key:z6MkMENTxRxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"
PEER = "did:key:z6MkPEERxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"
T0 = 1_800_000_000_000
EXTERNAL = ("scout", "ava", "bob", "cid")

# raw addressees as adapters see them: canonical ids, aliases, a peer, an unknown name
ADDRESSEES = ("self", "ductor", "@Ductor", "scout", "murr", "ava", "bob", "cid", PEER, "ghost")
EVENT_TYPES = (
    ("note.direct", (TraceKind.MESSAGE, TraceKind.ACK, TraceKind.BLOCKER)),
    ("note.question", (TraceKind.MESSAGE, TraceKind.BLOCKER)),
    ("task.due", (TraceKind.TASK_UPDATE, TraceKind.BLOCKER)),
    ("task.overdue", (TraceKind.TASK_UPDATE, TraceKind.BLOCKER)),
    ("liveness.quiet", (TraceKind.NONE,)),
    ("liveness.stale", (TraceKind.HEARTBEAT, TraceKind.MESSAGE)),
    ("liveness.dead", (TraceKind.HEARTBEAT, TraceKind.ACK)),
    ("task.stale", (TraceKind.TASK_UPDATE, TraceKind.BLOCKER)),
    ("consensus.waiting", (TraceKind.VOTE,)),
    ("ext.mon.alert", (TraceKind.MESSAGE,)),
)


def small_config(**over) -> ReactorConfig:
    """Seconds-scale windows so a few dozen scans cross every limit."""
    d = {
        "wake_cooldown_hours": 0.01, "nudge_cooldown_hours": 0.02, "max_jobs_per_scan": 3,
        "max_wakes_per_hour": 6, "trace_grace_seconds": 30, "dedupe_days": 0.01, "retention_days": 1,
        "event_ttl_hours": 0.1, "escalation_repeat_hours": 0.05, "mentor_answer_hours": 0.02,
        "external": {n: {"command": ["/bin/true"]} for n in EXTERNAL},
        "mentors": {"scout": "self", "ava": MENTOR, "self": MENTOR, "bob": "scout"},
    }
    d.update(over)
    return ReactorConfig.from_mapping(d, self_id=SELF)


def registry() -> AliasRegistry:
    return AliasRegistry.from_mapping({"agents": {"self": {"aliases": ["ductor"]}, "scout": {"aliases": ["murr"]},
                                                  "ava": {}, "bob": {}, "cid": {}}}, self_id=SELF)


@st.composite
def events(draw, keys: int = 40) -> Event:
    etype, traces = draw(st.sampled_from(EVENT_TYPES))
    n = draw(st.integers(0, keys))
    return Event(
        event_type=etype, subject=f"subj-{n % 7}", agent=draw(st.sampled_from(ADDRESSEES)),
        severity=draw(st.sampled_from([Severity.P1, Severity.P2, Severity.P2, Severity.P3, Severity.P4])),
        dedupe_key=f"{etype}:{n}", suggested_route="agent", required_trace=traces,
        at_ms=T0 - draw(st.integers(0, 3_600_000)), source="test", summary=f"event {n}",
        refs={"lineage": f"L{n % 5}"}, noise=draw(st.sampled_from(["", "", "", "", "repeat"])),
    )


def scans(max_scans: int = 25, max_events: int = 10):
    return st.lists(
        st.tuples(st.integers(1_000, 150_000), st.lists(events(), max_size=max_events),
                  st.lists(st.integers(0, 99), min_size=1, max_size=6)),
        min_size=1, max_size=max_scans)


class Driver:
    """Plays scans through a Reactor like the node's service; keeps every input and step."""

    def __init__(self, reactor: Reactor, now: int = T0):
        self.r = reactor
        self.now = now
        self.queued: list = []
        self.checks: list = []
        self.log: list[tuple[int, list, Step]] = []

    def outcomes(self, fate: list[int]) -> list:
        it = cycle(fate)
        out: list = []
        for job in self.queued:
            f = next(it) % 10
            if f == 0:
                out.append(LeaseRefused(job.job_id, "other@host:1"))
            elif f == 1:
                out.append(RunEnded(job.job_id, self.now, "interrupted"))
            elif f == 2:
                out.append(RunEnded(job.job_id, self.now, "ok", mismatches=("note 9 has no reply",)))
            else:
                nxt = self.now + 3_600_000 if f == 9 else None
                rep = FinalReport((), (), (), f == 8, "waiting for the operator's key" if f == 8 else "", False, nxt)
                out.append(RunEnded(job.job_id, self.now, "ok" if f < 7 else "error", report=rep))
        for chk in self.checks:
            traces = []
            for key, kinds, _refs, _etype in chk.events:
                f = next(it) % 4
                if f == 0 and kinds:
                    traces.append(Trace(key, kinds[0], "ref", chk.agent, self.now))
                elif f == 1:
                    traces.append(Trace(key, TraceKind.RESOLVED, "ref", chk.agent, self.now))
            out.append(TracesFound(chk.job_id, self.now, tuple(traces)))
        return out

    def scan(self, dt: int, evs: list[Event], fate: list[int]) -> Step:
        self.now += dt
        inputs = list(evs) + self.outcomes(fate)
        step = self.r.step(self.now, inputs)
        self.queued, self.checks = step.jobs, step.checks
        self.log.append((self.now, inputs, step))
        return step
