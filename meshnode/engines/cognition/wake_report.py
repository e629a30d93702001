"""The final report of a reactor wake (design 10.2): the checks of ``reactor_report``.

The local cognitive core ends a wake with ``reactor_report`` (one command, the report's keys as
its arguments; its type is in ``kinds/report.py``); an external agent prints the same object as its
last JSON line of output. Both go through ``normalize``: the argument schema checks types and sizes (a command that fails it never
runs, ``commands.extract`` says why), ``normalize`` the rules between fields, and the reactor's own
``parse_report`` must accept what comes out. The result is one plain dict with every key, which
the wake returns to the reactor (it checks each claim against the store later, ``traces``).
Pure: no I/O, no clock.
"""

from __future__ import annotations

from meshnode.engines.cognition.kinds.report import FIELDS
from meshnode.base.errors import MeshnodeError
from meshnode.engines.reactor.report import last_json_object  # one reading of agent output
from meshnode.engines.reactor.report import parse_report

REPORT_KEYS = ("processed_messages", "task_updates", "outgoing_messages", "blocked", "blocked_reason",
               "needs_human", "next_check_at")
ASYNC_TYPES = ("reactor_report",)  # the cycle records it for the running wake (cognition/wake.py)
MIN_REASON = 20  # a blocker's reason, as long as a blocker note's must be (design 10.1)


class ReportError(MeshnodeError):
    """A final report that cannot be taken: the reason names the field."""


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
