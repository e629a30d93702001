"""The discrete-event loop: events in time order, ties in the order they were scheduled.

Everything random draws from one ``random.Random(seed)``, and events at the
same time run in scheduling order, so a run is reproducible from its seed.

Time is whole simulated milliseconds, so the queue is a calendar: one list of
``(fn, args)`` per millisecond that has events, and a heap of those
milliseconds. Scheduling is an append (no per-event object, no tuple
comparisons in a heap of millions); the order is the same as a heap of
``(time, sequence)`` would give.
"""

from __future__ import annotations

import heapq
from typing import Any, Callable


class Loop:
    def __init__(self) -> None:
        self.now = 0  # simulated milliseconds
        self._slots: dict[int, list[tuple[Callable[..., None], tuple[Any, ...]]]] = {}
        self._times: list[int] = []  # the milliseconds in _slots, as a heap
        self._current: list = []  # the slot being run (events scheduled for now are appended to it)
        self._next = 0  # index of the next event in _current
        self._size = 0
        self.steps = 0

    def at(self, when: int, fn: Callable[..., None], *args: Any) -> None:
        when = int(when)
        if when <= self.now:
            when = self.now
            if self._current is self._slots.get(when):
                self._current.append((fn, args))
                self._size += 1
                return
        slot = self._slots.get(when)
        if slot is None:
            self._slots[when] = slot = []
            heapq.heappush(self._times, when)
        slot.append((fn, args))
        self._size += 1

    def after(self, delay: int, fn: Callable[..., None], *args: Any) -> None:
        self.at(self.now + delay, fn, *args)

    def later(self, delay: int, fn: Callable[..., None], args: tuple) -> None:
        """``fn(*args)`` ``delay`` >= 1 ms from now: ``after`` without its checks, for the network's
        millions of deliveries."""
        when = self.now + delay
        slot = self._slots.get(when)
        if slot is None:
            self._slots[when] = slot = []
            heapq.heappush(self._times, when)
        slot.append((fn, args))
        self._size += 1

    def step(self) -> bool:
        """Run the next event; False when none is left."""
        if self._next >= len(self._current):
            if self._current:
                del self._slots[self.now]
                self._current, self._next = [], 0
            if not self._times:
                return False
            self.now = heapq.heappop(self._times)
            self._current = self._slots[self.now]
        fn, args = self._current[self._next]
        self._current[self._next] = None  # let the payload go once it has run
        self._next += 1
        self._size -= 1
        self.steps += 1
        fn(*args)
        return True

    def __len__(self) -> int:
        return self._size
