"""What a find asked, of whom, and what each answered; and when this node's announce went out.

The find p99 at 20 processes was ~10 s (issue 18): about 2 % of the finds asked while a mesh
forms got no announce within the lookup, and nothing said why. A ``LookupTrace`` records each
DHT request a lookup makes (the connected peers' GET_VALUE, the walk's FIND_NODE and GET_VALUE
hops, the find-peer walk) with its outcome and times; a find that was slow or found no announce
returns it in its answer. ``LookupLog`` keeps, for the ``formation`` control call, when this node
pushed and put its own announce and when it first heard each other DID's announce: with the
finder's trace that says whether anyone held the target's announce when it was asked.

Wall-clock milliseconds, so that traces of several processes on one machine line up. The
per-request hooks (``trace_dht_requests``) wrap two private methods of py-libp2p 0.8.1 on one
KadDHT instance (``ValueStore._get_from_peer``, ``PeerRouting._query_peer_for_closest``); they
only record while a trace is current (a context variable, which trio copies into child tasks).
"""

from __future__ import annotations

import contextvars
import time
from collections import deque

import trio

CURRENT: contextvars.ContextVar["LookupTrace | None"] = contextvars.ContextVar("lookup_trace", default=None)
STEPS_KEPT = 200  # requests recorded per trace (a walk at 20 nodes makes ~40)
SLOW_KEPT = 32  # traces of slow finds kept per node
FIRST_HEARD_KEPT = 4096


def wall_ms() -> int:
    return int(time.time() * 1000)


def short(peer) -> str:
    text = peer.to_base58() if hasattr(peer, "to_base58") else str(peer)
    return text[-6:]


class LookupTrace:
    """One lookup's requests: (ms since start, stage, request, peer, outcome, ms it took)."""

    def __init__(self, did: str):
        self.did = did
        self.started_ms = wall_ms()
        self.stage = "start"
        self.steps: list[tuple] = []
        self.notes: dict = {}

    def at(self) -> int:
        return wall_ms() - self.started_ms

    def step(self, request: str, peer, outcome: str, began: int) -> None:
        if len(self.steps) < STEPS_KEPT:
            self.steps.append((began, self.stage, request, short(peer), outcome, self.at() - began))

    def note(self, **fields) -> None:
        self.notes.update(fields)

    def as_dict(self) -> dict:
        return {"did": self.did[-8:], "started_ms": self.started_ms, "stage": self.stage, **self.notes,
                "steps": [list(s) for s in self.steps]}


class LookupLog:
    """This node's own announce going out (pushes, puts) and the first time it heard each DID's
    announce, bounded; and the traces of its slowest finds."""

    def __init__(self):
        self.pushes: deque = deque(maxlen=32)  # (wall ms, asked, stored)
        self.puts: deque = deque(maxlen=16)  # (wall ms, outcome, ms taken)
        self.first_heard: dict[str, int] = {}
        self.slow: deque = deque(maxlen=SLOW_KEPT)

    def heard(self, did: str) -> None:
        if did not in self.first_heard and len(self.first_heard) < FIRST_HEARD_KEPT:
            self.first_heard[did] = wall_ms()

    def as_dict(self) -> dict:
        return {"pushes": [list(p) for p in self.pushes], "puts": [list(p) for p in self.puts],
                "first_heard": dict(self.first_heard), "slow_finds": list(self.slow)}


def _outcome_of_get(result) -> str:
    value, closer = result if isinstance(result, tuple) else (result, None)
    if value is not None:
        return "value"
    # py-libp2p returns None both for "no record" and for an error it swallowed; a peer that
    # answered names closer peers (its routing table), an error names none
    return f"none({len(closer)} closer)" if closer else "none/error"


def trace_dht_requests(dht) -> None:
    """Record, while a LookupTrace is current, each GET_VALUE and FIND_NODE this DHT sends to one
    peer (idempotent)."""
    store, routing = dht.value_store, dht.peer_routing
    if getattr(store, "_meshnode_traced", False):
        return
    get_from_peer, query_for_closest = store._get_from_peer, routing._query_peer_for_closest

    async def traced_get(peer_id, key, return_record=False, return_closer_peers=False):
        trace = CURRENT.get()
        if trace is None:
            return await get_from_peer(peer_id, key, return_record=return_record,
                                       return_closer_peers=return_closer_peers)
        began, outcome = trace.at(), "cancelled"
        try:
            result = await get_from_peer(peer_id, key, return_record=return_record, return_closer_peers=True)
            outcome = _outcome_of_get(result)
            return result if return_closer_peers else result[0]
        except trio.Cancelled:
            raise
        except Exception as exc:
            outcome = f"error:{type(exc).__name__}"
            raise
        finally:
            trace.step("get", peer_id, outcome, began)

    async def traced_closest(peer, target_key):
        trace = CURRENT.get()
        if trace is None:
            return await query_for_closest(peer, target_key)
        began, outcome = trace.at(), "cancelled"
        try:
            found = await query_for_closest(peer, target_key)
            outcome = f"{len(found)} peers" if found else "empty/error"
            return found
        finally:
            trace.step("find_node", peer, outcome, began)

    store._get_from_peer = traced_get
    routing._query_peer_for_closest = traced_closest
    store._meshnode_traced = True
