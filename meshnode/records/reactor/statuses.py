"""The statuses the reactor's rows go through, and the time units their queries use."""

from __future__ import annotations

OPEN_JOB_STATUSES = ("queued", "leased", "running", "checking")
JOB_STATUSES = OPEN_JOB_STATUSES + ("ok", "failed", "interrupted", "skipped")
WAITING_STATUSES = ("pending", "held", "digest")  # accepted, waiting for a wake (held: a cooldown or budget;
# not "dropped": taken out by its nudge cooldown, never pending again)
HOUR_MS = 3_600_000
DAY_MS = 24 * HOUR_MS
COOLDOWN_PREFIXES = ("wake:", "nudge:", "msg:")  # the cooldown rows a person lists and lifts (not esc:, int:, check:)
