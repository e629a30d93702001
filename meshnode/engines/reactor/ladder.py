"""After a wake: the open jobs, run outcomes, trace results and the escalation ladder (design 7.1, 10.2, 10.3).

The reactor core decides who is woken and hands each new job to its ``AfterRun`` (``open``); this
module decides what a finished run means. Lifecycle: a job is ``queued`` until the driver reports
``RunEnded``; then ``checking`` until ``trace_grace_seconds`` after the end, when ``due_checks``
emits a ``TraceCheck``; ``TracesFound`` closes it ``ok`` or ``failed``. A lying final report
(mismatches) fails the job at once; ``interrupted`` puts its events back to pending once (the
memory of it is a cooldown row ``int:<event key>``, so it survives a restart). A final report's
``next_check_at`` schedules a ``self.check`` event (``due_self_checks``).

The ladder, per (agent, event key): the first failure goes to the agent's mentor (level 1), the
next to the operator (level 2); each escalation opens a *watch* job (status ``checking``, never
run) that looks for the trace again after ``mentor_answer_hours`` (level 1) or at the end of the
round (level 2). A round lasts ``escalation_repeat_hours``; a later round repeats the ladder with
keys suffixed ``:r<n>`` while the event is inside its dedupe window, else ``escalation_capped``.
Escalation keys are remembered forever (``escalated``): none is sent twice. A mentor that is a
local agent gets a pending ``note.escalation`` event (its key the escalation key) instead of an
``Escalation`` for the driver. A trace found later clears the failure (``trace_ok``, late).
"""

from __future__ import annotations

import heapq

from dataclasses import replace
from typing import Callable, Iterator

from meshnode.base.config.reactor import ReactorConfig
from meshnode.engines.reactor.limits import iso, rule_for, short, wake_key
from meshnode.engines.reactor.report import MAX_NEXT_CHECK_MS, MIN_NEXT_CHECK_MS
from meshnode.engines.reactor.step_record import StepRecord
from meshnode.engines.reactor.types import (
    ANY_TRACE, OPEN_STATUSES, Escalation, Event, LeaseRefused, ReactorState, RunEnded, Severity, TraceCheck,
    TraceKind, TracesFound, WakeJob, report_to_dict,
)

ESCALATION_TRACES = (TraceKind.MESSAGE, TraceKind.TASK_UPDATE, TraceKind.BLOCKER)
CHECK_RETRY_MS = 60_000


def interrupted_key(event_key: str) -> str:
    """The cooldown row saying an event's job was interrupted once (design 7.2: a second
    interruption is a failure); it lasts the event's dedupe window (or its pending TTL if longer)."""
    return f"int:{event_key}"


