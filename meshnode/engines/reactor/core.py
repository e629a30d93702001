"""The reactor core: events and run outcomes in; decisions, jobs, checks and escalations out.

Theory of operation (protocols/reactor.md 2, 6, 7.1, 10). Sans-IO: ``step(now_ms, inputs)`` never
reads a clock, a file or the store; the driver persists ``Step.changed`` and does the I/O asked for.

- Ingest, per event, O(1): dedupe (a key seen within ``dedupe_days`` is a ``duplicate``), then the
  noise mark, then alias resolution (unknown addressees are kept, never routed), then the rule:
  digest-only, escalate at once (routed to the mentor), a note to the operator, or pending for the
  agent the rule targets (only agents local to this node can be woken; queues in ``pending.py``).
- Plan, per scan, over the agents with wakeable pending events: wake cooldown (P1 bypasses), nudge
  cooldown (drops the event), coalescing into one job per agent (``digest_items`` most urgent
  events; the rest stay pending), the per-scan budget (more agents than ``max_jobs_per_scan`` ->
  one coordinator job; P1 jobs outside the count), and the node's hourly ceiling (P1 included).
- Expire pending events older than ``event_ttl_hours``; schedule ``self.check`` events from final
  reports; emit a TraceCheck for each job whose grace has passed. Run outcomes and traces move a
  job to ok/failed and feed the escalation ladder (``ladder.py``).

Every accepted event ends a step with a decision naming what happened to it; nothing vanishes.
"""

from __future__ import annotations

import heapq
from dataclasses import replace
from typing import Iterable

from meshnode.engines.reactor import wake_context
from meshnode.engines.reactor.aliases import AliasRegistry
from meshnode.engines.reactor.ladder import AfterRun
from meshnode.engines.reactor.limits import HourWindow, iso, message_allowed, rule_for, short, wake_key
from meshnode.engines.reactor.pending import PendingQueues
from meshnode.base.config.reactor import ReactorConfig
from meshnode.engines.reactor.types import (
    ANY_TRACE, OPEN_STATUSES, Decision, Event, Input, LeaseRefused, ReactorState, RunEnded, Severity,
    StateDelta, Step, TraceKind, TracesFound, WakeJob,
)

__all__ = ["Reactor", "Step", "StateDelta", "ReactorState"]

CHECK_RETRY_MS = 60_000


