"""The containers topic: publishing, the topic's validator and the reader (split from mesh.py).

The containers topic's validator is asynchronous: each message is charged to
its forwarder's CPU budget and decoded in the worker pool when large, so one
peer's large message does not hold up the others' (pubsub runs each message
in a task of its own). A forwarder over budget, or a pool too busy, is
*ignored*, not rejected: its message is neither relayed nor held against
those who forward it later (``libp2p_fixes.forget_ignored``). The validated
container is handed to the reader (``_validated``), not decoded again.
Heartbeats and liveness are in mesh_liveness.py.
"""

from __future__ import annotations

from typing import Callable

import trio

from meshnode.base.container import Container, ContainerError, Limits, decode_container
from meshnode.base.errors import MeshnodeError
from meshnode.base.identity.did import peer_id_to_did
from meshnode.net.budget import BoundedLRU
from meshnode.net.errors import NetError
from meshnode.net.gossip_timing import GossipTiming
from meshnode.net.libp2p_parts import Libp2pParts
from meshnode.net.mesh_admission import AdmissionService
from meshnode.net.offload import Offload
from meshnode.net.peer_guard import PeerGuard, Refused, WorkFailed
from meshnode.net.standing import Standing
from meshnode.base.container.schema import HELLO_CLASS, INVITATION_CLASS

CONTAINER_TOPIC = "/meshnode/containers/1"
MAX_GOSSIP_BYTES = 60 * 1024  # py-libp2p corrupts gossip over ~64 KiB: larger containers go by direct push
GOSSIP_VALIDATE_S = 3.0  # under pubsub's 5 s validation timeout, which would cache the message as invalid
VALIDATED_KEPT = 256  # validated containers waiting for the reader (each at most MAX_GOSSIP_BYTES)
GOSSIP_BATCH = 64  # containers stored in one write transaction at most


def message_key(message) -> bytes:
    """A gossip message's identity: its author and sequence number (both covered by its signature)."""
    return bytes(message.from_id) + bytes(message.seqno)


