"""The reactor's values: events in, decisions, jobs, checks and escalations out (protocols/reactor.md 2.1).

Everything here is plain data. Frozen dataclasses are the facts the core is told or decides;
``WakeJob`` is mutable because its status moves (queued -> checking -> ok|failed). Each row-like
value has a JSON form (``*_to_dict`` / ``*_from_dict``) so the store and the simulator can keep it
without knowing the classes; ``ReactorState`` has one too (``to_dict`` / ``from_dict``), which the
property tests use to rebuild a core the way a restart does.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field
from typing import Any, Mapping, Union


class Severity(enum.IntEnum):
    """Lower is more urgent. P1 bypasses the wake cooldown and the per-scan budget, never the hourly ceiling."""

    P1 = 1
    P2 = 2
    P3 = 3
    P4 = 4


class TraceKind(str, enum.Enum):
    """What an agent must leave for an event to count as handled (design 10.1)."""

    ACK = "ack"
    TASK_UPDATE = "task_update"
    MESSAGE = "message"
    RECEIPT = "receipt"
    HEARTBEAT = "heartbeat"
    BLOCKER = "blocker"
    DECISION = "decision"
    VOTE = "vote"
    RESOLVED = "resolved"  # the subject resolved by itself: satisfies any required trace
    NONE = "none"  # informational: no trace expected, never fails


ANY_TRACE = tuple(k for k in TraceKind if k not in (TraceKind.NONE, TraceKind.RESOLVED))


@dataclass(frozen=True, slots=True)
class Event:
    """One typed signal. ``agent`` is the raw addressee from the adapter; the core stores the
    canonical id (or the raw one when unknown)."""

    event_type: str
    subject: str
    agent: str
    severity: Severity
    dedupe_key: str
    suggested_route: str  # agent | mentor | operator | coordinator
    required_trace: tuple[TraceKind, ...]
    at_ms: int
    source: str
    summary: str
    refs: Mapping[str, str | int] = field(default_factory=dict)
    noise: str = ""  # the noise filter's name when an adapter classified it as noise


@dataclass(frozen=True, slots=True)
class Rule:
    name: str
    event_types: frozenset[str]
    route: str  # agent | mentor | operator | coordinator | info
    nudge: bool  # counts against the task+owner nudge cooldown
    wakes: bool  # False: digest only


@dataclass(slots=True)
class WakeJob:
    """A bounded run of one agent over a digest of events, or (``kind == "watch"``) a follow-up
    check after an escalation that runs nobody."""

    job_id: str
    agent: str
    reason: tuple[str, ...]
    priority: Severity
    events: tuple[str, ...]
    created_ms: int
    max_runtime_s: int
    required_trace: tuple[TraceKind, ...]
    status: str  # queued|leased|running|checking|ok|failed|interrupted|skipped
    context: dict
    dedupe_key: str
    ended_ms: int | None = None
    exit: str | None = None
    report: dict | None = None
    missing: tuple[str, ...] = ()
    check_at_ms: int | None = None  # when the trace check is due (status checking)
    kind: str = "wake"  # wake | watch


OPEN_STATUSES = frozenset({"queued", "leased", "running", "checking"})


@dataclass(frozen=True, slots=True)
class Trace:
    event_key: str  # which event (dedupe key) this trace satisfies
    kind: TraceKind
    ref: str
    by: str
    at_ms: int


@dataclass(frozen=True, slots=True)
class TraceCheck:
    job_id: str
    agent: str
    since_ms: int
    events: tuple[tuple[str, tuple[TraceKind, ...], Mapping[str, str | int], str], ...]


@dataclass(frozen=True, slots=True)
class FinalReport:
    processed_messages: tuple[str, ...]
    task_updates: tuple[str, ...]
    outgoing_messages: tuple[str, ...]
    blocked: bool
    blocked_reason: str
    needs_human: bool
    next_check_at_ms: int | None


@dataclass(frozen=True, slots=True)
class RunEnded:
    job_id: str
    at_ms: int
    exit: str  # ok|timeout|error|budget|interrupted|settled (every event handled before the run: no LLM call)
    report: FinalReport | None = None
    mismatches: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class TracesFound:
    job_id: str
    at_ms: int
    traces: tuple[Trace, ...]


@dataclass(frozen=True, slots=True)
class Settled:
    """Events handled outside a wake (``by``: e.g. the agent's regular tick answered the message):
    a pending one is done, and a job not started yet no longer carries it (design 6.3)."""

    keys: tuple[str, ...]
    at_ms: int
    by: str = "tick"


@dataclass(frozen=True, slots=True)
class AgentsOff:
    """The local agents that cannot think now (this node's core with no LLM configured), as the
    driver found them before this step: a signal that would wake one goes to the person instead,
    one line in the inbox (``agent_off.py``). Given each step; an empty set: every agent thinks."""

    agents: frozenset[str]
    why: str = "no LLM is configured"


@dataclass(frozen=True, slots=True)
class LeaseRefused:
    job_id: str
    holder: str


@dataclass(frozen=True, slots=True)
class Escalation:
    key: str  # esc:mentor:<agent>:<event key> | esc:operator:<agent>:<event key> (+ ":r<n>")
    agent: str
    to_id: str  # mentor canonical id or "operator"
    level: int  # 1 mentor, 2 operator
    event_key: str
    event_type: str
    subject: str
    text: str  # <= 1000 chars
    job_id: str | None
    at_ms: int


DECISION_ACTIONS = frozenset({
    "accepted", "duplicate", "noise", "unknown_agent", "woken", "coalesced", "held_cooldown",
    "held_budget", "routed_coordinator", "digest_only", "trace_ok", "trace_missing", "escalated",
    "escalation_capped", "expired", "report_mismatch", "interrupted", "skipped", "settled",
    "to_person", "agent_off",  # the agent cannot think: a line for the person, or (their own signal) nothing
})


@dataclass(frozen=True, slots=True)
class Decision:
    at_ms: int
    dedupe_key: str  # the event (or job/escalation) it is about
    action: str  # one of DECISION_ACTIONS
    rule: str | None
    why: str
    job_id: str | None = None


Input = Union[Event, RunEnded, TracesFound, LeaseRefused, Settled, AgentsOff]

# held: waiting, held back by a wake cooldown or budget; dropped: taken out by its nudge cooldown
# (design 6.2 item 2), never pending again
EVENT_STATUSES = frozenset({"pending", "job", "held", "dropped", "digest", "noise", "unknown", "expired", "done",
                            "failed"})


@dataclass
class StateDelta:
    """Exactly the rows a step changed (the store writes them in one transaction)."""

    event_status: dict[str, tuple[str, str | None]] = field(default_factory=dict)
    seen_again: list[str] = field(default_factory=list)
    jobs: list[WakeJob] = field(default_factory=list)
    cooldowns: dict[str, tuple[int, int]] = field(default_factory=dict)  # until_ms 0 = delete
    failures: dict[tuple[str, str], tuple[int, int, str | None]] = field(default_factory=dict)  # count 0 = delete


@dataclass
class Step:
    decisions: list[Decision] = field(default_factory=list)
    accepted: list[Event] = field(default_factory=list)
    jobs: list[WakeJob] = field(default_factory=list)
    checks: list[TraceCheck] = field(default_factory=list)
    escalations: list[Escalation] = field(default_factory=list)
    for_person: list[Event] = field(default_factory=list)  # one inbox line each (the agent cannot think)
    changed: StateDelta = field(default_factory=StateDelta)

    def escalation_batches(self) -> list[list[Escalation]]:
        """The step's escalations grouped by (to_id, level): see ``group_escalations``."""
        return group_escalations(self.escalations)


def group_escalations(escalations) -> list[list[Escalation]]:
    """Escalations grouped by (to_id, level), so a driver can send ONE note per recipient and
    level while each escalation keeps its own dedupe key (its row recorded one by one, the note
    carrying one ``dedupe:`` line each; the receiving notes adapter makes one event per line).
    Groups in the order of their first escalation; inside a group, the given order. Works on a
    step's ``escalations`` or on Escalations rebuilt from ``persist.unsent_escalations`` rows."""
    groups: dict[tuple[str, int], list[Escalation]] = {}
    for x in escalations:
        groups.setdefault((x.to_id, x.level), []).append(x)
    return list(groups.values())


@dataclass
class ReactorState:
    """Everything the core needs; rebuilt from rows by persist.load_state, or from ``to_dict``."""

    seen: dict[str, int] = field(default_factory=dict)  # dedupe_key -> last seen ms (dedupe window start)
    pending: dict[str, list[Event]] = field(default_factory=dict)
    cooldowns: dict[str, tuple[int, int]] = field(default_factory=dict)
    jobs: dict[str, WakeJob] = field(default_factory=dict)
    failures: dict[tuple[str, str], tuple[int, int, str | None]] = field(default_factory=dict)
    escalated: set[str] = field(default_factory=set)
    wakes: list[tuple[int, str]] = field(default_factory=list)
    events: dict[str, Event] = field(default_factory=dict)
    next_checks: dict[str, int] = field(default_factory=dict)

    def to_dict(self) -> dict:
        return {
            "seen": dict(self.seen),
            "pending": {a: [event_to_dict(e) for e in evs] for a, evs in self.pending.items()},
            "cooldowns": {k: list(v) for k, v in self.cooldowns.items()},
            "jobs": {j: job_to_dict(job) for j, job in self.jobs.items()},
            "failures": [[a, k, c, lvl, last] for (a, k), (c, lvl, last) in self.failures.items()],
            "escalated": sorted(self.escalated),
            "wakes": [list(w) for w in self.wakes],
            "events": {k: event_to_dict(e) for k, e in self.events.items()},
            "next_checks": dict(self.next_checks),
        }

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> "ReactorState":
        return cls(
            seen={str(k): int(v) for k, v in d.get("seen", {}).items()},
            pending={a: [event_from_dict(e) for e in evs] for a, evs in d.get("pending", {}).items()},
            cooldowns={k: (int(v[0]), int(v[1])) for k, v in d.get("cooldowns", {}).items()},
            jobs={j: job_from_dict(job) for j, job in d.get("jobs", {}).items()},
            failures={(a, k): (int(c), int(lvl), last) for a, k, c, lvl, last in d.get("failures", [])},
            escalated=set(d.get("escalated", [])),
            wakes=[(int(t), str(a)) for t, a in d.get("wakes", [])],
            events={k: event_from_dict(e) for k, e in d.get("events", {}).items()},
            next_checks={a: int(t) for a, t in d.get("next_checks", {}).items()},
        )


# ---- JSON rows -------------------------------------------------------------------------------

def event_to_dict(e: Event) -> dict:
    return {
        "event_type": e.event_type, "subject": e.subject, "agent": e.agent, "severity": int(e.severity),
        "dedupe_key": e.dedupe_key, "suggested_route": e.suggested_route,
        "required_trace": [k.value for k in e.required_trace], "at_ms": e.at_ms, "source": e.source,
        "summary": e.summary, "refs": dict(e.refs), "noise": e.noise,
    }


def event_from_dict(d: Mapping[str, Any]) -> Event:
    return Event(
        event_type=str(d["event_type"]), subject=str(d["subject"]), agent=str(d["agent"]),
        severity=Severity(int(d["severity"])), dedupe_key=str(d["dedupe_key"]),
        suggested_route=str(d.get("suggested_route", "agent")),
        required_trace=tuple(TraceKind(k) for k in d.get("required_trace", ())),
        at_ms=int(d["at_ms"]), source=str(d.get("source", "")), summary=str(d.get("summary", "")),
        refs=dict(d.get("refs") or {}), noise=str(d.get("noise", "")),
    )


def job_to_dict(j: WakeJob) -> dict:
    return {
        "job_id": j.job_id, "agent": j.agent, "reason": list(j.reason), "priority": int(j.priority),
        "events": list(j.events), "created_ms": j.created_ms, "max_runtime_s": j.max_runtime_s,
        "required_trace": [k.value for k in j.required_trace], "status": j.status, "context": j.context,
        "dedupe_key": j.dedupe_key, "ended_ms": j.ended_ms, "exit": j.exit, "report": j.report,
        "missing": list(j.missing), "check_at_ms": j.check_at_ms, "kind": j.kind,
    }


def job_from_dict(d: Mapping[str, Any]) -> WakeJob:
    return WakeJob(
        job_id=str(d["job_id"]), agent=str(d["agent"]), reason=tuple(d.get("reason", ())),
        priority=Severity(int(d["priority"])), events=tuple(d.get("events", ())),
        created_ms=int(d["created_ms"]), max_runtime_s=int(d.get("max_runtime_s", 600)),
        required_trace=tuple(TraceKind(k) for k in d.get("required_trace", ())),
        status=str(d["status"]), context=dict(d.get("context") or {}), dedupe_key=str(d.get("dedupe_key", "")),
        ended_ms=d.get("ended_ms"), exit=d.get("exit"), report=d.get("report"),
        missing=tuple(d.get("missing") or ()), check_at_ms=d.get("check_at_ms"),
        kind=str(d.get("kind") or ("watch" if str(d["job_id"]).startswith("watch-") else "wake")),
    )


def report_to_dict(r: FinalReport) -> dict:
    return {
        "processed_messages": list(r.processed_messages), "task_updates": list(r.task_updates),
        "outgoing_messages": list(r.outgoing_messages), "blocked": r.blocked,
        "blocked_reason": r.blocked_reason, "needs_human": r.needs_human,
        "next_check_at_ms": r.next_check_at_ms,
    }
