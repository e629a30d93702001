"""The type of ``reactor_report``, the final report of a reactor wake, and the checks of its fields.

The fields' checks are shared with ``wake_report.normalize``, which an external agent's report
passes too. Pure: no I/O, no clock.
"""

from __future__ import annotations

from datetime import datetime, timezone
from typing import Any

from meshnode.engines.cognition.command_kind import kind
from meshnode.base.container.schema import WrongValue, boolean, described, list_of, text

MAX_ITEMS = 100  # ids per list: a wake handles at most a few dozen events
MAX_REF = 128  # a note, container or lineage id (short or full)
MAX_REASON = 1000


def _ref(v: Any) -> str | None:
    if type(v) is int:
        return None if 0 <= v < 2**63 else WrongValue("must be a note id >= 0")
    if type(v) is not str:
        return "must be an id (text) or a note number"
    return WrongValue(f"must be a non-blank id of at most {MAX_REF} characters") \
        if not v.strip() or len(v) > MAX_REF else None


described(_ref, {"anyOf": [{"type": "string", "maxLength": MAX_REF}, {"type": "integer", "minimum": 0}]})


def parse_time(v: str) -> int:
    """ISO 8601 date-time (``2026-12-02T12:00:00Z``; no zone = UTC) -> ms since the epoch."""
    at = datetime.fromisoformat(v.strip())
    if at.tzinfo is None:
        at = at.replace(tzinfo=timezone.utc)
    return int(at.timestamp() * 1000)


def _time(v: Any) -> str | None:
    if type(v) is int:  # ms since the epoch, as the reactor also reads it
        return None if 0 <= v < 2**53 else WrongValue("must be ms since the epoch or an ISO 8601 date-time")
    if type(v) is not str or len(v) > 40:
        return "must be an ISO 8601 date-time such as 2026-12-02T12:00:00Z"
    try:
        parse_time(v)
    except (ValueError, OverflowError):
        return WrongValue("must be an ISO 8601 date-time such as 2026-12-02T12:00:00Z")
    return None


described(_time, {"anyOf": [{"type": "string", "maxLength": 40, "format": "date-time"},
                            {"type": "integer", "minimum": 0}]})

_refs = list_of(_ref, max_items=MAX_ITEMS)
FIELDS = {
    "processed_messages": (_refs, False),
    "task_updates": (list_of(text(MAX_REF), max_items=MAX_ITEMS), False),
    "outgoing_messages": (_refs, False),
    "blocked": (boolean, False),
    "blocked_reason": (text(MAX_REASON), False),
    "needs_human": (boolean, False),
    "next_check_at": (_time, False),
}

TYPES = (
    kind("reactor_report", "end a ## Wake: what you handled, updated, sent; blocked? need a person? next check",
         {**FIELDS, "job_id": (text(MAX_REF), False)}),
)
