"""The reactor's simulated world: who the agents are, what reaches them, and how they answer.

Theory of operation. Every random draw comes from a ``random.Random`` seeded by the run's seed,
the agent and the stream's name, so a run is reproducible from its seed and one agent's stream
does not move when another's does. What reaches the core is what the built-in adapters would
hand it (protocols/reactor.md 3.1): ``Event``s with the adapters' types, dedupe keys, severities
and required traces, the addressee raw as the note named it (a legacy alias, sometimes an unknown
name), and noise classified in ``Event.noise`` by the adapter's own pure filter
(``reactor.noise.classify``) from the facts the adapter computes. Nothing here decides anything
the core decides: no cooldowns, no budgets, no routing.

* ``Population``: canonical ids (the coordinator is the node itself), the mentor tree, aliases.
* ``NoteStream``: notes per agent (Poisson, heterogeneous rates), questions, urgent ones, SLA
  reminders (tag ``sla``), synthetic system notes, repeats, and floods (one author, one agent,
  dozens of notes in minutes), classified by the real noise filter.
* ``TaskBook``: held tasks with ``next_check_at`` and deadlines; due -> overdue -> stale; a task
  update by the holder starts the next episode.
* ``OfferStream``: task offers to the node (the GMP adapter's offers name this node's DID: the
  coordinator here), each valid for an hour or a few (the adapter stops seeing one when it
  expires or is answered).
* ``ChatStream``: the person's chat messages to the node; each makes the cycle tick, and that
  tick answers most of them (it marks the message read: the adapter never sees it again).
* ``Heartbeats``: a heartbeat per agent every half hour, with injected silences (quiet mid-day,
  stale or dead since before the start, some coming back).
* ``Behaviour``: how long a woken agent runs and which events it leaves a trace for.

The adapters re-read unread notes and due tasks every scan; here a still-open signal is seen again
every ``resight_scans`` scans (the same key: the core must call it a duplicate).
"""

from __future__ import annotations

import heapq
import math
import random
from collections import defaultdict, deque
from dataclasses import dataclass, field

from meshnode.engines.reactor.noise import NoteFacts, classify, normalized_text
from meshnode.engines.reactor.types import Event, FinalReport, Severity, Trace, TraceCheck, TraceKind

MIN = 60_000
HOUR = 3_600_000
DAY = 24 * HOUR
T0 = 1_800_000_000_000  # the simulated day starts here (ms since the epoch)
SELF = "did:key:z6MkSimCoordinatorNode1"
K = TraceKind


def rng_for(seed: int, *parts: object) -> random.Random:
    return random.Random(":".join(str(p) for p in (seed, *parts)))


@dataclass(frozen=True)
class World:
    """The knobs of the simulated world (the reactor's own settings are ``ReactorConfig``)."""

    agents: int = 200
    hours: float = 24.0
    seed: int = 1
    notes_per_agent_hour: float = 0.3
    question_share: float = 0.3
    reply_share: float = 0.15
    urgent_share: float = 0.01         # notes with priority >= 2: P1
    sla_share: float = 0.15            # SLA-like reminders, tagged `sla`: noise (ignore_tags)
    synthetic_share: float = 0.1       # automated system notes: noise (synthetic)
    repeat_share: float = 0.05         # the same text again from one author: noise (repeat)
    alias_share: float = 0.3           # notes to an agent with a legacy alias that use the alias
    unknown_share: float = 0.005       # notes to a name nobody registered
    floods_per_day: float = 6.0
    flood_notes: int = 40
    tasks_per_agent: float = 2.0
    stale_task_share: float = 0.05     # tasks already overdue for about a day at the start
    heartbeat_minutes: int = 30
    quiet_share: float = 0.1           # agents silent 6.5-12 h mid-day
    stale_share: float = 0.04          # silent for about a day at the start; half come back
    dead_share: float = 0.03           # silent for about three days at the start, and staying so
    fail_share: float = 0.08           # agents that never leave a trace when woken
    trace_probability: float = 0.9     # per event, for the others
    report_share: float = 0.3          # runs ending with a final report naming a next check
    run_minutes: tuple[int, int] = (2, 15)
    resight_scans: int = 15
    offers_per_day: float = 24.0       # task offers to the node (GMP names its DID), each valid offer_valid_minutes
    offer_valid_minutes: tuple[int, ...] = (60, 60, 60, 120, 240)
    person_messages_per_hour: float = 2.0  # the person's chat messages to the node (its own core)
    tick_seconds: int = 30             # a chat message makes the cycle tick; its answer comes this much later
    tick_answer_share: float = 0.8     # the share of messages that tick answers
    late_answer_share: float = 0.1     # answered by a later regular tick, 3-30 min after (the others need a wake)


