"""The built-in signal adapters: the node's own tables read as reactor Events (design 3).

``scan`` runs every DB adapter in one read (run it with ``store.read``): notes addressed to a
local agent and unanswered threads (``adapters_notes``), GMP offers and due tasks and what waits
on the person (``adapters_tasks``). Each query is a range scan on an index with a LIMIT.
``liveness_events`` is pure: the hour-scale tracker's changes. Adapters remember nothing: the
dedupe keys make repeated sightings harmless.

``consensus.waiting`` is not produced: the consensus tables hold decisions and epochs only
(``consensus_decisions``, ``consensus_emergency``, ``consensus_epochs``); rounds and who has
voted live in the Tendermint core's memory, so "this node has sent nothing for the current
round" cannot be read from the store (design 17, question 2).
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING

from meshnode.base.errors import StoreError
from meshnode.store.database import sql_errors
from meshnode.engines.reactor.adapters_notes import note_events, unanswered_events
from meshnode.engines.reactor.adapters_tasks import offer_events, person_events, task_events, work_events
from meshnode.engines.reactor.types import Event, Severity, TraceKind

if TYPE_CHECKING:
    from meshnode.net.liveness import Change
    from meshnode.engines.reactor.aliases import AliasRegistry
    from meshnode.base.config.reactor import ReactorConfig
    from meshnode.store.database import Database

ADAPTERS = ("notes", "threads", "offers", "tasks", "person")


def scan(db: Database, now_ms: int, cfg: ReactorConfig, *, self_did: str,
         liveness: dict[str, str] | None = None, aliases: AliasRegistry | None = None,
         errors: list[str] | None = None, chat_grace_ms: int = 0) -> list[Event]:
    """Every built-in DB adapter's events at ``now_ms``, in one read. ``liveness`` (DID -> state)
    is GMP's view of holders (holder_dead); ``aliases`` decides which mentions are local agents;
    ``chat_grace_ms``: how long a chat message to this node is left to the tick it caused.
    An adapter whose read fails is skipped, its error appended to ``errors`` ("name: reason")."""
    runs: list[tuple[str, Callable[[], list[Event]]]] = [
        ("notes", lambda: note_events(db, now_ms, cfg, self_did=self_did, aliases=aliases, chat_grace_ms=chat_grace_ms)),
        ("threads", lambda: unanswered_events(db, now_ms, cfg, self_did=self_did, aliases=aliases)),
        ("offers", lambda: offer_events(db, now_ms, self_did=self_did)),
        ("tasks", lambda: task_events(db, now_ms, cfg, self_did=self_did, liveness=liveness)
         + work_events(db, now_ms, self_did=self_did)),
        ("person", lambda: person_events(db, now_ms, self_did=self_did)),
    ]
    out: list[Event] = []
    with sql_errors("reading the reactor's signals"):
        began = not db.conn.in_transaction
        if began:
            db.conn.execute("BEGIN")  # one read transaction: every adapter sees the same snapshot (WAL)
        try:
            for name, run in runs:
                try:
                    out += run()
                except (sqlite3.Error, StoreError) as exc:
                    if errors is None:
                        raise
                    errors.append(f"{name}: {exc}"[:300])
        finally:
            if began and db.conn.in_transaction:
                db.conn.execute("COMMIT")
    return out


_LIVENESS = {
    "quiet": (Severity.P4, (TraceKind.NONE,), "agent"),
    "stale": (Severity.P3, (TraceKind.HEARTBEAT, TraceKind.MESSAGE), "agent"),
    "dead": (Severity.P2, (TraceKind.HEARTBEAT, TraceKind.ACK), "mentor"),
    "back": (Severity.P4, (TraceKind.NONE,), "agent"),
}


def liveness_events(changes: list[Change], now_ms: int, cfg: ReactorConfig, *,
                    last_heard: Mapping[str, int] | Callable[[str], int | None] | None = None) -> list[Event]:
    """liveness.quiet/stale/dead/back from the hour-scale tracker's changes (design 3.3). The key
    embeds the silence episode, the subject's last heard time (``last_heard``: the tracker's
    ``last_heard_ms``, or a mapping), so one silence is one event however often it is scanned;
    without it the change's time stands in (stable only if the caller passes each change once)."""
    out = []
    for ch in changes:
        new, old = _state(ch.new), _state(ch.old) if ch.old is not None else None
        if new == "ok":
            if old not in ("stale", "dead"):
                continue  # first heard, or back from quiet: nothing to say
            kind = "back"
        else:
            kind = new
        heard = _heard(last_heard, ch.peer)
        episode = heard if heard is not None else ch.at_ms
        sev, kinds, route = _LIVENESS[kind]
        since = f", silent since {episode}" if kind != "back" else f", after being {old}"
        out.append(Event(event_type=f"liveness.{kind}", subject=ch.peer, agent=ch.peer, severity=sev,
                         dedupe_key=f"live:{kind}:{ch.peer}:{episode}", suggested_route=route,
                         required_trace=kinds, at_ms=ch.at_ms, source="liveness",
                         summary=f"{ch.peer[:80]} is {kind}{since}"[:200],
                         refs={"did": ch.peer, "last_heard_ms": episode, "state": new}))
    return out


def _state(x) -> str:
    return getattr(x, "value", x)


def _heard(last_heard, peer: str) -> int | None:
    if last_heard is None:
        return None
    return last_heard(peer) if callable(last_heard) else last_heard.get(peer)