class Reactor(PendingQueues, AfterRun):
    def __init__(self, cfg: ReactorConfig, aliases: AliasRegistry, state: ReactorState | None = None) -> None:
        self.cfg = cfg
        self.aliases = aliases
        st = state or ReactorState()
        self._seen: dict[str, int] = dict(st.seen)
        self._seen_heap = [(ms + cfg.dedupe_ms, k) for k, ms in self._seen.items()]
        heapq.heapify(self._seen_heap)
        self._pending: dict[str, dict[str, Event]] = {}
        self._heaps: dict[str, list[tuple[int, int, int, str]]] = {}  # target -> lazy heap of (not wakes, sev, at, key)
        self._meta: dict[str, tuple[str, str, bool, str | None]] = {}  # key -> (target, rule, wakes, nudge key)
        self._wakeable: dict[str, int] = {}  # target -> wakeable pending count
        self._p1: dict[str, int] = {}
        self._ttl_heap: list[tuple[int, str]] = []
        self._cooldowns: dict[str, tuple[int, int]] = dict(st.cooldowns)
        self._jobs: dict[str, WakeJob] = {j: replace(job) for j, job in st.jobs.items() if job.status in OPEN_STATUSES}
        self._check_heap: list[tuple[int, str]] = []
        self._failures = dict(st.failures)
        self._escalated = set(st.escalated)
        self._hour = HourWindow(st.wakes)
        self._events: dict[str, Event] = dict(st.events)
        self._next_checks = dict(st.next_checks)
        for key, (until, _n) in st.cooldowns.items():
            if key.startswith("check:"):
                self._next_checks.setdefault(key[6:], until)
        self._between: dict[str, tuple[int, int]] = {}  # cooldowns changed by may_send between steps
        self._seq = 0
        for evs in st.pending.values():
            for e in evs:
                if e.dedupe_key not in self._meta:
                    self._add_pending(e, self._seen.get(e.dedupe_key, e.at_ms))
        for job in self._jobs.values():
            if job.status == "checking":
                at = job.check_at_ms or job.context.get("check_at_ms") or (job.ended_ms or 0) + cfg.trace_grace_ms
                job.check_at_ms = at
                heapq.heappush(self._check_heap, (at, job.job_id))
        self._now = 0
        self._step = Step()
        self._undecided: set[str] = set()
        self._touched: set[str] = set()

    # ---- public ------------------------------------------------------------------------------
    def set_aliases(self, aliases: AliasRegistry) -> None:
        self.aliases = aliases

    def may_send(self, src: str, dst: str, thread: str, now_ms: int) -> bool:
        """6.2 item 6: at most ``thread_messages_per_hour`` per source+target+thread; a message
        without a recipient (broadcast) is refused. The window is persisted with the next step."""
        if not dst:
            return False
        ok, value = message_allowed(self._cooldowns, src, dst, thread, now_ms, self.cfg.thread_messages_per_hour)
        if value is not None:
            key = f"msg:{src}:{dst}:{thread}"
            self._cooldowns[key] = value
            self._between[key] = value
        return ok

    def open_jobs(self) -> list[WakeJob]:
        """The open jobs (queued|leased|running|checking), without copying the whole state."""
        return list(self._jobs.values())

    def event(self, key: str) -> Event | None:
        """An event of an open job (or a pending one) by dedupe key; O(1)."""
        e = self._events.get(key)
        if e is None and key in self._meta:
            e = self._pending.get(self._meta[key][0], {}).get(key)
        return e

    def state(self) -> ReactorState:
        """A copy of everything the core holds (O(state): for persistence tests and dry runs; use
        ``open_jobs``/``event`` each scan)."""
        return ReactorState(
            seen=dict(self._seen),
            pending={t: list(evs.values()) for t, evs in self._pending.items() if evs},
            cooldowns=dict(self._cooldowns),
            jobs={j: replace(job) for j, job in self._jobs.items()},
            failures=dict(self._failures),
            escalated=set(self._escalated),
            wakes=self._hour.items(),
            events=dict(self._events),
            next_checks=dict(self._next_checks),
        )

    def step(self, now_ms: int, inputs: Iterable[Input]) -> Step:
        self._now = now_ms
        self._step = step = Step()
        step.changed.cooldowns.update(self._between)
        self._between = {}
        self._undecided = set()
        self._touched: set[str] = set()
        for x in inputs:
            if isinstance(x, Event):
                self._ingest(x)
            elif isinstance(x, RunEnded):
                self._run_ended(x)
            elif isinstance(x, TracesFound):
                self._traces_found(x)
            elif isinstance(x, LeaseRefused):
                self._lease_refused(x)
            else:
                raise TypeError(f"not a reactor input: {type(x).__name__}")
        self._due_self_checks()
        self._expire()
        self._plan()
        self._due_checks()
        self._prune_seen()
        return step

    # ---- helpers shared with ladder.py -------------------------------------------------------
    def _decide(self, key: str, action: str, rule: str | None, why: str, job_id: str | None = None) -> None:
        self._step.decisions.append(Decision(self._now, key, action, rule, why, job_id))
        self._undecided.discard(key)

    def _status(self, key: str, status: str, job_id: str | None = None) -> None:
        self._step.changed.event_status[key] = (status, job_id)

    def _set_cooldown(self, key: str, until: int, count: int) -> None:
        if until:
            self._cooldowns[key] = (until, count)
        else:
            self._cooldowns.pop(key, None)
        self._step.changed.cooldowns[key] = (until, count)

    def _is_local(self, agent: str) -> bool:
        return agent in self.cfg.local_agents

    def _resolve(self, raw: str) -> str | None:
        if raw == "self":
            return self.cfg.self_id
        cid = self.aliases.resolve(raw)
        if cid is None and raw in self.cfg.local_agents:
            return raw
        return cid

    # ---- ingest ------------------------------------------------------------------------------
    def _ingest(self, e: Event, canonical: bool = False) -> None:
        key, now, step = e.dedupe_key, self._now, self._step
        if key in self._seen:
            self._seen[key] = now
            step.changed.seen_again.append(key)
            step.decisions.append(Decision(now, key, "duplicate", None, "seen before"))
            return
        self._seen[key] = now
        heapq.heappush(self._seen_heap, (now + self.cfg.dedupe_ms, key))
        cid = e.agent if canonical else self._resolve(e.agent)
        if cid is not None and cid != e.agent:
            e = replace(e, agent=cid)
        step.accepted.append(e)
        if e.noise:
            self._status(key, "noise")
            self._decide(key, "noise", None, f"filter {e.noise}")
            return
        if cid is None:
            self._status(key, "unknown")
            self._decide(key, "unknown_agent", None, f"no agent named {e.agent!r}")
            return
        routed = self._route(e)
        kind, target, rule, why = routed
        if kind == "mentor":
            self._events[key] = e
            self._fail(cid, e, None)
        elif kind == "operator":
            self._to_operator(cid, e, rule)
        elif kind == "digest":
            self._add_pending(e, now, routed)
            self._status(key, "digest")
            self._decide(key, "digest_only", rule, why)
        else:
            self._add_pending(e, now, routed)
            self._status(key, "pending")
            self._undecided.add(key)

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

    # ---- time-driven -------------------------------------------------------------------------
    def _due_self_checks(self) -> None:
        now = self._now
        due = [(a, at) for a, at in self._next_checks.items() if at <= now] if self._next_checks else ()
        for agent, at in due:
            del self._next_checks[agent]
            self._set_cooldown(f"check:{agent}", 0, 0)
            self._ingest(Event("self.check", f"self-check of {agent}", agent, Severity.P3,
                               f"selfcheck:{agent}:{at}", "agent", ANY_TRACE, at, "core",
                               "scheduled check from the last final report"), canonical=True)

    def _expire(self) -> None:
        heap, now = self._ttl_heap, self._now
        while heap and heap[0][0] <= now:
            _at, key = heapq.heappop(heap)
            if key in self._meta and self._take_pending(key) is not None:
                self._status(key, "expired")
                self._decide(key, "expired", None, f"pending for {self.cfg.event_ttl_hours:g} h, nobody woken")

    def _prune_seen(self) -> None:
        heap, now, ms = self._seen_heap, self._now, self.cfg.dedupe_ms
        while heap and heap[0][0] <= now:
            _at, key = heapq.heappop(heap)
            last = self._seen.get(key)
            if last is None:
                continue
            if last + ms > now:
                heapq.heappush(heap, (last + ms, key))  # seen again since: look again then
            elif key in self._meta or key in self._events:
                heapq.heappush(heap, (now + ms, key))  # still pending or in an open job
            else:
                del self._seen[key]

    # ---- planning (6.2) ----------------------------------------------------------------------
    def _plan(self) -> None:
        cfg, now = self.cfg, self._now
        held: dict[str, tuple[str, str]] = {}
        hour_left = cfg.max_wakes_per_hour - self._hour.used(now)
        groups: list[tuple[int, int, str]] = []
        # with the hourly ceiling reached nobody can be woken: only the new events need a word
        agents = list(self._wakeable) if hour_left > 0 else {self._meta[k][0] for k in self._undecided if k in self._meta}
        for agent in agents:
            until = self._cooldowns.get(wake_key(agent), (0, 0))[0]
            if until > now and not self._p1.get(agent):
                held[agent] = ("held_cooldown", f"cooldown wake:{agent} until {iso(until)}")
                continue
            if hour_left <= 0:
                held[agent] = ("held_budget", f"hourly budget {cfg.max_wakes_per_hour}/h used")
                continue
            best = self._peek(agent, True)
            if best is None:
                continue
            if until > now and best.severity != Severity.P1:  # its P1 was dropped by a nudge cooldown
                held[agent] = ("held_cooldown", f"cooldown wake:{agent} until {iso(until)}")
                continue
            groups.append((int(best.severity), best.at_ms, agent))
        groups.sort()
        urgent = [g for g in groups if g[0] == Severity.P1]
        normal = [g for g in groups if g[0] != Severity.P1]
        plan: dict[str, list[tuple[int, int, str]]] = {g[2]: [g] for g in urgent}
        if len(normal) > cfg.max_jobs_per_scan:
            coord = cfg.coordinator
            c_until = self._cooldowns.get(wake_key(coord), (0, 0))[0]
            if c_until <= now or coord in plan:
                plan.setdefault(coord, []).extend(normal)
            else:
                for g in normal[cfg.max_jobs_per_scan:]:
                    held[g[2]] = ("held_budget", f"budget {cfg.max_jobs_per_scan}/scan used; coordinator "
                                  f"{coord} cooling until {iso(c_until)}")
                for g in normal[: cfg.max_jobs_per_scan]:
                    plan[g[2]] = [g]
        else:
            for g in normal:
                plan[g[2]] = [g]
        for n, (agent, sources) in enumerate(sorted(plan.items(), key=lambda kv: min(kv[1]))):
            if n >= hour_left:
                for g in sources:  # routed events wait with their own agent
                    held[g[2]] = ("held_budget", f"hourly budget {cfg.max_wakes_per_hour}/h used")
                continue
            self._make_job(agent, [g[2] for g in sources])
        for key in list(self._undecided):
            meta = self._meta.get(key)
            if meta is None:
                continue
            action, why = held.get(meta[0], ("held_budget", f"digest full ({cfg.digest_items} items)"))
            self._status(key, "held")
            self._decide(key, action, meta[1], why)

    def _make_job(self, agent: str, sources: list[str]) -> None:
        cfg, now, step = self.cfg, self._now, self._step
        metas: dict[str, tuple[str, str, bool, str | None]] = {}
        evs = self._select(sources, cfg.digest_items, True, metas)
        if not evs:
            return
        if len(evs) < cfg.digest_items:  # room left: the digest-only items ride along
            evs += self._select(sources, cfg.digest_items - len(evs), False, metas)
        self._seq += 1
        job_id = f"wake-{short(agent)}-{now}-{self._seq}"
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
            self._events[key] = e
            self._status(key, "job", job_id)
            if owner != agent:
                action, why = "routed_coordinator", f"more than {cfg.max_jobs_per_scan} agents need a wake"
            elif first:
                action, why, first = "woken", f"{agent} woken", False
            else:
                action, why = "coalesced", f"into {job_id}"
            self._decide(key, action, rule, why, job_id)
        until, count = self._cooldowns.get(wake_key(agent), (0, 0))
        self._set_cooldown(wake_key(agent), now + cfg.wake_cooldown_ms, count + 1 if until > now else 1)
        for nk in sorted(nudges):
            until, count = self._cooldowns.get(nk, (0, 0))
            self._set_cooldown(nk, now + cfg.nudge_cooldown_ms, count + 1 if until > now else 1)
        self._hour.add(now, agent)
        self._jobs[job_id] = job
        step.jobs.append(job)
        self._touch(job)

    # ---- checks ------------------------------------------------------------------------------
    def _due_checks(self) -> None:
        heap, now = self._check_heap, self._now
        while heap and heap[0][0] <= now:
            at, job_id = heapq.heappop(heap)
            job = self._jobs.get(job_id)
            if job is None or job.status != "checking" or (job.check_at_ms or 0) > at:
                continue
            self._step.checks.append(self._trace_check(job))
            # unanswered (a driver that crashed between scans): ask again later, once per retry
            heapq.heappush(heap, (now + max(self.cfg.trace_grace_ms, CHECK_RETRY_MS), job_id))
