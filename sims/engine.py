"""The discrete-event loop: events in time order, ties in the order they were scheduled.

Everything random draws from one ``random.Random(seed)``, and events at the
same time run in scheduling order, so a run is reproducible from its seed.
"""

from __future__ import annotations

import heapq
import itertools
from typing import Any, Callable


class Loop:
    def __init__(self) -> None:
        self.now = 0  # simulated milliseconds
        self._queue: list[tuple[int, int, Callable[..., None], tuple[Any, ...]]] = []
        self._seq = itertools.count()
        self.steps = 0

    def at(self, when: int, fn: Callable[..., None], *args: Any) -> None:
        heapq.heappush(self._queue, (max(int(when), self.now), next(self._seq), fn, args))

    def after(self, delay: int, fn: Callable[..., None], *args: Any) -> None:
        self.at(self.now + delay, fn, *args)

    def step(self) -> bool:
        """Run the next event; False when none is left."""
        if not self._queue:
            return False
        self.now, _, fn, args = heapq.heappop(self._queue)
        self.steps += 1
        fn(*args)
        return True

    def __len__(self) -> int:
        return len(self._queue)
