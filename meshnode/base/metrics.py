"""Counters, histograms and gauges: every rejection, drop and disconnect is counted, never silent.

A deliberately small registry (name + labels -> value), read through the control channel
(``meshnode metrics``), by ``/metrics`` (web/prom.py) and by tests. Not thread-safe by design:
it is touched only from the trio thread.

- counters (``inc``): integers that only grow (``snapshot()``, unchanged since the first release);
- histograms (``observe``): durations in seconds over the fixed ``BUCKETS``;
- gauges (``set``): a last value (a queue length, the last scan's duration).
"""

from __future__ import annotations

import bisect
from collections import Counter

# Seconds: from a 5 ms SQLite write to a 2-minute LLM answer.
BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120)

Key = tuple[str, tuple[tuple[str, str], ...]]


def _key(name: str, labels: dict) -> Key:
    return (name, tuple(sorted((k, str(v)) for k, v in labels.items())))


class _Histogram:
    __slots__ = ("counts", "sum", "count")

    def __init__(self) -> None:
        self.counts = [0] * (len(BUCKETS) + 1)  # the last slot is +Inf
        self.sum = 0.0
        self.count = 0

    def add(self, value: float) -> None:
        self.counts[bisect.bisect_left(BUCKETS, value)] += 1
        self.sum += value
        self.count += 1

    def cumulative(self) -> list[list]:
        """``[[le, count of values <= le], ...]`` over BUCKETS; +Inf is left out (it is ``count``),
        so the result is plain JSON."""
        out, running = [], 0
        for le, n in zip(BUCKETS, self.counts):
            running += n
            out.append([le, running])
        return out


class Metrics:
    def __init__(self) -> None:
        self._counts: Counter[Key] = Counter()
        self._hists: dict[Key, _Histogram] = {}
        self._gauges: dict[Key, float] = {}

    def inc(self, name: str, n: int = 1, **labels: str) -> None:
        self._counts[(name, tuple(sorted(labels.items())))] += n

    def get(self, name: str, **labels: str) -> int:
        """The count for exactly these labels; with no labels, the sum over all labels."""
        if labels:
            return self._counts[(name, tuple(sorted(labels.items())))]
        return sum(v for (n, _), v in self._counts.items() if n == name)

    def observe(self, name: str, seconds: float, **labels: str) -> None:
        """One duration (seconds) into the histogram ``name`` (fixed ``BUCKETS``; ``le`` is inclusive)."""
        key = _key(name, labels)
        hist = self._hists.get(key)
        if hist is None:
            hist = self._hists[key] = _Histogram()
        hist.add(max(0.0, float(seconds)))

    def set(self, name: str, value: float, **labels: str) -> None:
        """The gauge ``name`` takes this value (the last one wins)."""
        self._gauges[_key(name, labels)] = float(value)

    def gauge(self, name: str, **labels: str) -> float | None:
        return self._gauges.get(_key(name, labels))

    def snapshot(self) -> list[dict]:
        return [{"name": name, "labels": dict(labels), "value": value}
                for (name, labels), value in sorted(self._counts.items())]

    def histograms(self) -> list[dict]:
        """``{name, labels, buckets: [[le, cumulative count], ...], sum, count}`` (+Inf is ``count``)."""
        return [{"name": name, "labels": dict(labels), "buckets": h.cumulative(), "sum": h.sum, "count": h.count}
                for (name, labels), h in sorted(self._hists.items())]

    def gauges(self) -> list[dict]:
        return [{"name": name, "labels": dict(labels), "value": value}
                for (name, labels), value in sorted(self._gauges.items())]