# --- who --------------------------------------------------------------------------------


@dataclass
class Population:
    """The coordinator (the node itself, SELF) and external agents ``agent-001``...; groups of
    ten mentees under one mentor, the mentors under the coordinator, the coordinator under the
    operator (no mentor). Every 20th agent has legacy aliases."""

    ids: list[str]
    mentors: dict[str, str]
    aliases: dict[str, list[str]]

    @classmethod
    def build(cls, n: int) -> "Population":
        ids = [SELF] + [f"agent-{i:03d}" for i in range(1, n)]
        mentors: dict[str, str] = {}
        for i in range(1, n):
            first = 1 + 11 * ((i - 1) // 11)  # every 11th agent mentors the next ten
            mentors[ids[i]] = "self" if i == first else ids[first]
        aliases = {"self": ["coordinator", "Nodus"]}
        for i in range(5, n, 20):
            aliases[ids[i]] = [f"Legacy{i}", f"old-agent-{i}"]
        return cls(ids, mentors, aliases)

    def registry_table(self) -> dict:
        """The alias file's content as a mapping (``[agents.<id>] aliases = [...]``): every agent
        of the node is registered, a few with legacy aliases."""
        table = {("self" if a == SELF else a): {"aliases": []} for a in self.ids}
        for agent, names in self.aliases.items():
            table[agent]["aliases"] = list(names)
        return {"agents": table}


# --- notes ------------------------------------------------------------------------------

_NOTE_TYPES = {  # event_type -> (severity, required traces), as the notes adapter gives them
    "note.direct": (Severity.P2, (K.MESSAGE, K.ACK, K.BLOCKER)),
    "note.question": (Severity.P2, (K.MESSAGE, K.BLOCKER)),
    "note.reply": (Severity.P3, (K.MESSAGE, K.ACK, K.BLOCKER)),
}


@dataclass(frozen=True)
class Note:
    """A note as it lands in the store: what the adapter reads to make the event and its facts."""

    at_ms: int
    note_id: str
    addressee: str  # raw: the canonical id, a legacy alias, or a name nobody registered
    author: str
    kind: str  # the adapter's event type for it
    urgent: bool = False  # priority >= 2
    tags: tuple[str, ...] = ()
    source: str = "user"
    text: str = ""


class NoteStream:
    """Every note of the day, drawn up front per agent, then classified in time order by the real
    noise filter (``reactor.noise.classify``) from the facts the notes adapter computes: tags,
    source, the same text from the author within 24 h, the author's notes to the agent in the
    hour. Flooded notes are grouped into one ``note.flood`` per (author, agent, hour), as the
    adapter does."""

    def __init__(self, world: World, pop: Population, start_ms: int, cfg):
        end = start_ms + int(world.hours * HOUR)
        notes: list[Note] = []
        for index, agent in enumerate(pop.ids):
            notes += self._agent_notes(world, pop, index, agent, start_ms, end)
        notes += self._floods(world, pop, start_ms, end)
        notes.sort(key=lambda n: (n.at_ms, n.note_id))
        self.events = self._classify(notes, cfg)
        self.events.sort(key=lambda e: (e.at_ms, e.dedupe_key))
        self._next = 0

    def _agent_notes(self, w: World, pop: Population, index: int, agent: str, start: int, end: int) -> list[Note]:
        r = rng_for(w.seed, "notes", agent)
        rate = w.notes_per_agent_hour * r.lognormvariate(0, 0.8)  # some agents are much busier
        names = [agent] + pop.aliases.get(agent if agent != SELF else "self", [])
        direct_share = max(1e-9, 1 - w.question_share - w.reply_share)
        t, k, said, out = float(start), 0, [], []
        while True:
            t += r.expovariate(rate / HOUR) if rate > 0 else math.inf
            if t >= end:
                return out
            k += 1
            note_id = f"n{index:03d}-{k}"
            author = f"peer-{r.randrange(40):02d}"
            addressee = r.choice(names[1:]) if len(names) > 1 and r.random() < w.alias_share else agent
            if r.random() < w.unknown_share:
                addressee = f"ghost-{r.randrange(3)}"
            draw = r.random()
            if draw < w.sla_share:
                out.append(Note(int(t), note_id, addressee, author, "note.direct", tags=("sla",),
                                text=f"SLA reminder {note_id}: response time at 80%"))
            elif draw < w.sla_share + w.synthetic_share:
                out.append(Note(int(t), note_id, addressee, author, "note.direct", source="system",
                                text=f"automatic status {note_id}"))
            elif said and draw < w.sla_share + w.synthetic_share + w.repeat_share:
                author, text = r.choice(said)
                out.append(Note(int(t), note_id, addressee, author, "note.direct", text=text))
            else:
                kind = r.choices(["note.question", "note.reply", "note.direct"],
                                 [w.question_share, w.reply_share, direct_share])[0]
                urgent = kind == "note.direct" and r.random() < w.urgent_share / direct_share
                text = f"{kind} {note_id} from {author}" + ("?" if kind == "note.question" else "")
                said.append((author, text))
                out.append(Note(int(t), note_id, addressee, author, kind, urgent=urgent, text=text))

    def _floods(self, w: World, pop: Population, start: int, end: int) -> list[Note]:
        """One author, one agent, ``flood_notes`` different notes in a quarter of an hour."""
        r = rng_for(w.seed, "floods")
        out = []
        for f in range(_poisson(r, w.floods_per_day * w.hours / 24)):
            agent, author = r.choice(pop.ids), f"flooder-{f}"
            t0 = r.randrange(start, end - 15 * MIN)
            out += [Note(t0 + k * 15 * MIN // w.flood_notes, f"flood{f}-{k}", agent, author, "note.direct",
                         text=f"flood {f} item {k}") for k in range(w.flood_notes)]
        return out

    @staticmethod
    def _classify(notes: list[Note], cfg) -> list[Event]:
        texts: dict[str, deque[tuple[int, str]]] = defaultdict(deque)  # author -> (at, normalized text), 24 h
        hour: dict[tuple[str, str], deque[int]] = defaultdict(deque)   # (author, addressee) -> times, 1 h
        floods: dict[tuple[str, str, int], list[Event]] = {}
        out = []
        for n in notes:
            seen, times = texts[n.author], hour[(n.author, n.addressee)]
            while seen and seen[0][0] <= n.at_ms - DAY:
                seen.popleft()
            while times and times[0] <= n.at_ms - HOUR:
                times.popleft()
            norm = normalized_text(n.text)
            facts = NoteFacts(n.note_id, n.author, False, n.source, n.tags, "", n.text, n.at_ms, False,
                              any(t == norm for _, t in seen), len(times) + 1)
            seen.append((n.at_ms, norm))
            times.append(n.at_ms)
            severity, traces = _NOTE_TYPES[n.kind]
            e = Event(n.kind, n.note_id, n.addressee, Severity.P1 if n.urgent else severity, f"note:{n.note_id}",
                      "agent", traces, n.at_ms, "notes", f"{n.kind.split('.')[1]} from {n.author}",
                      {"note_id": n.note_id, "author": n.author}, classify(facts, cfg, n.at_ms))
            out.append(e)
            if e.noise == "flood":
                floods.setdefault((n.author, n.addressee, n.at_ms // HOUR), []).append(e)
        for (author, agent, h), evs in floods.items():
            out.append(Event("note.flood", author, agent, Severity.P3, f"flood:{author}:{agent}:{h}", "agent",
                             (K.MESSAGE, K.BLOCKER), evs[0].at_ms, "notes",
                             f"{len(evs)}+ more notes from {author} within the hour (flood)",
                             {"author": author, "count": len(evs), "first": evs[0].subject}))
        return out

    def until(self, now_ms: int) -> list[Event]:
        """The notes that arrived up to ``now_ms`` and were not handed out yet."""
        start = self._next
        while self._next < len(self.events) and self.events[self._next].at_ms <= now_ms:
            self._next += 1
        return self.events[start:self._next]


# --- offers and the person's messages ----------------------------------------------------


def arrivals(r: random.Random, rate_per_ms: float, start_ms: int, end_ms: int) -> list[int]:
    """A Poisson process's arrival times in [start_ms, end_ms)."""
    out, t = [], float(start_ms)
    while rate_per_ms > 0:
        t += r.expovariate(rate_per_ms)
        if t >= end_ms:
            return out
        out.append(int(t))
    return out


class OfferStream:
    """Task offers (``task.offer``, as the GMP adapter gives them) to the node: Poisson, each with
    its expiry in ``refs["expires_ms"]``; the adapter sees an offer until it expires or is answered."""

    def __init__(self, world: World, start_ms: int):
        end = start_ms + int(world.hours * HOUR)
        out = []
        r = rng_for(world.seed, "offers")
        for k, at in enumerate(arrivals(r, world.offers_per_day / DAY, start_ms, end), 1):
            lineage = f"offer-{k}"
            expires = at + r.choice(world.offer_valid_minutes) * MIN
            out.append(Event("task.offer", lineage, SELF, Severity.P2, f"offer:{lineage}:d{k}", "agent",
                             (K.RECEIPT,), at, "gmp", f"offer of task {lineage}",
                             {"lineage": lineage, "offer": f"d{k}", "expires_ms": expires}))
        self.events = sorted(out, key=lambda e: (e.at_ms, e.dedupe_key))
        self.expires = {e.dedupe_key: int(e.refs["expires_ms"]) for e in self.events}
        self._next = 0

    def until(self, now_ms: int) -> list[Event]:
        start = self._next
        while self._next < len(self.events) and self.events[self._next].at_ms <= now_ms:
            self._next += 1
        return self.events[start:self._next]


@dataclass(frozen=True)
class Chat:
    at_ms: int
    event: Event
    answered_ms: int | None  # when the tick it caused answered it (None: it did not)


class ChatStream:
    """The person's messages to the node (its own core, SELF). Each makes the cycle tick
    (``[web] wake_on_message``); that tick answers most ``tick_seconds`` later, a later regular
    tick some others, and the rest not at all. The notes adapter gives the reactor a person's
    message only once it is older than ``person_grace_seconds`` and still unread (``grace_ms``;
    0: at once, as before)."""

    def __init__(self, world: World, start_ms: int, grace_ms: int):
        end = start_ms + int(world.hours * HOUR)
        r = rng_for(world.seed, "chat")
        out = []
        for k, at in enumerate(arrivals(r, world.person_messages_per_hour / HOUR, start_ms, end), 1):
            e = Event("note.direct", f"chat-{k}", SELF, Severity.P2, f"note:chat-{k}", "agent",
                      (K.MESSAGE, K.ACK, K.BLOCKER), at, "notes", f"message {k} from the person",
                      {"note_id": f"chat-{k}", "author": SELF, "actor": "person"})
            draw = r.random()
            if draw < world.tick_answer_share:
                answered = at + world.tick_seconds * 1000
            elif draw < world.tick_answer_share + world.late_answer_share:
                answered = at + r.randrange(3 * MIN, 30 * MIN)
            else:
                answered = None
            out.append(Chat(at, e, answered))
        self.chats = out
        self.by_key = {c.event.dedupe_key: c for c in out}
        self.grace_ms = grace_ms
        self._next = 0

    def handled(self, key: str, now_ms: int) -> bool:
        """Whether a tick answered the message ``key`` by ``now_ms``."""
        c = self.by_key.get(key)
        return c is not None and c.answered_ms is not None and c.answered_ms <= now_ms

    def until(self, now_ms: int) -> list[Event]:
        """The messages the adapter hands over by ``now_ms``: past the grace, unless answered by then."""
        out = []
        while self._next < len(self.chats) and self.chats[self._next].at_ms + self.grace_ms <= now_ms:
            c = self.chats[self._next]
            self._next += 1
            if not self.handled(c.event.dedupe_key, now_ms):  # read by then: the adapter never sees it
                out.append(c.event)
        return out


# --- tasks ------------------------------------------------------------------------------


@dataclass
class Task:
    lineage: str
    holder: str
    next_check_ms: int
    deadline_ms: int
    stage: int = 0  # 0 not due, 1 due, 2 overdue, 3 stale
    episode: int = 0


class TaskBook:
    """Tasks held by agents; each episode goes due -> overdue -> stale until its holder updates
    it (a task_update trace), which moves ``next_check_at`` and starts a new episode."""

    def __init__(self, world: World, pop: Population, start_ms: int, stale_task_hours: float):
        self.w, self.stale_ms = world, int(stale_task_hours * HOUR)
        self.tasks: dict[str, Task] = {}
        self._heap: list[tuple[int, str, int]] = []  # (when, lineage, episode)
        end = start_ms + int(world.hours * HOUR)
        for agent in pop.ids:
            r = rng_for(world.seed, "tasks", agent)
            for k in range(_poisson(r, world.tasks_per_agent)):
                lineage = f"task-{agent.rsplit('-', 1)[-1][-6:]}-{k}"
                if r.random() < world.stale_task_share:  # overdue for almost a day already
                    deadline = start_ms - self.stale_ms + r.randrange(0, max(1, end - start_ms))
                    check = deadline - r.randrange(2 * HOUR, 12 * HOUR)
                else:
                    check = r.randrange(start_ms - HOUR, end)
                    deadline = check + r.randrange(2 * HOUR, 12 * HOUR)
                self.tasks[lineage] = task = Task(lineage, agent, check, deadline)
                self._schedule(task)

    def _schedule(self, task: Task) -> None:
        when = (task.next_check_ms, task.deadline_ms, task.deadline_ms + self.stale_ms)[task.stage] \
            if task.stage < 3 else None
        if when is not None:
            heapq.heappush(self._heap, (when, task.lineage, task.episode))

    def _event(self, task: Task) -> Event:
        a, lin = task.holder, task.lineage
        if task.stage == 1:
            return Event("task.due", lin, a, Severity.P3, f"task_due:{lin}:{a}:{task.next_check_ms}", "agent",
                         (K.TASK_UPDATE, K.BLOCKER), task.next_check_ms, "gmp", f"task {lin} due", {"lineage": lin})
        if task.stage == 2:
            return Event("task.overdue", lin, a, Severity.P2, f"task_overdue:{lin}:{a}:{task.deadline_ms}", "agent",
                         (K.TASK_UPDATE, K.BLOCKER), task.deadline_ms, "gmp", f"task {lin} overdue",
                         {"lineage": lin})
        return Event("task.stale", lin, a, Severity.P2, f"task_stale:{lin}:{a}:{task.deadline_ms}", "mentor",
                     (K.TASK_UPDATE, K.BLOCKER), task.deadline_ms + self.stale_ms, "gmp", f"task {lin} stale",
                     {"lineage": lin})

    def until(self, now_ms: int) -> list[Event]:
        """Tasks whose episode moved a stage up to ``now_ms``: one event each."""
        out = []
        while self._heap and self._heap[0][0] <= now_ms:
            _, lineage, episode = heapq.heappop(self._heap)
            task = self.tasks[lineage]
            if episode != task.episode:
                continue  # updated meanwhile
            task.stage += 1
            out.append(self._event(task))
            self._schedule(task)
        return out

    def updated(self, lineage: str, now_ms: int) -> None:
        """The holder left a task update: the next check moves 4-24 h ahead, a new episode."""
        task = self.tasks.get(lineage)
        if task is None:
            return
        r = rng_for(self.w.seed, "update", lineage, task.episode)
        task.episode += 1
        task.stage = 0
        task.next_check_ms = now_ms + r.randrange(4 * HOUR, 24 * HOUR)
        task.deadline_ms = task.next_check_ms + r.randrange(2 * HOUR, 12 * HOUR)
        self._schedule(task)


def _poisson(r: random.Random, mean: float) -> int:
    limit, k, p = math.exp(-mean), 0, r.random()
    while p > limit:
        k += 1
        p *= r.random()
    return k


# --- heartbeats -------------------------------------------------------------------------


@dataclass
class Heartbeats:
    """Heartbeats per agent every ``heartbeat_minutes``, except inside its silences."""

    last_heard: dict[str, int]                      # before the start
    silences: dict[str, list[tuple[int, int]]]      # agent -> [(from, to)), to may be beyond the end
    phase: dict[str, int]
    every_ms: int
    _next: dict[str, int] = field(default_factory=dict)

    @classmethod
    def build(cls, w: World, pop: Population, start_ms: int, quiet_h: float, stale_h: float, dead_h: float):
        span = int(w.hours * HOUR)
        every = w.heartbeat_minutes * MIN
        last, silences, phase = {}, {}, {}
        for agent in pop.ids:
            r = rng_for(w.seed, "heartbeats", agent)
            phase[agent] = r.randrange(every)
            last[agent] = start_ms - every + phase[agent]
            silences[agent] = []
            draw = r.random()
            if agent == SELF:
                continue  # the coordinator is the node itself: never silent here
            if draw < w.dead_share:  # crosses the dead line during the run, stays silent
                last[agent] = start_ms - int(dead_h * HOUR) + r.randrange(span // 2 + 1)
                silences[agent].append((start_ms, start_ms + 10 * span))
            elif draw < w.dead_share + w.stale_share:  # crosses the stale line; half come back
                last[agent] = start_ms - int(stale_h * HOUR) + r.randrange(span // 2 + 1)
                crossing = last[agent] + int(stale_h * HOUR)
                back = crossing + r.randrange(HOUR, 6 * HOUR) if r.random() < 0.5 else start_ms + 10 * span
                silences[agent].append((start_ms, back))
            elif draw < w.dead_share + w.stale_share + w.quiet_share:
                begin = start_ms + r.randrange(span)
                silences[agent].append((begin, begin + int(r.uniform(quiet_h + 0.5, quiet_h * 2) * HOUR)))
        return cls(last, silences, phase, every)

    def silent(self, agent: str, now_ms: int) -> bool:
        return any(a <= now_ms < b for a, b in self.silences.get(agent, ()))

    def until(self, now_ms: int, start_ms: int) -> list[tuple[str, int]]:
        """(agent, heard at) for every heartbeat sent up to ``now_ms``."""
        out = []
        for agent, phase in self.phase.items():
            t = self._next.get(agent, start_ms + phase)
            while t <= now_ms:
                if not self.silent(agent, t):
                    out.append((agent, t))
                t += self.every_ms
            self._next[agent] = t
        return out


# --- a woken agent ----------------------------------------------------------------------


class Behaviour:
    """How a woken agent answers: a run of ``run_minutes``, then a trace for each event of the
    job with ``trace_probability`` — none at all from the unreliable share or a silent agent."""

    def __init__(self, w: World, pop: Population, heartbeats: Heartbeats):
        self.w, self.heartbeats = w, heartbeats
        r = rng_for(w.seed, "unreliable")
        others = [a for a in pop.ids if a != SELF]
        self.unreliable = set(r.sample(others, round(len(others) * w.fail_share)))

    def run(self, job_id: str, agent: str, created_ms: int) -> tuple[int, FinalReport | None]:
        """When the run ends, and its final report (some runs name a next check)."""
        r = rng_for(self.w.seed, "run", job_id)
        ended = created_ms + r.randrange(self.w.run_minutes[0] * MIN, self.w.run_minutes[1] * MIN + 1)
        report = None
        if r.random() < self.w.report_share and not self.absent(agent, created_ms):
            report = FinalReport((), (), (), False, "", False, ended + r.randrange(HOUR, 12 * HOUR))
        return ended, report

    def absent(self, agent: str, now_ms: int) -> bool:
        return agent in self.unreliable or self.heartbeats.silent(agent, now_ms)

    def traces(self, check: TraceCheck, ended_ms: int | None, now_ms: int) -> tuple[Trace, ...]:
        """The traces a check finds: for a run (``ended_ms`` known) those the agent left during
        it; for a watch after an escalation (no run), a late trace when the agent, nudged by its
        mentor, is around again (a dead peer's heartbeat, a late answer)."""
        if ended_ms is None:
            since, until, salt = check.since_ms, now_ms, "late"
        else:
            since, until, salt = check.since_ms, ended_ms, "run"
        if self.absent(check.agent, until - 1 if ended_ms is None else since):
            return ()
        r = rng_for(self.w.seed, "traces", salt, check.job_id)
        out = []
        for key, kinds, _refs, _type in check.events:
            kind = next((k for k in kinds if k not in (K.NONE, K.RESOLVED)), None)
            if kind is not None and r.random() < self.w.trace_probability:
                at = r.randrange(since, max(since + 1, until))
                out.append(Trace(key, kind, f"sim:{check.job_id}:{key}", check.agent, at))
        return tuple(out)
