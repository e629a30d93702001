"""What one reactor step says, written as it goes: decisions, status changes, touched jobs, cooldown rows.

The core, its pending queues and its after-run ladder all write into the same ``Step``; this object is
what they share, given to each at construction, so none reaches into another's fields. It holds the
step's time (``now``: passed in, never read from a clock) and the live cooldown table, because every
write to that table is also a row of the step (``Step.changed.cooldowns``) for the driver to persist.
"""

from __future__ import annotations

from meshnode.engines.reactor.types import Decision, Step, WakeJob


class StepRecord:
    def __init__(self, cooldowns: dict[str, tuple[int, int]]) -> None:
        self.cooldowns = cooldowns  # key -> (until_ms, count): wake, nudge, msg, esc, check, int rows
        self.now = 0
        self.step = Step()
        self.undecided: set[str] = set()  # accepted this step, pending, no decision yet (the plan gives one)
        self._touched: set[str] = set()

    def begin(self, now_ms: int) -> Step:
        """A new step at ``now_ms``: an empty ``Step`` to fill."""
        self.now = now_ms
        self.step = Step()
        self.undecided = set()
        self._touched = set()
        return self.step

    def decide(self, key: str, action: str, rule: str | None, why: str, job_id: str | None = None) -> None:
        self.step.decisions.append(Decision(self.now, key, action, rule, why, job_id))
        self.undecided.discard(key)

    def status(self, key: str, status: str, job_id: str | None = None) -> None:
        self.step.changed.event_status[key] = (status, job_id)

    def until(self, key: str) -> int:
        """When the cooldown row ``key`` ends (0: none)."""
        return self.cooldowns.get(key, (0, 0))[0]

    def set_cooldown(self, key: str, until: int, count: int) -> None:
        if until:
            self.cooldowns[key] = (until, count)
        else:
            self.cooldowns.pop(key, None)
        self.step.changed.cooldowns[key] = (until, count)

    def touch(self, job: WakeJob) -> None:
        """The job changed this step: persisted once with the step, however often it moved."""
        if job.job_id not in self._touched:
            self._touched.add(job.job_id)
            self.step.changed.jobs.append(job)
