"""The rules table and the limits the core applies per scan (design 6.1, 6.2). Pure.

``RULES`` is the built-in table (``meshnode reactor rules`` prints it); ``rule_for`` picks the rule of
an event type with the config's re-routes and switched-off rules. ``HourWindow`` is the node-wide
hourly wake ceiling; cooldown keys and the message limit of ``Reactor.may_send`` live here too, so
the core only decides *when* to apply them.
"""

from __future__ import annotations

from collections import deque
from dataclasses import replace
from datetime import datetime, timezone

from meshnode.engines.reactor.types import Rule
from meshnode.records.reactor.cooldowns import parts as cooldown_parts
from meshnode.records.reactor.statuses import COOLDOWN_PREFIXES

# the cooldown rows a person lists and lifts, and a row's key in words (records.reactor.cooldowns)
__all__ = ["COOLDOWN_PREFIXES", "cooldown_parts"]

HOUR_MS = 3_600_000


def iso(ms: int) -> str:
    return datetime.fromtimestamp(ms / 1000, tz=timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def short(agent: str) -> str:
    """A short, readable form of an agent id for job ids (a DID's tail, a name's head)."""
    return agent[-8:] if agent.startswith("did:") else agent[:8]

RULES: tuple[Rule, ...] = (
    Rule("direct_note", frozenset({"note.direct", "note.question", "note.reply", "note.escalation",
                                   "note.flood", "thread.unanswered"}), "agent", False, True),
    Rule("offer", frozenset({"task.offer"}), "agent", False, True),
    Rule("task_due", frozenset({"task.due", "task.overdue", "task.fork", "task.unheld", "task.holder_dead",
                                "self.check"}), "agent", True, True),
    Rule("task_stale", frozenset({"task.stale"}), "mentor", True, True),
    Rule("task_progress", frozenset({"task.progress"}), "agent", False, True),
    Rule("task_result", frozenset({"task.result"}), "agent", False, True),
    Rule("heartbeat_stale", frozenset({"liveness.stale"}), "agent", False, True),
    Rule("heartbeat_dead", frozenset({"liveness.dead"}), "mentor", False, True),
    Rule("consensus", frozenset({"consensus.waiting"}), "agent", False, True),
    Rule("person", frozenset({"person.confirmation", "person.draft", "person.held", "adapter.failed"}),
         "operator", False, True),
    Rule("info", frozenset({"liveness.quiet", "liveness.back"}), "info", False, False),
)
_BY_TYPE = {t: r for r in RULES for t in r.event_types}
# Kinds whose wakes start no wake cooldown: each of their signals is one task finished by another,
# once (its dedupe key is the finishing version), and the delegator's goal waits on it; the hourly
# ceiling still holds.
UNCOOLED = frozenset({"task_result"})
NUDGE_RULES = frozenset(r.name for r in RULES if r.nudge)
_EXT = Rule("ext", frozenset(), "event", False, True)  # route: the event's suggested_route


def rule_for(event_type: str, suggested_route: str, cfg) -> tuple[Rule, str, bool]:
    """(rule, route, off) for an event type. Route is agent|mentor|operator|coordinator|info or an
    agent id from ``[reactor.routes]``; off: the rule is in ``rules_off`` (digest only)."""
    rule = _BY_TYPE.get(event_type)
    if rule is None:
        rule = _EXT if event_type.startswith("ext.") else replace(_EXT, name="other")
    route = rule.route
    if route == "event":
        route = suggested_route if suggested_route in ("agent", "mentor", "operator", "coordinator") else "agent"
    route = cfg.routes.get(event_type, route)
    off = rule.name in cfg.rules_off
    return rule, route, off


def rules_table(cfg) -> list[dict]:
    """The rules as shown by ``meshnode reactor rules``, with the config's changes."""
    out = []
    for r in RULES + (_EXT,):
        types = sorted(r.event_types) or ["ext.*"]
        routes = {t: cfg.routes[t] for t in types if t in cfg.routes}
        out.append({"rule": r.name, "events": types, "route": r.route, "nudge": r.nudge, "wakes": r.wakes,
                    "off": r.name in cfg.rules_off, "rerouted": routes})
    return out


def nudge_key(lineage: str, agent: str) -> str:
    return f"nudge:{lineage}:{agent}"


def wake_key(agent: str, kind: str) -> str:
    """The wake cooldown of one signal kind (a rule's name) for one agent: ``wake:<agent>:<kind>``."""
    return f"wake:{agent}:{kind}"


def legacy_wake_key(agent: str) -> str:
    """The per-agent wake cooldown rows of before (``wake:<agent>``): still honoured, for every kind,
    until they end (a store written by an older node), and listed and cleared like the others."""
    return f"wake:{agent}"




DEADLINE_LEAD_MS = 30 * 60_000  # a signal with a deadline wakes at the latest this long before it


def deadline_of(e) -> int | None:
    """The signal's own deadline (ms), when it has one: an offer's or a confirmation's expiry."""
    v = e.refs.get("expires_ms") or e.refs.get("deadline_ms") if e.refs else None
    return v if type(v) is int and v > 0 else None


def hold_end(e) -> int | None:
    """Until when a cooldown may hold the event ``e`` (None: no deadline, the cooldown's end): its
    deadline less a lead of half the time it was given, at most ``DEADLINE_LEAD_MS``; an offer valid
    for 1 h wakes 30 min before it expires, one valid for 10 min 5 min before."""
    d = deadline_of(e)
    if d is None:
        return None
    return d - min(DEADLINE_LEAD_MS, max(0, (d - e.at_ms) // 2))


class HourWindow:
    """Wake times of the last hour, node-wide (the hard ceiling of 6.2 item 5)."""

    __slots__ = ("_q",)

    def __init__(self, wakes=()) -> None:
        self._q: deque[tuple[int, str]] = deque(sorted(wakes))

    def used(self, now_ms: int) -> int:
        q = self._q
        while q and q[0][0] <= now_ms - HOUR_MS:
            q.popleft()
        return len(q)

    def add(self, now_ms: int, agent: str) -> None:
        self._q.append((now_ms, agent))

    def items(self) -> list[tuple[int, str]]:
        return list(self._q)


def message_allowed(cooldowns: dict, src: str, dst: str, thread: str, now_ms: int, per_hour: int) -> tuple[bool, tuple[int, int] | None]:
    """(allowed, new cooldown value) for one message src -> dst in thread (6.2 item 6): a fixed
    one-hour window opened by the first message, at most ``per_hour`` messages in it."""
    key = f"msg:{src}:{dst}:{thread}"
    until, count = cooldowns.get(key, (0, 0))
    if until <= now_ms:
        return True, (now_ms + HOUR_MS, 1)
    if count < per_hour:
        return True, (until, count + 1)
    return False, None
