"""The final report of a reactor wake (design 10.2): the ``reactor_report`` command, and its checks.

The local cognitive core ends a wake with ``reactor_report`` (one command, the report's keys as
its arguments); an external agent prints the same object as its last JSON line of output. Both go
through ``normalize``: the argument schema checks types and sizes (a command that fails it never
runs, ``commands.extract`` says why), ``normalize`` the rules between fields, and the reactor's own
``parse_report`` must accept what comes out. The result is one plain dict with every key, which
the wake returns to the reactor (it checks each claim against the store later, ``traces``).
Pure: no I/O, no clock.
"""

from __future__ import annotations

from datetime import datetime, timezone
from typing import Any

from meshnode.cognition.command_types import command
from meshnode.container.schema import WrongValue, boolean, described, list_of, text
from meshnode.errors import MeshnodeError
from meshnode.reactor.report import last_json_object  # one reading of agent output
from meshnode.reactor.report import parse_report

REPORT_KEYS = ("processed_messages", "task_updates", "outgoing_messages", "blocked", "blocked_reason",
               "needs_human", "next_check_at")
ASYNC_TYPES = ("reactor_report",)  # the cycle records it for the running wake (cognition/wake.py)
MAX_ITEMS = 100  # ids per list: a wake handles at most a few dozen events
MAX_REF = 128  # a note, container or lineage id (short or full)
MIN_REASON = 20  # a blocker's reason, as long as a blocker note's must be (design 10.1)
MAX_REASON = 1000


class ReportError(MeshnodeError):
    """A final report that cannot be taken: the reason names the field."""


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
command("reactor_report", "end a ## Wake: what you handled, updated, sent; blocked? need a person? next check",
        {**FIELDS, "job_id": (text(MAX_REF), False)})


def normalize(args: dict, now_ms: int | None = None) -> dict:
    """The report with every key (defaults filled), or ReportError naming what is wrong."""
    if not isinstance(args, dict):
        raise ReportError("bad_report", "a final report is a JSON object")
    unknown = sorted(set(args) - set(REPORT_KEYS))
    if unknown:
        raise ReportError("bad_report", f"a final report has no field {unknown[0][:40]!r}; its fields: "
                          + ", ".join(REPORT_KEYS))
    for name, (check, _) in FIELDS.items():
        err = check(args[name]) if name in args else None
        if err:
            raise ReportError("bad_report", f"{name} {err}")
    out = {"processed_messages": list(args.get("processed_messages", [])),
           "task_updates": list(args.get("task_updates", [])),
           "outgoing_messages": list(args.get("outgoing_messages", [])),
           "blocked": args.get("blocked", False), "blocked_reason": args.get("blocked_reason", "").strip(),
           "needs_human": args.get("needs_human", False), "next_check_at": args.get("next_check_at")}
    if out["blocked"] and len(out["blocked_reason"]) < MIN_REASON:
        raise ReportError("bad_report", f"blocked: true needs a blocked_reason of at least {MIN_REASON} characters"
                          " saying what blocks you and who could unblock it")
    if parse_report(out, now_ms=now_ms) is None:
        raise ReportError("bad_report", "the reactor cannot read this report")
    return out


def last_report(stdout: str, now_ms: int | None = None) -> tuple[dict | None, str | None]:
    """An external agent's report: the last output line that is a JSON object with report keys
    (found as the reactor finds it), normalized; (None, why) when there is none or it is wrong."""
    value = last_json_object(stdout)
    if value is None:
        return None, "no final report (a JSON object with the report's keys on a line of its own)"
    try:
        return normalize(value, now_ms), None
    except ReportError as exc:
        return None, exc.reason
