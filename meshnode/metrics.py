"""Counters: every rejection, drop and disconnect is counted, never silent.

A deliberately small registry (name + labels -> integer), read through the
control channel (``meshnode metrics``) and by tests. Not thread-safe by
design: it is touched only from the trio thread.
"""

from __future__ import annotations

from collections import Counter


class Metrics:
    def __init__(self) -> None:
        self._counts: Counter[tuple[str, tuple[tuple[str, str], ...]]] = Counter()

    def inc(self, name: str, n: int = 1, **labels: str) -> None:
        self._counts[(name, tuple(sorted(labels.items())))] += n

    def get(self, name: str, **labels: str) -> int:
        """The count for exactly these labels; with no labels, the sum over all labels."""
        if labels:
            return self._counts[(name, tuple(sorted(labels.items())))]
        return sum(v for (n, _), v in self._counts.items() if n == name)

    def snapshot(self) -> list[dict]:
        return [{"name": name, "labels": dict(labels), "value": value}
                for (name, labels), value in sorted(self._counts.items())]
