"""The pubsub read loop: every RPC frame charged before it is parsed (replaces py-libp2p's).

Theory of operation
-------------------
py-libp2p 0.8.1 reads a GossipSub stream as: a varint length, the frame, parse,
then subscriptions, publishes and control are handled, whoever sent them and
however many. ``PubsubGuard.serve`` reads the same frames but, for each one:

1. reads its length (at most ``max_rpc_bytes``, py-libp2p's limit) and then its
   body within ``frame_time_s`` of its length (a trickle is ``slow_frame``);
2. charges it, *before parsing*, to the sender's identity, address and subnet
   (``CpuBudgets.admit``, estimated from its size: ``estimate_ms``); a frame over
   budget is dropped unparsed and counted, and every few such frames from a
   stranger count as invalid input (``PubsubRules.over_budget``);
3. parses it and applies ``PubsubRules.check`` (unknown topics, subscription
   churn, IHAVE/IWANT/GRAFT/PRUNE beyond what an honest peer sends): what goes
   beyond is removed, counted as ``pubsub_refused{kind,reason}`` and, from a
   stranger, held against it (``PeerGuard.invalid``: cut off past the threshold);
4. hands what is left to py-libp2p exactly as its own loop does
   (``handle_subscription``, ``push_msg`` in a task, ``router.handle_rpc``).

The charge is settled at the larger of the estimate and the measured parse and
handling: the estimate also stands for what the frame cost before it reached
this loop (Noise decryption, yamux), which cannot be measured here.
A stream that ends or fails is handled as py-libp2p's ``stream_handler`` does
(reset, ``_handle_dead_peer``); errors it does not catch are left to
``libp2p_fixes.survive_bad_pubsub_rpcs``, which wraps ``serve``.
"""

from __future__ import annotations

import logging
import time
from typing import Callable

import trio

from meshnode.base.errors import MeshnodeError
from meshnode.base.identity.did import peer_id_to_did
from meshnode.net.budget import OverBudget, estimate_ms
from meshnode.net.libp2p_fixes import reset_quietly
from meshnode.net.paced_read import FRAME_BASE_S, MIN_FRAME_RATE, read_body
from meshnode.net.peer_guard import PeerGuard, remote_host
from meshnode.net.pubsub_rules import PubsubLimits, PubsubRules, Refusal

log = logging.getLogger("meshnode.net")

STREAMS_PER_PEER = 2  # inbound pubsub streams of one peer at once (one, and its replacement while the old one ends)


def did_of(peer_id) -> str | None:
    """The DID a libp2p peer id stands for, or None (not an Ed25519 key)."""
    try:
        return peer_id_to_did(peer_id.to_base58())
    except MeshnodeError:
        return None


