"""The final report an agent ends a wake with, and the status-only test (design 10.1, 10.2). Pure.

A report is a JSON object (the local core's ``reactor_report`` command arguments, or the last JSON
line an external agent prints). ``parse_report`` is lenient about shapes that mean the same thing
(note ids as numbers or strings, ``next_check_at`` as RFC 3339 or ms) and strict about the rest:
anything that is not a report is None, never a half-read one.
"""

from __future__ import annotations

import json
import re
from datetime import datetime, timezone
from typing import Any

from meshnode.engines.reactor.types import FinalReport

REPORT_KEYS = ("processed_messages", "task_updates", "outgoing_messages", "blocked", "needs_human", "next_check_at")
MIN_NEXT_CHECK_MS = 10 * 60_000
MAX_NEXT_CHECK_MS = 7 * 86_400_000
_MAX_IDS = 200
_PUNCT = re.compile(r"[^\w\s]+")


def _ids(x: Any) -> tuple[str, ...] | None:
    if x is None:
        return ()
    if not isinstance(x, list) or len(x) > _MAX_IDS:
        return None
    out = []
    for i in x:
        if isinstance(i, bool) or not isinstance(i, (int, str)) or (isinstance(i, str) and not 0 < len(i) <= 200):
            return None
        out.append(str(i))
    return tuple(out)


def _when(x: Any) -> int | None | bool:
    """ms, None (absent), or False (malformed)."""
    if x is None or x == "":
        return None
    if isinstance(x, bool):
        return False
    if isinstance(x, (int, float)):
        return int(x)
    if isinstance(x, str):
        try:
            dt = datetime.fromisoformat(x.replace("Z", "+00:00"))
        except ValueError:
            return False
        if dt.tzinfo is None:
            dt = dt.replace(tzinfo=timezone.utc)
        return int(dt.timestamp() * 1000)
    return False


def last_json_object(text: str) -> dict | None:
    """The last line of ``text`` that is a JSON object with at least one report key, or None
    (an agent's output: logs first, the report last)."""
    for line in reversed(text.strip().splitlines()):
        line = line.strip()
        if not line.startswith("{"):
            continue
        try:
            obj = json.loads(line)
        except (ValueError, RecursionError):  # RecursionError: a line of nested brackets
            continue
        if isinstance(obj, dict) and any(k in obj for k in REPORT_KEYS):
            return obj
    return None




def parse_report(text_or_obj: str | dict | None, now_ms: int | None = None) -> FinalReport | None:
    """A FinalReport from a dict or from the last JSON line of a text; None when there is none or
    it is malformed. With ``now_ms``, next_check_at is clamped to [now + 10 min, now + 7 days]."""
    if isinstance(text_or_obj, str):
        obj = last_json_object(text_or_obj)
    elif isinstance(text_or_obj, dict):
        obj = text_or_obj
    else:
        return None
    if obj is None or not any(k in obj for k in REPORT_KEYS):
        return None
    processed, updates, outgoing = (_ids(obj.get(k)) for k in ("processed_messages", "task_updates", "outgoing_messages"))
    if processed is None or updates is None or outgoing is None:
        return None
    blocked, needs_human = obj.get("blocked", False), obj.get("needs_human", False)
    if not isinstance(blocked, bool) or not isinstance(needs_human, bool):
        return None
    reason = obj.get("blocked_reason", obj.get("reason", ""))
    if not isinstance(reason, str):
        return None
    at = _when(obj.get("next_check_at", obj.get("next_check_at_ms")))
    if at is False:
        return None
    if at is not None and now_ms is not None:
        at = min(max(at, now_ms + MIN_NEXT_CHECK_MS), now_ms + MAX_NEXT_CHECK_MS)
    return FinalReport(processed_messages=processed, task_updates=updates, outgoing_messages=outgoing,
                       blocked=blocked, blocked_reason=reason[:1000], needs_human=needs_human,
                       next_check_at_ms=at)


def status_only(text: str, phrases) -> bool:
    """True when a reply says nothing: shorter than 20 characters once lower-cased and stripped of
    punctuation, or one of the configured phrases. Such a reply is never a trace."""
    t = " ".join(_PUNCT.sub(" ", text.casefold()).split())
    if len(t) < 20:
        return True
    return t in {" ".join(_PUNCT.sub(" ", p.casefold()).split()) for p in phrases}
