"""Pending events per target agent, with a lazy urgency heap each (design 6.2 items 2-3).

Where an accepted event waits until a wake takes it, expires after ``event_ttl_hours``, or is
dropped by its nudge cooldown; and how a wake picks its digest. The reactor core composes one
``PendingQueues`` and routes each event before adding it (this module never routes). Each target's
heap orders ``(not wakeable, severity, at_ms, key)``; entries of events taken by another path
(expiry, a job, an interruption) go stale and are dropped when they reach the top, and a heap that
is mostly stale is rebuilt. ``peek`` applies the nudge cooldown to the event it is about to offer
(an event whose nudge key is cooling is dropped, not kept); ``select`` merges several agents'
heaps, so a coordinator's digest costs O(digest_items log n), never a pass over everything pending.
"""

from __future__ import annotations

import heapq

from meshnode.base.config.reactor import ReactorConfig
from meshnode.engines.reactor.limits import NUDGE_RULES, deadline_of, hold_end, iso, nudge_key
from meshnode.engines.reactor.step_record import StepRecord
from meshnode.engines.reactor.types import Event, Severity

Meta = tuple[str, str, bool, str | None]  # (target, rule, wakes, nudge key)


def urgency(e: Event) -> tuple[int, int, str]:
    """Most urgent first: severity, then the oldest signal, then the key (a stable order)."""
    return (int(e.severity), e.at_ms, e.dedupe_key)


