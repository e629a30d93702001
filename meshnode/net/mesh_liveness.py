"""Heartbeats and liveness, as the Mesh runs them (split from mesh_gossip.py).

Each node publishes a small signed heartbeat on its own topic every
``heartbeat_ms``; the ``LivenessTracker`` (sans-IO) turns what is heard into
ok / quiet / stale / dead, which the node writes to the peers table and the
reactor reads. Heartbeats stay on a cheap synchronous validator that refuses
anything larger than a heartbeat before decoding it.
"""

from __future__ import annotations

import logging

import trio

from meshnode.container import ContainerError, build_container, decode_container
from meshnode.identity.did import did_to_peer_id
from meshnode.net.mesh_gossip import message_key
from meshnode.store.peers import set_liveness, upsert_peer

log = logging.getLogger("meshnode.net")

HEARTBEAT_TOPIC = "/meshnode/heartbeat/1"
MAX_HEARTBEAT_BYTES = 1024  # a heartbeat is ~300 bytes


class LivenessMixin:
    def _validate_heartbeat(self, forwarder, message) -> bool:
        if len(message.data) > MAX_HEARTBEAT_BYTES:  # refused before any decoding
            self._gossip_invalid(forwarder, "heartbeat_too_large", nbytes=len(message.data))
            return False
        try:
            c = decode_container(message.data, now_ms=self.clock(), limits=self.config.container_limits)
        except ContainerError as exc:
            self._gossip_invalid(forwarder, exc.code)
            return False
        from libp2p.peer.id import ID

        if c.cls != "heartbeat" or did_to_peer_id(c.sender_did) != ID(message.from_id).to_base58():
            self._gossip_invalid(forwarder, "not_own_heartbeat")
            return False
        self._validated.put(message_key(message), (message.data, c))
        return True

    async def _send_heartbeats(self) -> None:
        interval = self.config.heartbeat_ms / 1000
        while True:
            self._heartbeat_seq += 1
            now = self.clock()
            beat = build_container(self.key, "heartbeat", {"seq": self._heartbeat_seq, "status": "ok"},
                                   timestamp_ms=now, ttl_ms=now + self.config.thresholds.dead_ms)
            try:
                await self.pubsub.publish(HEARTBEAT_TOPIC, beat.to_bytes())
                self.metrics.inc("heartbeats_sent")
            except Exception as exc:  # no peers yet, or shutting down
                log.debug("heartbeat not sent: %s", exc)
            await trio.sleep(interval)

    async def _read_heartbeats(self, subscription) -> None:
        async for c in self._from_others(subscription):
            now = self.clock()
            seq = c.payload["seq"]
            freshness = self.liveness.freshness(c.sender_did, seq, c.timestamp_ms)
            if freshness != "new":  # a replay, a late one, or a copy that raced the first
                self.metrics.inc("heartbeats_ignored", reason=freshness)
                continue
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
