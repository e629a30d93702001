"""Liveness, as the Mesh runs it: what a heartbeat taken does, and the states over time.

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

import trio

from meshnode.identity.did import did_to_peer_id
from meshnode.net.liveness import Liveness
from meshnode.store.peers import set_liveness, upsert_peer

log = logging.getLogger("meshnode.net")


class LivenessMixin:
    async def _heard_heartbeat(self, c) -> None:
        """A valid heartbeat container ``c`` from its own sender: freshness, then the tracker (a
        peer first heard gets a row; a peer appearing or coming back is synced with soon)."""
        now = self.clock()
        seq = c.payload["seq"]
        freshness = self.liveness.freshness(c.sender_did, seq, c.timestamp_ms)
        if freshness != "new":  # a replay, or one older than the last taken
            self.metrics.inc("heartbeats_ignored", reason=freshness)
            return
        first = self.liveness.state(c.sender_did) is None
        change = self.liveness.heard(c.sender_did, now, seq=seq, sent_ms=c.timestamp_ms)
        self.metrics.inc("heartbeats_received")
        if first:
            await self.store.write(upsert_peer, c.sender_did, peer_id=did_to_peer_id(c.sender_did),
                                   now_ms=now, source="exchange", online=True)
        if change is not None:
            if change.old is not None:  # the way down was logged by _watch_liveness
                log.info("peer %s is %s again (was %s)", change.peer, change.new.value, change.old.value)
            await self._record_liveness(change.peer, change.new.value, now)
            self._sync_wanted.set()  # a peer appeared or came back: reconcile soon

    def _forget_dead_strangers(self, now: int, connected: set[str]) -> None:
        """Upkeep: dead strangers are tracked again if they come back."""
        for did, state in self.liveness.peers().items():
            if state is Liveness.DEAD and did not in self.known:
                self.liveness.forget(did)

    async def _watch_liveness(self) -> None:
        step = max(0.05, min(self.config.thresholds.quiet_ms / 4000, 5.0))
        while True:
            await trio.sleep(step)
            now = self.clock()
            for change in self.liveness.tick(now):
                log.info("peer %s is now %s", change.peer, change.new.value)
                await self._record_liveness(change.peer, change.new.value, now)

    async def _record_liveness(self, did: str, state: str, now: int) -> None:
        self.metrics.inc("liveness_changes", state=state)
        last = self.liveness.last_heard_ms(did) or now
        await self.store.write(_set_liveness_row, did, state, last, now)

    def peers_snapshot(self) -> dict:
        connected = {p.to_base58() for p in self.host.get_connected_peers()} if self.host else set()
        return {"connected": sorted(connected), "liveness": {k: v.value for k, v in self.liveness.peers().items()}}


def _set_liveness_row(db, did: str, state: str, last_heard_ms: int, now: int) -> None:
    upsert_peer(db, did, peer_id=did_to_peer_id(did), now_ms=now, source="exchange")
    set_liveness(db, did, state=state, last_heard_ms=last_heard_ms, last_seq=-1, now_ms=now)