class PendingQueues:
    """The pending events; drops and expiries are written to the step record it is given."""

    def __init__(self, cfg: ReactorConfig, record: StepRecord) -> None:
        self.cfg = cfg
        self._rec = record
        self._pending: dict[str, dict[str, Event]] = {}  # target -> key -> event
        self._heaps: dict[str, list[tuple[int, int, int, str]]] = {}  # target -> lazy heap of (not wakes, sev, at, key)
        self._meta: dict[str, Meta] = {}  # key -> (target, rule, wakes, nudge key)
        self._wakeable: dict[str, int] = {}  # target -> wakeable pending count
        self._p1: dict[str, int] = {}  # target -> wakeable P1 count
        self._ttl_heap: list[tuple[int, str]] = []
        self._kinds: dict[str, dict[str, int]] = {}  # target -> signal kind (rule) -> wakeable pending count
        self._kind_heaps: dict[tuple[str, str], list[tuple[int, int, str]]] = {}  # (target, kind) -> lazy (sev, at, key)
        self._deadlines: dict[str, list[tuple[int, str]]] = {}  # target -> lazy (hold end, key)
        self._deadline_heap: list[tuple[int, str]] = []  # (deadline, key): past it, nobody can act on the event
        self._hold_ends: dict[str, int] = {}  # key -> until when a cooldown may hold it (events with a deadline)

    def __len__(self) -> int:
        return len(self._meta)

    def holds(self, key: str) -> bool:
        return key in self._meta

    def meta(self, key: str) -> Meta | None:
        return self._meta.get(key)

    def get(self, key: str) -> Event | None:
        meta = self._meta.get(key)
        return None if meta is None else self._pending.get(meta[0], {}).get(key)

    def of(self, target: str, limit: int) -> list[Event]:
        """Up to ``limit`` of the events pending for ``target`` (in the order they came)."""
        evs = self._pending.get(target, {})
        return [e for _n, e in zip(range(limit), evs.values())]

    def by_target(self) -> dict[str, list[Event]]:
        return {t: list(evs.values()) for t, evs in self._pending.items() if evs}

    def wakeable_targets(self) -> list[str]:
        return list(self._wakeable)

    def has_p1(self, target: str) -> bool:
        return bool(self._p1.get(target))

    def add(self, e: Event, since_ms: int, routed: tuple[str, str, str, str]) -> None:
        """Pending for ``routed``'s target (``routed`` = the core's (kind, target, rule, why));
        it expires ``event_ttl_hours`` after ``since_ms``."""
        key = e.dedupe_key
        kind, target, rule, _why = routed
        wakes = kind == "wake"  # mentor/operator only for a rebuilt row: it waits in a digest
        nudge = None
        if wakes and rule in NUDGE_RULES:
            nudge = nudge_key(str(e.refs.get("lineage", e.subject)), target)
        evs = self._pending.setdefault(target, {})
        evs[key] = e
        self._meta[key] = (target, rule, wakes, nudge)
        heap = self._heaps.setdefault(target, [])
        heapq.heappush(heap, (0 if wakes else 1, int(e.severity), e.at_ms, key))
        if len(heap) > 4 * len(evs) + 64:  # mostly stale entries: rebuild from what is pending
            self._heaps[target] = heap = [(0 if self._meta[k][2] else 1, int(x.severity), x.at_ms, k) for k, x in evs.items()]
            heapq.heapify(heap)
        if wakes:
            self._wakeable[target] = self._wakeable.get(target, 0) + 1
            if e.severity == Severity.P1:
                self._p1[target] = self._p1.get(target, 0) + 1
            kinds = self._kinds.setdefault(target, {})
            kinds[rule] = kinds.get(rule, 0) + 1
            kheap = self._kind_heaps.setdefault((target, rule), [])
            heapq.heappush(kheap, (int(e.severity), e.at_ms, key))
            if len(kheap) > 4 * kinds[rule] + 64:
                kheap[:] = [(int(x.severity), x.at_ms, k) for k, x in evs.items() if self._meta[k][1] == rule]
                heapq.heapify(kheap)
            refs = e.refs
            end = hold_end(e) if refs and ("expires_ms" in refs or "deadline_ms" in refs) else None
            if end is not None:
                heapq.heappush(self._deadlines.setdefault(target, []), (end, key))
                self._hold_ends[key] = end
                heapq.heappush(self._deadline_heap, (deadline_of(e) or end, key))
        heapq.heappush(self._ttl_heap, (since_ms + self.cfg.event_ttl_ms, key))

    def take(self, key: str) -> Event | None:
        meta = self._meta.pop(key, None)
        if meta is None:
            return None
        self._hold_ends.pop(key, None)
        target, rule, wakes, _n = meta
        evs = self._pending.get(target)
        e = evs.pop(key) if evs else None
        if evs is not None and not evs:
            del self._pending[target]
            self._heaps.pop(target, None)
        if wakes and e is not None:
            self._wakeable[target] -= 1
            if not self._wakeable[target]:
                del self._wakeable[target]
                self._deadlines.pop(target, None)
            kinds = self._kinds[target]
            kinds[rule] -= 1
            if not kinds[rule]:
                del kinds[rule]
                self._kind_heaps.pop((target, rule), None)
                if not kinds:
                    del self._kinds[target]
            if e.severity == Severity.P1:
                self._p1[target] -= 1
                if not self._p1[target]:
                    del self._p1[target]
        return e

    def expire(self) -> None:
        """Events pending longer than ``event_ttl_hours``, or past their own deadline, leave, each
        with an ``expired`` decision."""
        heap, rec = self._ttl_heap, self._rec
        while heap and heap[0][0] <= rec.now:
            _at, key = heapq.heappop(heap)
            if key in self._meta and self.take(key) is not None:
                rec.status(key, "expired")
                rec.decide(key, "expired", None, f"pending for {self.cfg.event_ttl_hours:g} h, nobody woken")
        heap = self._deadline_heap
        while heap and heap[0][0] <= rec.now:
            at, key = heapq.heappop(heap)
            meta = self._meta.get(key)
            if meta is not None and self.take(key) is not None:
                rec.status(key, "expired")
                rec.decide(key, "expired", meta[1], f"its deadline {iso(at)} passed before a wake")

    def peek(self, agent: str, wake_only: bool) -> Event | None:
        """The agent's most urgent pending event (wakeable ones first), from its lazy heap; stale
        entries are dropped, and so are events held by their nudge cooldown (6.2 item 2)."""
        heap = self._heaps.get(agent)
        while heap:
            nw, _sev, _at, key = heap[0]
            meta = self._meta.get(key)
            if meta is None or meta[0] != agent:
                heapq.heappop(heap)
                continue
            if nw and wake_only:
                return None
            if self._nudged(key, meta):
                heapq.heappop(heap)
                continue
            return self._pending[agent][key]
        return None

    def _nudged(self, key: str, meta: Meta) -> bool:
        """Whether the event ``key`` is held by its nudge cooldown; if so it is dropped (6.2 item 2)."""
        nk = meta[3]
        if nk is None:
            return False
        rec = self._rec
        until = rec.until(nk)
        if until <= rec.now:
            return False
        self.take(key)
        rec.status(key, "dropped")  # not kept: a reload must not bring it back
        rec.decide(key, "held_cooldown", meta[1], f"cooldown {nk} until {iso(until)} (dropped)")
        return True

    def has_deadlines_for(self, target: str) -> bool:
        """Whether an event with a deadline may be pending for ``target`` (stale entries included)."""
        return bool(self._deadlines.get(target))

    def has_deadlines(self) -> bool:
        """Whether any pending event has a deadline."""
        return bool(self._hold_ends)

    def hold_end_of(self, key: str) -> int | None:
        """Until when a cooldown may hold the pending event ``key`` (None: it has no deadline)."""
        return self._hold_ends.get(key)

    def kinds(self, agent: str) -> list[str]:
        """The signal kinds (rule names) of the agent's wakeable pending events."""
        return list(self._kinds.get(agent, ()))

    def best_of_kind(self, agent: str, kind: str) -> Event | None:
        """The agent's most urgent wakeable pending event of one signal kind (nudge-held ones dropped)."""
        heap = self._kind_heaps.get((agent, kind))
        while heap:
            _sev, _at, key = heap[0]
            meta = self._meta.get(key)
            if meta is None or meta[0] != agent or meta[1] != kind or not meta[2]:
                heapq.heappop(heap)
                continue
            if self._nudged(key, meta):
                heap = self._kind_heaps.get((agent, kind))  # take() may have removed the emptied heap
                continue
            return self._pending[agent][key]
        return None

    def deadline_due(self, agent: str) -> Event | None:
        """The agent's wakeable pending event whose deadline no cooldown may hold it past any more
        (``limits.hold_end`` reached), if any: the first of them. One whose deadline has passed
        meanwhile (the hourly ceiling held it) expires: nobody can act on it any more."""
        heap, rec = self._deadlines.get(agent), self._rec
        while heap:
            end, key = heap[0]
            meta = self._meta.get(key)
            if meta is None or meta[0] != agent or not meta[2]:
                heapq.heappop(heap)
                continue
            if end > rec.now:
                return None
            e = self._pending[agent][key]
            if (deadline_of(e) or 0) > rec.now:
                return e
            heapq.heappop(heap)
            self.take(key)
            rec.status(key, "expired")
            rec.decide(key, "expired", meta[1], f"its deadline {iso(deadline_of(e) or 0)} passed before a wake")
            heap = self._deadlines.get(agent)
        return None

    def take_with_deadline(self, agents: list[str], limit: int, metas: dict[str, Meta]) -> list[Event]:
        """Take up to ``limit`` of the agents' wakeable pending events that have a deadline, the
        nearest first: a wake carries them whatever woke it (they ride along before they are late)."""
        found = []
        for a in agents:
            for end, key in self._deadlines.get(a, ()):
                meta = self._meta.get(key)
                if meta is not None and meta[0] == a and meta[2]:
                    found.append((end, key))
        out = []
        for _end, key in sorted(found)[:limit]:
            metas[key] = self._meta[key]
            e = self.take(key)
            if e is not None:
                out.append(e)
        return out

    def deadline_next(self, agent: str) -> int | None:
        """When the next of the agent's deadlines ends a cooldown's hold (after ``deadline_due``)."""
        heap = self._deadlines.get(agent)
        return heap[0][0] if heap else None

    def select(self, sources: list[str], limit: int, wake_only: bool, metas: dict[str, Meta]) -> list[Event]:
        """Take up to ``limit`` most urgent events across the sources' heaps (a k-way merge,
        O(limit log n)); their routing meta goes into ``metas``."""
        front = []
        for a in sources:
            e = self.peek(a, wake_only)
            if e is not None:
                front.append((urgency(e), a))
        heapq.heapify(front)
        out: list[Event] = []
        while front and len(out) < limit:
            _u, a = heapq.heappop(front)
            e = self.peek(a, wake_only)  # still the top: nothing else touched this agent's heap
            heapq.heappop(self._heaps[a])
            out.append(e)
            metas[e.dedupe_key] = self._meta[e.dedupe_key]
            self.take(e.dedupe_key)
            nxt = self.peek(a, wake_only)
            if nxt is not None:
                heapq.heappush(front, (urgency(nxt), a))
        return out
