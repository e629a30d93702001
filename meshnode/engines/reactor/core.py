"""The reactor core: events and run outcomes in; decisions, jobs, checks and escalations out.

Theory of operation (protocols/reactor.md 2, 6, 7.1, 10). Sans-IO: ``step(now_ms, inputs)`` never
reads a clock, a file or the store; the driver persists ``Step.changed`` and does the I/O asked for.

- Ingest, per event, O(1): dedupe (a key seen within ``dedupe_days`` is a ``duplicate``), then the
  noise mark, then alias resolution (unknown addressees are kept, never routed), then the rule:
  digest-only, escalate at once (routed to the mentor), a note to the operator, or pending for the
  agent the rule targets (only agents local to this node can be woken; queues in ``pending.py``).
  An agent the driver says cannot think (``AgentsOff``: no LLM configured) is never woken: a
  signal for it becomes one line for the person, or nothing (``agent_off.py``).
- Plan, per scan, over the agents with wakeable pending events: wake cooldown (P1 bypasses), nudge
  cooldown (drops the event), coalescing into one job per agent (``digest_items`` most urgent
  events; the rest stay pending), the per-scan budget (more agents than ``max_jobs_per_scan`` ->
  one coordinator job; P1 jobs outside the count), and the node's hourly ceiling (P1 included).
- Expire pending events older than ``event_ttl_hours``; schedule ``self.check`` events from final
  reports; emit a TraceCheck for each job whose grace has passed. Run outcomes and traces move a
  job to ok/failed and feed the escalation ladder (``ladder.py``).

The ``Reactor`` composes three parts, each given what it needs at construction: a ``StepRecord``
(the step being written and the cooldown table, ``step_record.py``), the ``PendingQueues``
(``pending.py``) and ``AfterRun`` (the open jobs and the ladder, ``ladder.py``). This file keeps
dedupe, routing, the wake plan and the hourly window. Every accepted event ends a step with a
decision naming what happened to it; nothing vanishes.
"""

from __future__ import annotations

import heapq
import itertools
from dataclasses import replace
from typing import Iterable

from meshnode.engines.reactor import agent_off, wake_context
from meshnode.engines.reactor.aliases import AliasRegistry
from meshnode.engines.reactor.ladder import AfterRun
from meshnode.engines.reactor.limits import (
    COOLDOWN_PREFIXES, UNCOOLED, HourWindow, cooldown_parts, iso, legacy_wake_key, message_allowed, rule_for, short,
    wake_key,
)
from meshnode.engines.reactor.pending import Meta, PendingQueues, urgency
from meshnode.engines.reactor.step_record import StepRecord
from meshnode.base.config.reactor import ReactorConfig
from meshnode.engines.reactor.types import (
    AgentsOff, Decision, Event, Input, LeaseRefused, ReactorState, RunEnded, Settled, Severity, StateDelta, Step, TraceKind,
    TracesFound, WakeJob,
)

__all__ = ["Reactor", "Step", "StateDelta", "ReactorState"]


