"""Liveness on the running node: what a heartbeat taken does, and the states over time.

Heartbeats arrive one hop, on a stream from each directly connected peer
(``heartbeat_stream``; issue 18: no longer gossiped mesh-wide). The
``LivenessTracker`` (sans-IO) turns what is heard into ok / quiet / stale /
dead, which the node writes to the peers table and the reactor reads. So a
node knows the liveness of the peers it is connected to: a peer alive but
not connected here goes quiet, stale and dead in this table, as a peer that
went away would.
"""

from __future__ import annotations

import logging
from typing import Callable

import trio

from meshnode.base.identity.did import did_to_peer_id
from meshnode.net.events import PeerEvents
from meshnode.net.libp2p_parts import Libp2pParts
from meshnode.net.liveness import Liveness, LivenessTracker, Thresholds
from meshnode.store.known import KnownAuthors
from meshnode.store.peers import set_liveness, upsert_peer

log = logging.getLogger("meshnode.net")


class PeerLiveness:
    """Liveness on the running node: ``heard`` takes a valid heartbeat, ``run`` ticks the tracker
    and writes what changes to the peers table; ``events.back`` fires when a peer appears or
    comes back (sync reconciles with it soon)."""

    def __init__(self, tracker: LivenessTracker, parts: Libp2pParts, known: KnownAuthors, events: PeerEvents, store,
                 metrics, clock: Callable[[], int], *, thresholds: Thresholds):
        self.tracker, self.parts, self.known, self.events = tracker, parts, known, events
        self.store, self.metrics, self.clock, self.thresholds = store, metrics, clock, thresholds
        events.on_upkeep(self._forget_dead_strangers)

    async def heard(self, c) -> None:
        """A valid heartbeat container ``c`` from its own sender: freshness, then the tracker (a
        peer first heard gets a row; a peer appearing or coming back is synced with soon)."""
        now = self.clock()
        seq = c.payload["seq"]
        freshness = self.tracker.freshness(c.sender_did, seq, c.timestamp_ms)
        if freshness != "new":  # a replay, or one older than the last taken
            self.metrics.inc("heartbeats_ignored", reason=freshness)
            return
        first = self.tracker.state(c.sender_did) is None
        change = self.tracker.heard(c.sender_did, now, seq=seq, sent_ms=c.timestamp_ms)
        self.metrics.inc("heartbeats_received")
        if first:
            await self.store.write(upsert_peer, c.sender_did, peer_id=did_to_peer_id(c.sender_did),
                                   now_ms=now, source="exchange", online=True)
        if change is not None:
            if change.old is not None:  # the way down was logged by run
                log.info("peer %s is %s again (was %s)", change.peer, change.new.value, change.old.value)
            await self._record_liveness(change.peer, change.new.value, now)
            self.events.back()  # a peer appeared or came back: reconcile soon

    def _forget_dead_strangers(self, now: int, connected: set[str]) -> None:
        """Upkeep: dead strangers are tracked again if they come back."""
        for did, state in self.tracker.peers().items():
            if state is Liveness.DEAD and did not in self.known:
                self.tracker.forget(did)

    async def run(self) -> None:
        step = max(0.05, min(self.thresholds.quiet_ms / 4000, 5.0))
        while True:
            await trio.sleep(step)
            now = self.clock()
            for change in self.tracker.tick(now):
                log.info("peer %s is now %s", change.peer, change.new.value)
                await self._record_liveness(change.peer, change.new.value, now)

    async def _record_liveness(self, did: str, state: str, now: int) -> None:
        self.metrics.inc("liveness_changes", state=state)
        last = self.tracker.last_heard_ms(did) or now
        await self.store.write(_set_liveness_row, did, state, last, now)

    def peers_snapshot(self) -> dict:
        host = self.parts.host
        connected = {p.to_base58() for p in host.get_connected_peers()} if host else set()
        return {"connected": sorted(connected), "liveness": {k: v.value for k, v in self.tracker.peers().items()}}


def _set_liveness_row(db, did: str, state: str, last_heard_ms: int, now: int) -> None:
    upsert_peer(db, did, peer_id=did_to_peer_id(did), now_ms=now, source="exchange")
    set_liveness(db, did, state=state, last_heard_ms=last_heard_ms, last_seq=-1, now_ms=now)