class ContainerGossip:
    """The containers topic's service: ``gossip`` publishes, ``validate_container`` is the topic's
    validator (set by ``register``), ``read`` the subscription's reader (started by the Mesh once the
    host runs)."""

    def __init__(self, parts: Libp2pParts, key, guard: PeerGuard, admission: AdmissionService, offload: Offload,
                 standing: Standing, timing: GossipTiming, metrics, clock: Callable[[], int], *,
                 limits: Limits = Limits()):
        self.parts, self.key, self.guard, self.admission, self.offload = parts, key, guard, admission, offload
        self.standing, self.timing, self.metrics, self.clock, self.limits = standing, timing, metrics, clock, limits
        self._validated = BoundedLRU(VALIDATED_KEPT)  # message_key -> (data, Container) validated, for the reader
        self._ignored: set[bytes] = set()  # message keys ignored (not rejected) by the validator (forget_ignored)

    def register(self, pubsub) -> None:
        pubsub.set_topic_validator(CONTAINER_TOPIC, self.validate_container, is_async_validator=True)

    async def gossip(self, c: Container) -> None:
        data = c.to_bytes()
        if len(data) > MAX_GOSSIP_BYTES:
            raise NetError("too_large_for_gossip",
                           f"{len(data)} bytes; gossip carries at most {MAX_GOSSIP_BYTES} (push it directly)")
        await self.parts.pubsub.publish(CONTAINER_TOPIC, data)
        self.metrics.inc("gossip_published")
        self.timing.mark(c.did, "published", self.clock(), c.timestamp_ms)

    def _decode(self, raw: bytes) -> Container:
        """A peer's container, verified (run in the worker pool when large)."""
        return decode_container(raw, now_ms=self.clock(), limits=self.limits)

    async def validate_container(self, forwarder, message) -> bool:
        host = self.parts.host
        if host is not None and forwarder == host.get_id():  # our own publish (gossip()): a
            return True  # container this node built and stored; pubsub drops others claiming our id
        if len(message.data) > MAX_GOSSIP_BYTES:  # never published by a node of ours; relayed, it arrives corrupt
            self.guard.invalid_from_peer_id(forwarder, "gossip_too_large", nbytes=len(message.data))
            return False
        arrived = self.clock()
        self.metrics.inc("gossip_validations")  # every copy a validator works on (duplicates in flight too)
        did = _did_or_peer_id(forwarder)
        if self.admission.ignore_strangers_gossip(message, did, _publisher(message)):  # not even decoded
            return False
        host = None if self.guard.is_known(did) else self.guard.host_of_peer(forwarder)
        try:
            with trio.move_on_after(GOSSIP_VALIDATE_S):
                c = await self.guard.work(did, host, message.data, self._decode, message.data)
                self.timing.mark(c.did, "arrived", arrived, c.timestamp_ms)
                if c.cls in (HELLO_CLASS, INVITATION_CLASS):  # point to point (spawn.md 8): never relayed
                    raise Refused("point_to_point", f"a {c.cls} never travels by gossip", 0)
                if not self.admission.admit_gossip_author(c, message, forwarder=did):
                    return False
                self._validated.put(message_key(message), (message.data, c))
                self.timing.mark(c.did, "validated", self.clock(), c.timestamp_ms)
                return True
            refusal = "slow"
        except Refused as exc:
            refusal = exc.code
        except WorkFailed as exc:
            if not isinstance(exc.error, ContainerError):
                raise exc.error
            self.guard.invalid_from_peer_id(forwarder, exc.error.code, exc.cost_ms, len(message.data))
            return False
        self.metrics.inc("gossip_ignored", reason=refusal)
        if len(self._ignored) < 4 * VALIDATED_KEPT:  # forgotten by push_msg right after; a bound all the same
            self._ignored.add(message_key(message))
        return False

    def dropped(self, reason: str, n: int = 1) -> None:
        """Gossip py-libp2p dropped on its own (``libp2p_fixes.count_gossip_drops``)."""
        self.metrics.inc("gossip_dropped", n, reason=reason)

    def was_ignored(self, message) -> bool:
        key = message_key(message)
        if key in self._ignored:
            self._ignored.discard(key)
            return True
        return False

    async def _from_others(self, subscription):
        """The containers of a subscription, as its topic validator verified them, from other nodes
        (own publishes skipped; invalid ones were counted by the validator)."""
        while True:
            c = await self._container_of(await subscription.get())
            if c is not None and c.sender_did != self.key.did:
                yield c

    async def _batches_from_others(self, subscription):
        """``_from_others`` in batches: what was ready when the reader came back for more (the first
        one waited for), at most GOSSIP_BATCH."""
        channel = getattr(subscription, "receive_channel", None)
        while True:
            messages = [await subscription.get()]
            while channel is not None and len(messages) < GOSSIP_BATCH:
                try:
                    messages.append(channel.receive_nowait())
                except trio.WouldBlock:
                    break
            batch = []
            for message in messages:
                c = await self._container_of(message)
                if c is not None and c.sender_did != self.key.did:
                    batch.append(c)
            if batch:
                yield batch

    async def _container_of(self, message) -> Container | None:
        host = self.parts.host
        if host is not None and message.from_id == host.get_id().to_bytes():
            return None  # our own publish, handed back by pubsub: not decoded again to be skipped
        kept = self._validated.pop(message_key(message))
        if kept is not None and kept[0] == message.data:
            return kept[1]
        self.metrics.inc("gossip_decoded_again")  # pushed out of the cache by a burst: verified again
        try:
            c, _ = await self.offload.run("gossip", len(message.data), self._decode, message.data)
        except MeshnodeError:  # invalid (counted by the validator), or the pool is full
            return None
        return c

    async def read(self, subscription) -> None:
        """Stores what gossip brings, a batch per write transaction (``AdmissionService.store_many_from_peers``: a burst
        waited on one disk sync per container, one after the other)."""
        async for batch in self._batches_from_others(subscription):
            read = self.clock()
            for c in batch:
                self.timing.mark(c.did, "read", read, c.timestamp_ms)
            results = await self.admission.store_many_from_peers([(c, c.sender_did) for c in batch], "gossip")
            stored = self.clock()
            for c, result in zip(batch, results):
                self.timing.mark(c.did, "stored", stored, c.timestamp_ms)
                self.metrics.inc("containers_received", via="gossip")
                # new here, or already held (sync can win the race when gossip is slow): every arrival counted
                self.metrics.inc("gossip_delivered" if result.new else "gossip_already_held", cls=c.cls)
                if result.new:  # a valid container its author published is reputation evidence (once each)
                    self.standing.record_valid(c.sender_did, self.clock())


def _publisher(message) -> str | None:
    """The DID of the peer that published ``message`` (its ``from``), or None."""
    from libp2p.peer.id import ID

    try:
        return peer_id_to_did(ID(message.from_id).to_base58())
    except (MeshnodeError, ValueError, TypeError):
        return None


def _did_or_peer_id(peer_id) -> str:
    """The key a gossip forwarder is charged under: its DID, or its peer id when it has none."""
    try:
        return peer_id_to_did(peer_id.to_base58())
    except MeshnodeError:
        return peer_id.to_base58()