class AfterRun:
    """The open jobs and what their ends mean. Holds the open jobs, their events, the check heap,
    the scheduled self-checks and the ladder's memory (failures, escalation keys sent); writes into
    the step record; reads the core's ``seen`` table (an event's dedupe window bounds its rounds).
    From the core it is given three callables: ``resolve`` (an alias to a canonical id), ``pend``
    (an event back to pending, routed by the core) and ``ingest`` (a new event with a canonical
    agent: a local mentor's note); and ``ids``, the counter shared with wake job ids."""

    def __init__(self, cfg: ReactorConfig, record: StepRecord, state: ReactorState, *, seen: dict[str, int],
                 ids: Iterator[int], resolve: Callable[[str], str | None], pend: Callable[[Event, int], None],
                 ingest: Callable[[Event], None]) -> None:
        self.cfg = cfg
        self._rec = record
        self._seen, self._ids = seen, ids
        self._resolve, self._pend, self._ingest = resolve, pend, ingest
        self.jobs: dict[str, WakeJob] = {j: replace(job) for j, job in state.jobs.items()
                                         if job.status in OPEN_STATUSES}
        self.events: dict[str, Event] = dict(state.events)  # the events of open jobs
        self.failures = dict(state.failures)
        self.escalated = set(state.escalated)
        self.next_checks = dict(state.next_checks)  # agent -> when its scheduled self.check is due
        for key, (until, _n) in state.cooldowns.items():
            if key.startswith("check:"):
                self.next_checks.setdefault(key[6:], until)
        self._check_heap: list[tuple[int, str]] = []
        for job in self.jobs.values():
            if job.status == "checking":
                at = job.check_at_ms or job.context.get("check_at_ms") or (job.ended_ms or 0) + cfg.trace_grace_ms
                job.check_at_ms = at
                heapq.heappush(self._check_heap, (at, job.job_id))

    # ---- from the core -----------------------------------------------------------------------
    def holds(self, key: str) -> bool:
        """An open job (a wake or a watch) holds the event ``key``."""
        return key in self.events

    def open(self, job: WakeJob, events: list[Event]) -> None:
        """A new wake job the core planned, with its events."""
        for e in events:
            self.events[e.dedupe_key] = e
        self.jobs[job.job_id] = job
        self._rec.touch(job)

    def escalate(self, agent: str, e: Event) -> None:
        """An event routed to the mentor from the start: the ladder's first step at once."""
        self.events[e.dedupe_key] = e
        self._fail(agent, e, None)

    # ---- time-driven -------------------------------------------------------------------------
    def due_self_checks(self) -> list[Event]:
        """The ``self.check`` events whose time has come (scheduled by final reports), for the core
        to ingest; their ``check:`` cooldown rows are cleared."""
        rec = self._rec
        now, out = rec.now, []
        due = [(a, at) for a, at in self.next_checks.items() if at <= now] if self.next_checks else ()
        for agent, at in due:
            del self.next_checks[agent]
            rec.set_cooldown(f"check:{agent}", 0, 0)
            out.append(Event("self.check", f"self-check of {agent}", agent, Severity.P3, f"selfcheck:{agent}:{at}",
                             "agent", ANY_TRACE, at, "core", "scheduled check from the last final report"))
        return out

    def due_checks(self) -> None:
        """A TraceCheck for each checking job whose grace has passed."""
        heap, rec = self._check_heap, self._rec
        while heap and heap[0][0] <= rec.now:
            at, job_id = heapq.heappop(heap)
            job = self.jobs.get(job_id)
            if job is None or job.status != "checking" or (job.check_at_ms or 0) > at:
                continue
            rec.step.checks.append(self._trace_check(job))
            # unanswered (a driver that crashed between scans): ask again later, once per retry
            heapq.heappush(heap, (rec.now + max(self.cfg.trace_grace_ms, CHECK_RETRY_MS), job_id))

    # ---- run outcomes ------------------------------------------------------------------------
    def run_ended(self, x: RunEnded) -> None:
        rec = self._rec
        job = self.jobs.get(x.job_id)
        if job is None or job.status not in ("queued", "leased", "running"):
            return  # unknown, already ended, or a replay
        job.ended_ms, job.exit = x.at_ms, x.exit
        if x.report is not None:
            job.report = report_to_dict(x.report)
        if x.exit == "interrupted":
            self._interrupted_job(job)
            return
        if x.exit == "settled":
            self._settled_job(job, "every event was handled before the run began (no LLM call)")
            return
        if x.mismatches:
            why = "report claims not found: " + "; ".join(x.mismatches)
            rec.decide(job.job_id, "report_mismatch", None, why[:500], job.job_id)
            job.status, job.missing = "failed", job.events
            for key in job.events:
                e = self.events.pop(key, None)
                if e is not None:
                    rec.status(key, "failed", job.job_id)
                    rec.decide(key, "trace_missing", self._rule_of(e), "the final report did not hold", job.job_id)
                    self._fail(job.agent, e, job)
            self._close(job)
            return
        job.status = "checking"
        job.check_at_ms = x.at_ms + self.cfg.trace_grace_ms
        heapq.heappush(self._check_heap, (job.check_at_ms, job.job_id))
        rec.touch(job)
        rep = x.report
        if rep is not None and rep.needs_human:
            self._escalate_human(job)
        if rep is not None and rep.next_check_at_ms is not None:
            at = min(max(rep.next_check_at_ms, x.at_ms + MIN_NEXT_CHECK_MS), x.at_ms + MAX_NEXT_CHECK_MS)
            self.next_checks[job.agent] = at
            rec.set_cooldown(f"check:{job.agent}", at, 1)

    def _interrupted_job(self, job: WakeJob) -> None:
        rec = self._rec
        job.status = "interrupted"
        for key in job.events:
            e = self.events.pop(key, None)
            if e is None:
                continue
            ikey = interrupted_key(key)
            if rec.until(ikey) > rec.now:
                rec.status(key, "failed", job.job_id)
                rec.decide(key, "interrupted", self._rule_of(e), "interrupted twice: counted as a failure", job.job_id)
                self._fail(job.agent, e, job)
            else:
                # remembered in the cooldown table (persisted), so a restart does not forget it
                rec.set_cooldown(ikey, rec.now + max(self.cfg.dedupe_ms, self.cfg.event_ttl_ms), 1)
                self._pend(e, rec.now)
                rec.status(key, "pending")
                rec.decide(key, "interrupted", self._rule_of(e), "back to pending once", job.job_id)
        self._close(job)

    def settle(self, key: str, by: str) -> None:
        """The event ``key`` was handled outside a wake (``by``): if a job not started yet
        (queued or leased) carries it, the job no longer does; a job left with none is skipped."""
        rec = self._rec
        job = next((j for j in self.jobs.values() if key in j.events and j.kind == "wake"
                    and j.status in ("queued", "leased")), None)
        if job is None:
            return
        e = self.events.pop(key)
        job.events = tuple(k for k in job.events if k != key)
        rec.status(key, "done", job.job_id)
        rec.decide(key, "settled", self._rule_of(e), f"handled by {by} before the wake ran", job.job_id)
        if job.events:
            rec.touch(job)
        else:
            self._settled_job(job, f"its events were handled by {by} before it ran")

    def _settled_job(self, job: WakeJob, why: str) -> None:
        """A wake nobody needs any more: skipped, its events done, and the wake cooldowns it started
        lifted (a wake that never ran must not hold the next signal of its kinds back)."""
        rec, cfg = self._rec, self.cfg
        job.status = "skipped"
        job.exit = job.exit or "settled"
        for key in job.events:
            e = self.events.pop(key, None)
            if e is not None:
                rec.status(key, "done", job.job_id)
                rec.decide(key, "settled", self._rule_of(e), why, job.job_id)
        rec.decide(job.job_id, "settled", None, why, job.job_id)
        for kind in job.reason:
            wk = wake_key(job.agent, kind)
            if rec.until(wk) == job.created_ms + cfg.wake_cooldown_ms:  # started by this job, not since
                rec.set_cooldown(wk, 0, 0)
        self._close(job)

    def lease_refused(self, x: LeaseRefused) -> None:
        rec = self._rec
        job = self.jobs.get(x.job_id)
        if job is None or job.status not in ("queued", "leased"):
            return
        job.status = "skipped"
        for key in job.events:
            e = self.events.pop(key, None)
            if e is not None:
                rec.status(key, "done", job.job_id)
                rec.decide(key, "skipped", self._rule_of(e), f"agent lease held by {x.holder}", job.job_id)
        self._close(job)

    def traces_found(self, x: TracesFound) -> None:
        rec = self._rec
        job = self.jobs.get(x.job_id)
        if job is None or job.status != "checking":
            return
        found: dict[str, set[TraceKind]] = {}
        for t in x.traces:
            found.setdefault(t.event_key, set()).add(t.kind)
        rep = job.report or {}
        blocker = bool(rep.get("blocked")) and len(str(rep.get("blocked_reason", "")).strip()) >= 20
        missing = []
        for key in job.events:
            e = self.events.pop(key, None)
            if e is None:
                continue
            kinds = found.get(key, set())
            req = set(e.required_trace)
            if (not req or TraceKind.NONE in req or TraceKind.RESOLVED in kinds or kinds & req
                    or (blocker and TraceKind.BLOCKER in req)):
                why = ", ".join(sorted(k.value for k in kinds)) or ("no trace required" if not req or TraceKind.NONE in req
                                                                    else "blocked (final report)")
                if job.kind == "watch":
                    why += " (late)"
                rec.status(key, "done", job.job_id)
                rec.decide(key, "trace_ok", self._rule_of(e), why, job.job_id)
                self._clear_failure(job.agent, key)
            else:
                missing.append(key)
                rec.status(key, "failed", job.job_id)
                want = ", ".join(k.value for k in e.required_trace)
                rec.decide(key, "trace_missing", self._rule_of(e), f"expected one of: {want}", job.job_id)
                self._fail(job.agent, e, job)
        job.status = "failed" if missing else "ok"
        job.missing = tuple(missing)
        self._close(job)

    # ---- the ladder --------------------------------------------------------------------------
    def _fail(self, agent: str, e: Event, job: WakeJob | None) -> None:
        """One more failure of ``agent`` on event ``e``: climb the ladder one level (or cap)."""
        rec = self._rec
        cfg, now, key = self.cfg, rec.now, e.dedupe_key
        rule = self._rule_of(e)
        count, level, _last = self.failures.get((agent, key), (0, 0, None))
        count += 1
        round_key = f"esc:{agent}:{key}"
        until, rnd = rec.cooldowns.get(round_key, (0, 0))
        mentor = self._mentor(agent)
        if level == 0:
            new_level, until = (1 if mentor else 2), now + cfg.escalation_repeat_ms
        elif level == 1:
            new_level = 2
        elif until <= now and now < self._seen.get(key, now) + cfg.dedupe_ms:
            new_level, until, rnd = (1 if mentor else 2), now + cfg.escalation_repeat_ms, rnd + 1
        else:
            new_level = 0
        esc_key = self._esc_key(new_level, agent, key, rnd)
        if level >= 2 and new_level:  # a new round: skip rounds already sent (a round row lost on reload)
            while rnd < 1000 and (esc_key in self.escalated or esc_key in self._seen):
                rnd += 1
                esc_key = self._esc_key(new_level, agent, key, rnd)
        if new_level == 0 or esc_key in self.escalated or esc_key in self._seen:
            self._set_failure(agent, key, count, level, job.job_id if job else None)
            self.events.pop(key, None)
            rec.status(key, "failed" if job else "done", job.job_id if job else None)
            rec.decide(key, "escalation_capped", rule, f"{count} failures; ladder done for this episode",
                         job.job_id if job else None)
            return
        watch_id = f"watch-{short(agent)}-{now}-{next(self._ids)}"
        to_id = mentor if new_level == 1 else "operator"
        self._set_failure(agent, key, count, new_level, watch_id)
        rec.set_cooldown(round_key, until, rnd)
        text = self._escalation_text(agent, e, new_level, esc_key, job)
        self._send(Escalation(esc_key, agent, to_id, new_level, key, e.event_type, e.subject, text,
                              job.job_id if job else watch_id, now))
        rec.decide(key, "escalated", rule, f"level {new_level} to {to_id} ({esc_key})", watch_id)
        check_at = now + cfg.mentor_answer_ms if new_level == 1 else max(until, now + 1)
        watch = WakeJob(job_id=watch_id, agent=agent, reason=("escalation",), priority=e.severity, events=(key,),
                        created_ms=job.created_ms if job else now, max_runtime_s=0, required_trace=e.required_trace,
                        status="checking",
                        context={"escalation": esc_key, "level": new_level, "to": to_id, "check_at_ms": check_at},
                        dedupe_key=f"watch:{agent}:{key}:{count}", check_at_ms=check_at, kind="watch")
        self.jobs[watch_id] = watch
        self.events[key] = e
        heapq.heappush(self._check_heap, (check_at, watch_id))
        rec.status(key, "failed" if job else "job", watch_id)
        rec.touch(watch)

    def _send(self, esc: Escalation) -> None:
        rec = self._rec
        self.escalated.add(esc.key)
        if esc.level == 1 and esc.to_id in self.cfg.local_agents:
            note = Event("note.escalation", esc.subject, esc.to_id, Severity.P2, esc.key, "agent", ESCALATION_TRACES,
                         rec.now, "reactor", esc.text[:200],
                         {"agent": esc.agent, "event_key": esc.event_key, "event_type": esc.event_type})
            self._ingest(note)
        else:
            rec.step.escalations.append(esc)

    def to_operator(self, agent: str, e: Event, rule: str) -> None:
        """An event routed to the person from the start (person.*, adapter.failed): one note."""
        rec = self._rec
        key = e.dedupe_key
        esc_key = f"esc:operator:{agent}:{key}"
        rec.status(key, "done")
        if esc_key in self.escalated:
            rec.decide(key, "escalation_capped", rule, f"{esc_key} already sent")
            return
        text = f"For the person: {e.event_type} '{e.subject}' ({key}) since {iso(e.at_ms)}: {e.summary}"
        self._send(Escalation(esc_key, agent, "operator", 2, key, e.event_type, e.subject, text[:1000], None, rec.now))
        rec.decide(key, "escalated", rule, f"note to the operator ({esc_key})")

    def _escalate_human(self, job: WakeJob) -> None:
        rec = self._rec
        esc_key = f"esc:operator:{job.agent}:{job.dedupe_key}"
        if esc_key in self.escalated:
            return
        items = ", ".join(job.events[:10]) + (f" and {len(job.events) - 10} more" if len(job.events) > 10 else "")
        text = f"{job.agent} asks for a person after wake {job.job_id} ({', '.join(job.reason)}): {items}"
        first = self.events.get(job.events[0]) if job.events else None
        self._send(Escalation(esc_key, job.agent, "operator", 2, job.events[0] if job.events else "",
                              first.event_type if first else "", first.subject if first else "",
                              text[:1000], job.job_id, rec.now))
        rec.decide(job.job_id, "escalated", None, f"needs_human: digest to the operator ({esc_key})", job.job_id)

    # ---- helpers -----------------------------------------------------------------------------
    def _mentor(self, agent: str) -> str | None:
        m = self.cfg.mentor_of(agent)
        if m:
            m = self._resolve(m) or m
        return None if not m or m in ("operator", agent) else m

    def _escalation_text(self, agent: str, e: Event, level: int, esc_key: str, job: WakeJob | None) -> str:
        want = ", ".join(k.value for k in e.required_trace) or "none"
        who = "mentor" if level == 1 else "operator"
        text = (f"Reactor escalation (level {level}, to the {who}): {agent} left no trace for {e.event_type} "
                f"'{e.subject}' since {iso(e.at_ms)}. Expected one of: {want}."
                + (f" Job {job.job_id}." if job and job.kind == "wake" else "")
                + f" Summary: {e.summary}")
        return text[:1000]  # the note's ``dedupe:`` line is escalate.note_text's (once per escalation)

    @staticmethod
    def _esc_key(level: int, agent: str, key: str, rnd: int) -> str:
        return f"esc:{'mentor' if level == 1 else 'operator'}:{agent}:{key}" + (f":r{rnd}" if rnd else "")

    def _set_failure(self, agent: str, key: str, count: int, level: int, last: str | None) -> None:
        self.failures[(agent, key)] = (count, level, last)
        self._rec.step.changed.failures[(agent, key)] = (count, level, last)

    def _clear_failure(self, agent: str, key: str) -> None:
        rec = self._rec
        if self.failures.pop((agent, key), None) is not None:
            rec.step.changed.failures[(agent, key)] = (0, 0, None)
        if f"esc:{agent}:{key}" in rec.cooldowns:
            rec.set_cooldown(f"esc:{agent}:{key}", 0, 0)

    def _trace_check(self, job: WakeJob) -> TraceCheck:
        evs = tuple((k, e.required_trace, e.refs, e.event_type) for k in job.events if (e := self.events.get(k)))
        return TraceCheck(job.job_id, job.agent, job.created_ms, evs)

    def _rule_of(self, e: Event) -> str:
        return rule_for(e.event_type, e.suggested_route, self.cfg)[0].name

    def _close(self, job: WakeJob) -> None:
        self.jobs.pop(job.job_id, None)
        self._rec.touch(job)