class Reactor:
    def __init__(self, cfg: ReactorConfig, aliases: AliasRegistry, state: ReactorState | None = None) -> None:
        self.cfg = cfg
        self.aliases = aliases
        st = state or ReactorState()
        self._seen: dict[str, int] = dict(st.seen)  # dedupe key -> last seen
        self._seen_heap = [(ms + cfg.dedupe_ms, k) for k, ms in self._seen.items()]
        heapq.heapify(self._seen_heap)
        self._hour = HourWindow(st.wakes)
        self._between: dict[str, tuple[int, int]] = {}  # cooldowns changed by may_send between steps
        self._ids = itertools.count(1)  # job ids (wake and watch) made since this core was built
        self.record = StepRecord(dict(st.cooldowns))
        self._off: frozenset[str] = frozenset()  # local agents that cannot think (AgentsOff): never woken
        self._off_why = ""
        # per-agent wake rows of before (wake:<agent>): honoured for every kind until they end
        self._legacy = any(k.startswith("wake:") and cooldown_parts(k)["kind"] == "*" for k in st.cooldowns)
        self.queues = PendingQueues(cfg, self.record)
        self.after_run = AfterRun(cfg, self.record, st, seen=self._seen, ids=self._ids, resolve=self._resolve,
                                  pend=self._pend, ingest=self._ingest_canonical)
        for evs in st.pending.values():
            for e in evs:
                if not self.queues.holds(e.dedupe_key):
                    self._pend(e, self._seen.get(e.dedupe_key, e.at_ms))

    # ---- public ------------------------------------------------------------------------------
    def set_aliases(self, aliases: AliasRegistry) -> None:
        self.aliases = aliases

    def may_send(self, src: str, dst: str, thread: str, now_ms: int) -> bool:
        """6.2 item 6: at most ``thread_messages_per_hour`` per source+target+thread; a message
        without a recipient (broadcast) is refused. The window is persisted with the next step."""
        if not dst:
            return False
        cooldowns = self.record.cooldowns
        ok, value = message_allowed(cooldowns, src, dst, thread, now_ms, self.cfg.thread_messages_per_hour)
        if value is not None:
            key = f"msg:{src}:{dst}:{thread}"
            cooldowns[key] = value
            self._between[key] = value
        return ok

    def cooldowns(self, now_ms: int) -> dict[str, tuple[int, int]]:
        """The cooldowns in force at ``now_ms`` (wake, nudge and message rows), as the core holds them."""
        return {k: v for k, v in self.record.cooldowns.items() if k.startswith(COOLDOWN_PREFIXES) and v[0] > now_ms}

    def lift(self, keys: Iterable[str]) -> list[str]:
        """Lift cooldowns by hand (the person's ``reactor cooldown clear``): the rows named, each a
        wake, nudge or message row (ValueError for another); persisted with the next step. The keys
        lifted (those the core held)."""
        keys = list(keys)
        for key in keys:
            cooldown_parts(key)  # ValueError: not a cooldown
        lifted = []
        for key in keys:
            if self.record.cooldowns.pop(key, None) is not None:
                lifted.append(key)
            self._between[key] = (0, 0)
        return lifted

    def open_jobs(self) -> list[WakeJob]:
        """The open jobs (queued|leased|running|checking), without copying the whole state."""
        return list(self.after_run.jobs.values())

    def pending_of(self, agent: str, limit: int) -> list[Event]:
        """Up to ``limit`` of the events pending for ``agent`` (and those of its open jobs not started
        yet): what a tick may have handled meanwhile."""
        queued = [e for j in self.after_run.jobs.values() if j.agent == agent and j.status in ("queued", "leased")
                  for k in j.events if (e := self.after_run.events.get(k)) is not None]
        return (queued + self.queues.of(agent, limit))[:limit]

    def event(self, key: str) -> Event | None:
        """An event of an open job (or a pending one) by dedupe key; O(1)."""
        e = self.after_run.events.get(key)
        return self.queues.get(key) if e is None else e

    def state(self) -> ReactorState:
        """A copy of everything the core holds (O(state): for persistence tests and dry runs; use
        ``open_jobs``/``event`` each scan)."""
        after = self.after_run
        return ReactorState(
            seen=dict(self._seen),
            pending=self.queues.by_target(),
            cooldowns=dict(self.record.cooldowns),
            jobs={j: replace(job) for j, job in after.jobs.items()},
            failures=dict(after.failures),
            escalated=set(after.escalated),
            wakes=self._hour.items(),
            events=dict(after.events),
            next_checks=dict(after.next_checks),
        )

    def step(self, now_ms: int, inputs: Iterable[Input]) -> Step:
        step = self.record.begin(now_ms)
        step.changed.cooldowns.update(self._between)
        self._between = {}
        after = self.after_run
        for x in inputs:
            if isinstance(x, Event):
                self._ingest(x)
            elif isinstance(x, RunEnded):
                after.run_ended(x)
            elif isinstance(x, TracesFound):
                after.traces_found(x)
            elif isinstance(x, LeaseRefused):
                after.lease_refused(x)
            elif isinstance(x, Settled):
                self._settle(x)
            elif isinstance(x, AgentsOff):
                self._off, self._off_why = frozenset(x.agents), x.why
            else:
                raise TypeError(f"not a reactor input: {type(x).__name__}")
        for e in after.due_self_checks():
            self._ingest(e, canonical=True)
        self.queues.expire()
        self._drain_off()
        self._plan()
        after.due_checks()
        self._prune_seen()
        return step

    def _settle(self, x: Settled) -> None:
        """Events handled outside a wake (a tick answered the message): a pending one is done; one
        in a job not started yet leaves it, and a job left with none is skipped (its cooldowns lifted)."""
        rec = self.record
        for key in x.keys:
            meta = self.queues.meta(key)
            if meta is not None:
                self.queues.take(key)
                rec.status(key, "done")
                rec.decide(key, "settled", meta[1], f"handled by {x.by} before a wake")
            else:
                self.after_run.settle(key, x.by)

    # ---- routing -----------------------------------------------------------------------------
    def _is_local(self, agent: str) -> bool:
        return agent in self.cfg.local_agents

    def _resolve(self, raw: str) -> str | None:
        if raw == "self":
            return self.cfg.self_id
        cid = self.aliases.resolve(raw)
        if cid is None and raw in self.cfg.local_agents:
            return raw
        return cid

    def _pend(self, e: Event, since_ms: int) -> None:
        """Pending again (a row rebuilt from the store, an interrupted job's event): routed again
        here, so a stale grouping can never make a non-local agent wakeable."""
        self.queues.add(e, since_ms, self._route(e))

    def _ingest_canonical(self, e: Event) -> None:
        self._ingest(e, canonical=True)

    # ---- ingest ------------------------------------------------------------------------------
    def _ingest(self, e: Event, canonical: bool = False) -> None:
        rec = self.record
        key, now = e.dedupe_key, rec.now
        if key in self._seen:
            self._seen[key] = now
            rec.step.changed.seen_again.append(key)
            # not rec.decide: a duplicate leaves the key's own decision still to come
            rec.step.decisions.append(Decision(now, key, "duplicate", None, "seen before"))
            return
        self._seen[key] = now
        heapq.heappush(self._seen_heap, (now + self.cfg.dedupe_ms, key))
        cid = e.agent if canonical else self._resolve(e.agent)
        if cid is not None and cid != e.agent:
            e = replace(e, agent=cid)
        rec.step.accepted.append(e)
        if e.noise:
            rec.status(key, "noise")
            rec.decide(key, "noise", None, f"filter {e.noise}")
            return
        if cid is None:
            rec.status(key, "unknown")
            rec.decide(key, "unknown_agent", None, f"no agent named {e.agent!r}")
            return
        routed = self._route(e)
        kind, target, rule, why = routed
        if kind == "mentor":
            self.after_run.escalate(cid, e)
        elif kind == "operator":
            self.after_run.to_operator(cid, e, rule)
        elif kind == "wake" and target in self._off:
            self._agent_off(e, rule)
        elif kind == "digest":
            self.queues.add(e, now, routed)
            rec.status(key, "digest")
            rec.decide(key, "digest_only", rule, why)
        else:
            self.queues.add(e, now, routed)
            rec.status(key, "pending")
            rec.undecided.add(key)

    def _route(self, e: Event) -> tuple[str, str, str, str]:
        """(kind, target, rule, why) for an event with a canonical agent: kind is wake (pending for
        target), digest (pending, never wakes), mentor (escalate at once) or operator (a note)."""
        rule, route, off = rule_for(e.event_type, e.suggested_route, self.cfg)
        cid = e.agent
        if off or not rule.wakes:
            target = cid if self._is_local(cid) else self.cfg.coordinator
            return "digest", target, rule.name, "rule switched off" if off else "informational"
        if route in ("mentor", "operator"):
            return route, cid, rule.name, ""
        if route == "coordinator":
            target = self.cfg.coordinator
        elif route == "agent":
            target = cid
        else:
            target = self._resolve(route) or cid
        if not self._is_local(target):
            return "digest", self.cfg.coordinator, rule.name, f"{target} is not an agent of this node"
        return "wake", target, rule.name, ""

    # ---- agents that cannot think (agent_off.py) ---------------------------------------------
    def _agent_off(self, e: Event, rule: str) -> None:
        """A signal that would wake an agent that is off: a line for the person, or nothing."""
        rec, key = self.record, e.dedupe_key
        tell, why = agent_off.for_person(e)
        rec.status(key, "done")
        if tell:
            rec.step.for_person.append(e)
        rec.decide(key, "to_person" if tell else "agent_off", rule, f"{self._off_why}: {why}")

    def _drain_off(self) -> None:
        """The wakeable events pending for an agent that went off (at start with no LLM, or its LLM
        removed): each as a new one would be (``_agent_off``). O(its pending), once."""
        queues = self.queues
        for agent in self._off.intersection(queues.wakeable_targets()):
            for e in queues.of(agent, len(queues)):
                meta = queues.meta(e.dedupe_key)
                if meta is not None and meta[2] and queues.take(e.dedupe_key) is not None:
                    self.record.undecided.discard(e.dedupe_key)
                    self._agent_off(e, meta[1])

    # ---- time-driven -------------------------------------------------------------------------
    def _prune_seen(self) -> None:
        heap, now, ms = self._seen_heap, self.record.now, self.cfg.dedupe_ms
        while heap and heap[0][0] <= now:
            _at, key = heapq.heappop(heap)
            last = self._seen.get(key)
            if last is None:
                continue
            if last + ms > now:
                heapq.heappush(heap, (last + ms, key))  # seen again since: look again then
            elif self.queues.holds(key) or self.after_run.holds(key):
                heapq.heappush(heap, (now + ms, key))  # still pending or in an open job
            else:
                del self._seen[key]

    # ---- planning (6.2) ----------------------------------------------------------------------
    def _kind_until(self, agent: str, kind: str) -> int:
        """When the agent's wake cooldown of one signal kind ends (a per-agent row of before counts
        for every kind)."""
        if kind in UNCOOLED:
            return 0
        rec = self.record
        until = rec.until(wake_key(agent, kind))
        if self._legacy:
            until = max(until, rec.until(legacy_wake_key(agent)))
        return until

    def _cause(self, agent: str) -> tuple[Event | None, str]:
        """The event that wakes ``agent`` now: a P1, else one whose deadline a cooldown may not hold
        it past any more (``limits.hold_end``), else the most urgent of a signal kind whose cooldown
        is not running (a signal with a deadline first); or (None, why it is held)."""
        queues, now = self.queues, self.record.now
        if queues.has_p1(agent):
            best = queues.peek(agent, True)
            if best is not None and best.severity == Severity.P1:
                return best, ""
        deadlines = queues.has_deadlines_for(agent)
        if deadlines:
            due = queues.deadline_due(agent)
            if due is not None:  # the most pressing: its deadline is near, whatever its kind's cooldown
                return due, ""
        free: list[str] = []
        cooling: tuple[int, str] | None = None
        for kind in queues.kinds(agent):
            until = self._kind_until(agent, kind)
            if until > now:
                cooling = min(cooling or (until, kind), (until, kind))
            else:
                free.append(kind)
        best: Event | None = None
        for kind in free:
            e = queues.best_of_kind(agent, kind)
            if e is not None and (best is None or (self._rank(e) < self._rank(best) if deadlines else urgency(e) < urgency(best))):
                best = e
        if best is not None:
            return best, ""
        if cooling is None:
            return None, ""  # nothing wakeable is left (dropped by a nudge cooldown)
        return None, f"cooldown {wake_key(agent, cooling[1])} until {iso(cooling[0])}"

    def _cooling_why(self, agent: str) -> str:
        """Why ``agent`` could not be woken now were the budget free: its cooldowns ("" when it
        could: a P1, a deadline near, or a kind not cooling). No event is picked (O(kinds))."""
        queues, now = self.queues, self.record.now
        if queues.has_p1(agent) or (queues.has_deadlines_for(agent) and queues.deadline_due(agent) is not None):
            return ""
        cooling: tuple[int, str] | None = None
        for kind in queues.kinds(agent):
            until = self._kind_until(agent, kind)
            if until <= now:
                return ""
            cooling = min(cooling or (until, kind), (until, kind))
        return "" if cooling is None else f"cooldown {wake_key(agent, cooling[1])} until {iso(cooling[0])}"

    def _rank(self, e: Event) -> tuple[int, int, int, str]:
        """Who goes first for a wake: severity, then a signal with a deadline (the hourly ceiling
        could otherwise let it expire), then the oldest."""
        return (int(e.severity), 0 if self.queues.hold_end_of(e.dedupe_key) is not None else 1, e.at_ms, e.dedupe_key)

    def _held_why(self, key: str, target: str, rule: str, default: str, whys: dict) -> str:
        """A held event's reason: its own kind's cooldown (``whys``: computed once per agent and kind
        in a plan), and when its deadline wakes it at the latest."""
        known = whys.get((target, rule))
        if known is None:
            until = self._kind_until(target, rule)
            known = whys[(target, rule)] = (until, f"cooldown {wake_key(target, rule)} until {iso(until)}"
                                            if until > self.record.now else default)
        until, why = known
        end = self.queues.hold_end_of(key)
        if end is not None and end < until:
            why += f"; its deadline wakes it by {iso(end)}"
        return why

    def _plan(self) -> None:
        cfg, rec, queues = self.cfg, self.record, self.queues
        now = rec.now
        held: dict[str, tuple[str, str]] = {}
        hour_left = cfg.max_wakes_per_hour - self._hour.used(now)
        # (severity, 0 with a deadline else 1, at, agent, the key of the event that wakes it)
        groups: list[tuple[int, int, int, str, str]] = []
        # with the hourly ceiling reached nobody can be woken: only the new events need a word
        agents = queues.wakeable_targets() if hour_left > 0 else {m[0] for k in rec.undecided if (m := queues.meta(k))}
        for agent in agents:
            if hour_left <= 0:  # nobody is woken: only why (no event to pick)
                why = self._cooling_why(agent)
                held[agent] = ("held_cooldown", why) if why else \
                    ("held_budget", f"hourly budget {cfg.max_wakes_per_hour}/h used")
                continue
            cause, why = self._cause(agent)
            if cause is None:
                if why:
                    held[agent] = ("held_cooldown", why)
                continue
            groups.append((*self._rank(cause)[:3], agent, cause.dedupe_key))
        groups.sort()
        urgent = [g for g in groups if g[0] == Severity.P1]
        normal = [g for g in groups if g[0] != Severity.P1]
        plan: dict[str, list[tuple[int, int, int, str, str]]] = {g[3]: [g] for g in urgent}
        if len(normal) > cfg.max_jobs_per_scan:
            coord = cfg.coordinator
            first = normal[: cfg.digest_items]  # the causes the coordinator's digest would carry
            kinds = {m[1] for g in first if (m := queues.meta(g[4]))}
            c_until = min((self._kind_until(coord, k) for k in kinds), default=0)
            deadline = any((end := queues.hold_end_of(g[4])) is not None and end <= now for g in first)
            if c_until <= now or deadline or coord in plan:
                plan.setdefault(coord, []).extend(normal)
            else:
                for g in normal[cfg.max_jobs_per_scan:]:
                    held[g[3]] = ("held_budget", f"budget {cfg.max_jobs_per_scan}/scan used; coordinator "
                                  f"{coord} cooling until {iso(c_until)}")
                for g in normal[: cfg.max_jobs_per_scan]:
                    plan[g[3]] = [g]
        else:
            for g in normal:
                plan[g[3]] = [g]
        # while a signal with a deadline waits, one wake of the hour is kept for it (a deadline near
        # must not find the ceiling used up by wakes that could have waited)
        keep = 1 if cfg.max_wakes_per_hour > 1 and queues.has_deadlines() else 0
        for n, (agent, sources) in enumerate(sorted(plan.items(), key=lambda kv: min(kv[1]))):
            if n >= hour_left or (n >= hour_left - keep and all(g[1] for g in sources) and sources[0][0] != Severity.P1):
                for g in sources:  # routed events wait with their own agent
                    held[g[3]] = ("held_budget", f"hourly budget {cfg.max_wakes_per_hour}/h used")
                continue
            self._make_job(agent, [g[3] for g in sources], [g[4] for g in sources])
        whys: dict[tuple[str, str], tuple[int, str]] = {}
        for key in list(rec.undecided):
            meta = queues.meta(key)
            if meta is None:
                continue
            action, why = held.get(meta[0], ("held_budget", f"digest full ({cfg.digest_items} items)"))
            if action == "held_cooldown":
                why = self._held_why(key, meta[0], meta[1], why, whys)
            rec.status(key, "held")
            rec.decide(key, action, meta[1], why)

    def _make_job(self, agent: str, sources: list[str], causes: list[str]) -> None:
        """A job for ``agent``: the events that wake it (``causes``, one per source, most urgent
        first, at most ``digest_items``), the sources' events with a deadline, then their most
        urgent others; a wake cooldown starts for each signal kind it carries."""
        cfg, rec, queues = self.cfg, self.record, self.queues
        now = rec.now
        metas: dict[str, Meta] = {}
        evs: list[Event] = []
        for key in causes[: cfg.digest_items]:
            meta = queues.meta(key)
            e = queues.take(key)
            if e is not None and meta is not None:
                metas[key] = meta
                evs.append(e)
        if len(evs) < cfg.digest_items:  # signals with a deadline ride along before they are late
            evs += queues.take_with_deadline(sources, cfg.digest_items - len(evs), metas)
        evs.sort(key=urgency)
        if len(evs) < cfg.digest_items:
            evs += queues.select(sources, cfg.digest_items - len(evs), True, metas)
        if not evs:
            return
        if len(evs) < cfg.digest_items:  # room left: the digest-only items ride along
            evs += queues.select(sources, cfg.digest_items - len(evs), False, metas)
        job_id = f"wake-{short(agent)}-{now}-{next(self._ids)}"
        rules = sorted({metas[e.dedupe_key][1] for e in evs})
        nudges = {metas[e.dedupe_key][3] for e in evs} - {None}
        required = tuple(sorted({k for e in evs for k in e.required_trace if k != TraceKind.NONE}, key=lambda k: k.value))
        job = WakeJob(job_id=job_id, agent=agent, reason=tuple(rules), priority=Severity(int(evs[0].severity)),
                      events=tuple(e.dedupe_key for e in evs), created_ms=now, max_runtime_s=cfg.runtime_s(agent),
                      required_trace=required, status="queued", context={},
                      dedupe_key=f"wake:{agent}:{evs[0].dedupe_key}")
        job.context = wake_context.build(job, evs, None, cfg)
        first = True
        for e in evs:
            key = e.dedupe_key
            owner, rule = metas[key][0], metas[key][1]
            rec.status(key, "job", job_id)
            if owner != agent:
                action, why = "routed_coordinator", f"more than {cfg.max_jobs_per_scan} agents need a wake"
            elif first:
                action, why, first = "woken", f"{agent} woken", False
            else:
                action, why = "coalesced", f"into {job_id}"
            rec.decide(key, action, rule, why, job_id)
        for kind in rules:  # every kind it carries, digest-only riders too: the agent has seen them
            if kind in UNCOOLED:
                continue
            wk = wake_key(agent, kind)
            until, count = rec.cooldowns.get(wk, (0, 0))
            rec.set_cooldown(wk, now + cfg.wake_cooldown_ms, count + 1 if until > now else 1)
        for nk in sorted(nudges):
            until, count = rec.cooldowns.get(nk, (0, 0))
            rec.set_cooldown(nk, now + cfg.nudge_cooldown_ms, count + 1 if until > now else 1)
        self._hour.add(now, agent)
        rec.step.jobs.append(job)
        self.after_run.open(job, evs)
