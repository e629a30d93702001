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
from meshnode.engines.reactor.limits import NUDGE_RULES, iso, nudge_key
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

    def __len__(self) -> int:
        return len(self._meta)

    def holds(self, key: str) -> bool:
        return key in self._meta

    def meta(self, key: str) -> Meta | None:
        return self._meta.get(key)

    def get(self, key: str) -> Event | None:
        meta = self._meta.get(key)
        return None if meta is None else self._pending.get(meta[0], {}).get(key)

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
        heapq.heappush(self._ttl_heap, (since_ms + self.cfg.event_ttl_ms, key))

    def take(self, key: str) -> Event | None:
        meta = self._meta.pop(key, None)
        if meta is None:
            return None
        target, _rule, wakes, _n = meta
        evs = self._pending.get(target)
        e = evs.pop(key) if evs else None
        if evs is not None and not evs:
            del self._pending[target]
            self._heaps.pop(target, None)
        if wakes and e is not None:
            self._wakeable[target] -= 1
            if not self._wakeable[target]:
                del self._wakeable[target]
            if e.severity == Severity.P1:
                self._p1[target] -= 1
                if not self._p1[target]:
                    del self._p1[target]
        return e

    def expire(self) -> None:
        """Events pending longer than ``event_ttl_hours`` leave, each with an ``expired`` decision."""
        heap, rec = self._ttl_heap, self._rec
        while heap and heap[0][0] <= rec.now:
            _at, key = heapq.heappop(heap)
            if key in self._meta and self.take(key) is not None:
                rec.status(key, "expired")
                rec.decide(key, "expired", None, f"pending for {self.cfg.event_ttl_hours:g} h, nobody woken")

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
            nk = meta[3]
            if nk is not None:
                rec = self._rec
                until = rec.until(nk)
                if until > rec.now:
                    heapq.heappop(heap)
                    self.take(key)
                    rec.status(key, "dropped")  # not kept: a reload must not bring it back
                    rec.decide(key, "held_cooldown", meta[1], f"cooldown {nk} until {iso(until)} (dropped)")
                    continue
            return self._pending[agent][key]
        return None

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
