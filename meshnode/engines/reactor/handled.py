"""Which events were handled outside a wake (design 6.3): the agent's regular tick answered the
message, updated the task, signed the receipt. Read with ``store.read``.

The same traces a wake's check looks for (``traces.find``), looked for since each event's own
signal rather than since a job began: what the agent did after the signal handled it. Used before
a wake calls the LLM (nothing left: the run is ``settled``) and after the cycle's ticks for the
events pending for this node's core (``Settled``: they leave the queue).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Iterable

from meshnode.engines.reactor import traces
from meshnode.engines.reactor.types import TraceCheck, TraceKind

if TYPE_CHECKING:
    from meshnode.engines.reactor.types import Event
    from meshnode.store.database import Database

MAX_EVENTS = 200  # looked at per call (a pending queue is checked in parts, the oldest first)


def handled_keys(db: Database, agent: str, events: Iterable[Event], now_ms: int, *, self_did: str,
                 phrases: tuple[str, ...] | None = None) -> set[str]:
    """The keys among ``events`` (at most MAX_EVENTS, all of ``agent``'s) that have a trace left
    since their signal; an informational event (no trace required) is never "handled" here."""
    evs = sorted((e for e in events if e.required_trace and TraceKind.NONE not in e.required_trace),
                 key=lambda e: e.at_ms)[:MAX_EVENTS]
    if not evs:
        return set()
    check = TraceCheck("recheck", agent, min(e.at_ms for e in evs),
                       tuple((e.dedupe_key, e.required_trace, e.refs, e.event_type) for e in evs))
    since = {e.dedupe_key: e.at_ms for e in evs}
    return {t.event_key for t in traces.find(db, check, now_ms, self_did=self_did, phrases=phrases)
            if t.kind is TraceKind.RESOLVED or t.at_ms >= since[t.event_key]}