class PubsubGuard:
    def __init__(self, guard: PeerGuard, metrics, clock: Callable[[], int], limits: PubsubLimits = PubsubLimits(),
                 *, frame_base_s: float = FRAME_BASE_S, min_rate: float = MIN_FRAME_RATE):
        self.guard, self.metrics, self.clock, self.limits = guard, metrics, clock, limits
        self.frame_base_s, self.min_rate = frame_base_s, min_rate
        self.pubsub = None
        self.rules: PubsubRules | None = None
        self._streams: dict[str, int] = {}  # peer id (base58) -> inbound pubsub streams open

    def attach(self, pubsub, router) -> None:
        """Serve ``pubsub``'s streams through ``serve`` (the caller registers the handler), and
        remember the ids the router offers each peer (IWANT may ask only for those)."""
        self.pubsub = pubsub
        mesh = getattr(router, "mesh", {})
        self.rules = PubsubRules(lambda topic: topic in pubsub.subscribed_topics_receive or topic in mesh,
                                 self.limits)
        send = router.send_rpc
        rules, clock = self.rules, self.clock

        def send_rpc(peer_id, rpc, priority: bool = False) -> None:
            if rpc.HasField("control") and len(rpc.control.ihave):
                rules.advertised(peer_id.to_base58(), [m for i in rpc.control.ihave for m in i.messageIDs], clock())
            send(peer_id, rpc, priority)

        router.send_rpc = send_rpc

    async def serve(self, stream) -> None:
        """Pubsub.stream_handler with charges and rules (see the module's docstring)."""
        from libp2p.exceptions import ParseError
        from libp2p.io.exceptions import IncompleteReadError, MessageTooLarge
        from libp2p.network.stream.exceptions import StreamError

        peer_id = stream.muxed_conn.peer_id
        key = peer_id.to_base58()
        if self._streams.get(key, 0) >= STREAMS_PER_PEER:
            self._count(Refusal("stream", "too_many", invalid=False), None)
            await reset_quietly(stream)
            return
        self._streams[key] = self._streams.get(key, 0) + 1
        did = did_of(peer_id)
        try:
            await self._read_frames(stream, peer_id, key, did)
        except (StreamError, ParseError, IncompleteReadError) as error:
            log.debug("pubsub stream from %s failed: %s", peer_id, error)
            await self._drop(stream, peer_id)
        except MessageTooLarge as error:
            self._count(Refusal("frame", "too_large"), did)
            log.debug("pubsub frame from %s: %s", peer_id, error)
            await self._drop(stream, peer_id)
        except trio.TooSlowError:
            self.metrics.inc("pubsub_refused", kind="frame", reason="slow")
            if did is not None:
                self.guard.slow_frame(did)
            await self._drop(stream, peer_id)
        finally:
            left = self._streams.get(key, 1) - 1
            if left > 0:
                self._streams[key] = left
            else:
                self._streams.pop(key, None)
                self.rules.stream_ended(key)

    async def _drop(self, stream, peer_id) -> None:
        await reset_quietly(stream)
        self.pubsub._handle_dead_peer(peer_id)

    async def _read_frames(self, stream, peer_id, key: str, did: str | None) -> None:
        from libp2p.network.stream.exceptions import StreamEOF
        from libp2p.pubsub.pb import rpc_pb2

        pubsub, budgets = self.pubsub, self.guard.budgets
        host = remote_host(stream.muxed_conn)
        while pubsub.manager.is_running:
            try:
                frame = await self._read_frame(stream)
            except StreamEOF:  # as py-libp2p's own loop: reset (a half-closed stream stays in yamux's
                await self._drop(stream, peer_id)  # tables until its connection ends) and forget the peer
                return
            if did is not None and self.guard.banned(did):
                await self._drop(stream, peer_id)  # cut off meanwhile: its connection is closing
                return
            known = did is not None and self.guard.is_known(did)
            now = self.clock()
            estimate = estimate_ms(len(frame))
            try:
                charge = budgets.admit(did or f"pid:{key}", host, known, estimate, now)
            except OverBudget as exc:
                self._count(self.rules.over_budget(key, known, now, own=exc.key.startswith("peer:")), did)
                continue
            started = time.perf_counter()
            try:  # settled once the synchronous work is done: what _handle awaits (network, other tasks)
                rpc = rpc_pb2.RPC()  # is not this peer's CPU
                rpc.ParseFromString(frame)  # a DecodeError ends the stream (survive_bad_pubsub_rpcs)
                if not self._sender_record_ok(rpc, peer_id):
                    continue
                for refusal in self.rules.check(key, known, rpc, now):
                    self._count(refusal, did)
            finally:
                spent = (time.perf_counter() - started) * 1000
                budgets.settle(charge, max(estimate, spent), self.clock())
            if did is not None and self.guard.banned(did):
                await self._drop(stream, peer_id)
                return
            await self._handle(stream, peer_id, rpc, len(frame))

    async def _read_frame(self, stream) -> bytes:
        """One frame: its length waits as long as the peer is quiet (pubsub streams idle between
        heartbeats), then the rest must come within ``frame_time_s`` of its length."""
        from libp2p.io.exceptions import IncompleteReadError, MessageTooLarge
        from libp2p.network.stream.exceptions import StreamEOF
        from libp2p.utils.varint import ParseError, decode_uvarint

        first = await stream.read(1)
        if not first:
            raise StreamEOF("the pubsub stream ended")
        prefix = first
        with trio.fail_after(self.frame_base_s) as scope:
            while prefix[-1] & 0x80:
                if len(prefix) >= 10:
                    raise ParseError("Varint decoding error: integer exceeds maximum size of 64 bits")
                b = await stream.read(1)
                if not b:
                    raise IncompleteReadError("Stream ended while reading varint length prefix",
                                              expected_bytes=1, received_bytes=0)
                prefix += b
            length = decode_uvarint(prefix)
            if length > self.limits.max_rpc_bytes:
                raise MessageTooLarge(f"Message length {length} exceeds maximum allowed {self.limits.max_rpc_bytes}")
            scope.deadline += length / self.min_rate
            return await read_body(stream, length)

    def _sender_record_ok(self, rpc, peer_id) -> bool:
        import libp2p.pubsub.pubsub as pubsub_module  # by its module name: libp2p_fixes patches it there

        if pubsub_module.maybe_consume_signed_record(rpc, self.pubsub.host, peer_id):
            return True
        self.metrics.inc("pubsub_refused", kind="frame", reason="bad_sender_record")
        return False

    async def _handle(self, stream, peer_id, rpc, size: int) -> None:
        """What py-libp2p 0.8.1's ``continuously_read_stream`` does with a parsed RPC, unchanged."""
        from libp2p.pubsub.pubsub import GossipsubEvent

        pubsub = self.pubsub
        event = GossipsubEvent()
        event.peer_id = peer_id.pretty()
        event.message_size = size
        if rpc.publish:
            event.publish = True
            for msg in rpc.publish:
                if pubsub._is_subscribed_to_msg(msg) and pubsub.manager.is_running:
                    pubsub.manager.run_task(pubsub.push_msg, peer_id, msg)
        if rpc.subscriptions:
            event.subopts = True
            if len(rpc.subscriptions) <= pubsub.max_subscriptions_per_rpc:
                for message in rpc.subscriptions:
                    pubsub.handle_subscription(peer_id, message)
        if rpc.HasField("control"):
            event.control = True
            await pubsub.router.handle_rpc(rpc, peer_id)
        metrics_channel = getattr(stream, "metric_send_channel", None)
        if metrics_channel is not None:
            await metrics_channel.send(event)

    def _count(self, refusal: Refusal, did: str | None) -> None:
        self.metrics.inc("pubsub_refused", refusal.n, kind=refusal.kind, reason=refusal.reason)
        if refusal.invalid and did is not None:
            self.guard.invalid(did, f"pubsub_{refusal.kind}_{refusal.reason}", nbytes=refusal.nbytes)
