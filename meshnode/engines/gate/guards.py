"""Loop and iteration guards on tool calls (seed 004), as plain state machines.

The loop detector keeps the signatures (tool and canonical arguments) of the
last ``window`` calls; a call whose signature already occurs ``max_repeats``
times there is refused, and the LLM is told why. The iteration limiter caps
the calls of one piece of work; its count starts again when the work changes
(a new task or goal), after a quiet period without calls, when the agent
submits its drafts as ready, or when a person resets it (``gate.budget``
carries those from the store). Both report to the anti-stagnation reflex
through the gate.
"""

from __future__ import annotations

import hashlib
import json
from collections import Counter, deque

from meshnode.engines.gate import GateError


def signature(tool: str, args: dict) -> str:
    return hashlib.sha256(json.dumps([tool, args], sort_keys=True, ensure_ascii=False).encode()).hexdigest()[:16]


class LoopDetector:
    def __init__(self, window: int = 20, max_repeats: int = 3):
        self.window, self.max_repeats = window, max_repeats
        self._recent: deque[str] = deque(maxlen=window)

    def check(self, tool: str, args: dict) -> None:
        sig = signature(tool, args)
        seen = Counter(self._recent)[sig]
        if seen >= self.max_repeats:
            raise GateError("loop", f"{tool} with these arguments ran {seen} times in the last {len(self._recent)}"
                            " calls; the result will not change: try another approach")
        self._recent.append(sig)


class IterationLimiter:
    """Time is passed in (``now_ms``). A refused attempt counts as activity: an agent that keeps
    trying never reaches the quiet period, only a change of work or a person ends its wait."""

    def __init__(self, max_calls: int = 200, quiet_ms: int = 600_000):
        self.max_calls, self.quiet_ms = max_calls, quiet_ms
        self.work: str | None = None
        self.calls = 0
        self._last_ms: int | None = None

    def check(self, work: str, now_ms: int) -> None:
        if work != self.work or (self._last_ms is not None and now_ms - self._last_ms >= self.quiet_ms):
            self.work, self.calls = work, 0
        self._last_ms = now_ms
        if self.calls >= self.max_calls:
            raise GateError("iteration_limit", f"{self.calls} tool calls on this piece of work, the limit; finish,"
                            " submit your drafts or ask the user. The count starts again with a new task or goal,"
                            f" after {duration(self.quiet_ms)} without tool calls, or when a person"
                            " resets it")
        self.calls += 1

    @property
    def exhausted(self) -> bool:
        return self.calls >= self.max_calls

    def reset(self) -> None:
        self.calls, self._last_ms = 0, None


def duration(ms: int) -> str:
    return f"{ms // 60_000} minute(s)" if ms >= 120_000 else f"{ms // 1000} second(s)"
