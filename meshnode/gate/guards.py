"""Loop and iteration guards on tool calls (seed 004), as plain state machines.

The loop detector keeps the signatures (tool and canonical arguments) of the
last ``window`` calls; a call whose signature already occurs ``max_repeats``
times there is refused, and the LLM is told why. The iteration limiter caps
calls per task. Both report to the anti-stagnation reflex through the gate.
"""

from __future__ import annotations

import hashlib
import json
from collections import Counter, deque

from meshnode.gate import GateError


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
    def __init__(self, max_calls: int = 200):
        self.max_calls = max_calls
        self._calls: Counter[str] = Counter()

    def check(self, task: str) -> None:
        if self._calls[task] >= self.max_calls:
            raise GateError("iteration_limit", f"{task} made {self._calls[task]} tool calls, the limit; finish,"
                            " submit your drafts or ask the user")
        self._calls[task] += 1

    def reset(self, task: str) -> None:
        self._calls.pop(task, None)
