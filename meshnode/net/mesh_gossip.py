"""Gossip topics, heartbeats and liveness, as the Mesh runs them (split from mesh.py)."""

from __future__ import annotations

import logging

import trio

from meshnode.container import Container, ContainerError, build_container, decode_container
from meshnode.errors import MeshnodeError
from meshnode.identity.did import did_to_peer_id, peer_id_to_did
from meshnode.net.errors import NetError
from meshnode.store.peers import set_liveness, upsert_peer

log = logging.getLogger("meshnode.net")

HEARTBEAT_TOPIC = "/meshnode/heartbeat/1"
CONTAINER_TOPIC = "/meshnode/containers/1"
MAX_GOSSIP_BYTES = 60 * 1024  # py-libp2p corrupts gossip over ~64 KiB: larger containers go by direct push


class GossipMixin:
    # --- gossip -----------------------------------------------------------------

    async def gossip(self, c: Container) -> None:
        data = c.to_bytes()
        if len(data) > MAX_GOSSIP_BYTES:
            raise NetError("too_large_for_gossip",
                           f"{len(data)} bytes; gossip carries at most {MAX_GOSSIP_BYTES} (push it directly)")
        await self.pubsub.publish(CONTAINER_TOPIC, data)
        self.metrics.inc("gossip_published")

    def _validate_gossip_container(self, forwarder, message) -> bool:
        try:
            c = decode_container(message.data, now_ms=self.clock(), limits=self.config.container_limits)
        except ContainerError as exc:
            self._gossip_invalid(forwarder, exc.code)
            return False
        return self._admit_gossip_author(c, message)

    def _validate_heartbeat(self, forwarder, message) -> bool:
        try:
            c = decode_container(message.data, now_ms=self.clock(), limits=self.config.container_limits)
        except ContainerError as exc:
            self._gossip_invalid(forwarder, exc.code)
            return False
        from libp2p.peer.id import ID

        if c.cls != "heartbeat" or did_to_peer_id(c.sender_did) != ID(message.from_id).to_base58():
            self._gossip_invalid(forwarder, "not_own_heartbeat")
            return False
        return True

    def _gossip_invalid(self, forwarder, code: str) -> None:
        try:
            did = peer_id_to_did(forwarder.to_base58())
        except MeshnodeError:
            self.metrics.inc("invalid_from_peer", code=code)
            return
        self._invalid(did, code)

    async def _from_others(self, subscription):
        """The containers of a subscription, verified, from other nodes (own publishes skipped;
        invalid ones were counted by the topic validator)."""
        while True:
            message = await subscription.get()
            try:
                c = decode_container(message.data, now_ms=self.clock(), limits=self.config.container_limits)
            except ContainerError:
                continue
            if c.sender_did != self.key.did:
                yield c

    async def _read_gossip_containers(self, subscription) -> None:
        async for c in self._from_others(subscription):
            new = (await self._store_from_peer(c, c.sender_did, "gossip")).new
            self.metrics.inc("containers_received", via="gossip")
            if new:  # a valid container its author published is reputation evidence (once per container)
                self.standing.record_valid(c.sender_did, self.clock())

    # --- heartbeats and liveness ------------------------------------------------

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
