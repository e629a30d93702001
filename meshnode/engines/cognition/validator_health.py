"""Validators that keep failing are set aside for a while, so one dead or confused validator
cannot hold every command (issue 12, item 11).

A validator (a validator LLM by its registry name, or a peer by its DID) that
gives no verdict ``failures`` times in a row -- unreachable, or answering
out of form -- is set aside: it is not asked until ``retry_ms`` have passed,
then asked once more. A verdict in form puts it back at once; another
failure sets it aside again. Sans-IO: time is passed in; the state lives
with the running cycle (a restart asks everyone again).
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass
class _State:
    failures: int = 0  # in a row
    last_error: str | None = None
    aside_until_ms: int | None = None
    times_aside: int = 0


class ValidatorHealth:
    def __init__(self, failures: int = 3, retry_ms: int = 300_000):
        self.failures, self.retry_ms = max(1, int(failures)), max(0, int(retry_ms))
        self._state: dict[str, _State] = {}

    def usable(self, name: str, now_ms: int) -> bool:
        """Whether to ask ``name`` now: it is not set aside, or its time to be re-tried has come."""
        s = self._state.get(name)
        return s is None or s.aside_until_ms is None or now_ms >= s.aside_until_ms

    def record(self, name: str, ok: bool, now_ms: int, error: str | None = None) -> str | None:
        """Note one answer; returns "set_aside" when this failure sets it aside, "back" when a
        verdict ends a time aside, else None."""
        s = self._state.setdefault(name, _State())
        if ok:
            was_aside = s.aside_until_ms is not None
            self._state[name] = _State(times_aside=s.times_aside)
            return "back" if was_aside else None
        s.failures += 1
        s.last_error = error
        if s.failures >= self.failures:
            s.aside_until_ms = now_ms + self.retry_ms
            s.times_aside += 1
            return "set_aside"
        return None

    def set_aside(self, now_ms: int) -> list[str]:
        """Names not to ask now."""
        return sorted(n for n in self._state if not self.usable(n, now_ms))

    def snapshot(self, now_ms: int) -> dict[str, dict]:
        """Every validator with a failure on record: failures in a row, the last error, whether
        it is set aside (until it gives a verdict again), and when it is asked again."""
        out = {}
        for name, s in sorted(self._state.items()):
            if s.failures or s.aside_until_ms is not None:
                out[name] = {"failures_in_row": s.failures, "last_error": s.last_error,
                             "set_aside": s.aside_until_ms is not None, "retry_at_ms": s.aside_until_ms,
                             "retry_due": s.aside_until_ms is not None and now_ms >= s.aside_until_ms,
                             "times_set_aside": s.times_aside}
        return out
