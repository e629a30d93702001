"""py-libp2p's own gossip drops are counted (libp2p_fixes.count_gossip_drops, issue 18): a full
per-peer send queue, a full subscription channel and the rate and score gates used to drop
messages with nothing but a log line at DEBUG or WARNING."""

from __future__ import annotations

import inspect
from types import SimpleNamespace

from meshnode.net import libp2p_fixes


def gossipsub_with_one_slot_queue():
    from libp2p.peer.id import ID
    from libp2p.pubsub.gossipsub import PROTOCOL_ID, GossipSub
    from libp2p.pubsub.rpc_queue import RpcQueue

    gossipsub = GossipSub(protocols=[PROTOCOL_ID], degree=6, degree_low=4, degree_high=12)
    peer = ID(b"\x00\x25" + bytes(37))
    pubsub = SimpleNamespace(peer_queues={peer: RpcQueue(max_size=1)}, subscribed_topics_send={}, topic_ids=set(),
                             notify_subscriptions=lambda msg: None, push_msg=None)
    gossipsub.pubsub = pubsub
    return gossipsub, pubsub, peer


def a_publish(seqno: int):
    from libp2p.pubsub.pb import rpc_pb2

    return rpc_pb2.RPC(publish=[rpc_pb2.Message(data=b"note", seqno=seqno.to_bytes(8, "big"), topicIDs=["t"])])


def test_a_message_the_full_send_queue_drops_is_counted():
    gossipsub, pubsub, peer = gossipsub_with_one_slot_queue()
    counted: list[tuple[str, int]] = []
    libp2p_fixes.count_gossip_drops(pubsub, gossipsub, lambda reason, n: counted.append((reason, n)))
    gossipsub.send_rpc(peer, a_publish(1))  # fills the one slot
    gossipsub.send_rpc(peer, a_publish(2))  # dropped by py-libp2p: before the fix, only a DEBUG line
    assert counted == [("send_queue_full", 1)]


def test_a_message_the_full_subscription_channel_drops_is_counted():
    import trio

    gossipsub, pubsub, peer = gossipsub_with_one_slot_queue()
    send, receive = trio.open_memory_channel(1)
    delivered = []
    pubsub.subscribed_topics_send, pubsub.topic_ids = {"t": send}, {"t"}
    pubsub.notify_subscriptions = lambda msg: delivered.append(msg)
    counted: list[tuple[str, int]] = []
    libp2p_fixes.count_gossip_drops(pubsub, gossipsub, lambda reason, n: counted.append((reason, n)))
    message = a_publish(1).publish[0]
    pubsub.notify_subscriptions(message)
    send.send_nowait(message)  # the channel is full now
    pubsub.notify_subscriptions(message)
    assert counted == [("subscription_full", 1)] and len(delivered) == 2


def test_the_patched_names_are_where_py_libp2p_drops_gossip():
    """An upgrade that moves these must fail here, not silently stop counting."""
    from libp2p.pubsub.gossipsub import GossipSub
    from libp2p.pubsub.pubsub import Pubsub

    assert 'self._handle_dropped_rpc(peer_id, part, "queue_full")' in inspect.getsource(GossipSub.send_rpc)
    assert "self._check_spam_protection(" in inspect.getsource(GossipSub.publish)
    assert "self._check_iwant_rate_limit(" in inspect.getsource(GossipSub.handle_iwant)
    assert "self.notify_subscriptions(msg)" in inspect.getsource(Pubsub.push_msg)
    assert '"Validation timeout"' in inspect.getsource(Pubsub.validate_msg)


async def test_a_validation_timeout_is_counted_once_not_once_per_copy():
    """py-libp2p caches a timed-out validation as invalid: each later copy of the message (from the
    other mesh peers, IWANT answers) is refused from that cache without a new timeout."""
    from libp2p.pubsub.pubsub import ValidationCache, ValidationResult
    import time

    gossipsub, pubsub, peer = gossipsub_with_one_slot_queue()
    pubsub.validation_cache = ValidationCache()
    pubsub._msg_id_constructor = lambda msg: msg.seqno
    pubsub._is_msg_seen = lambda msg: False

    async def push_msg(forwarder, msg):  # Pubsub.push_msg's validation step, as 0.8.1 does it
        cached = pubsub.validation_cache.get(msg.seqno)
        if cached is None:
            pubsub.validation_cache.put(msg.seqno, ValidationResult(is_valid=False, timestamp=time.time(),
                                                                    error_message="Validation timeout"))

    pubsub.push_msg = push_msg
    counted: list[tuple[str, int]] = []
    libp2p_fixes.count_gossip_drops(pubsub, gossipsub, lambda reason, n: counted.append((reason, n)))
    message = a_publish(1).publish[0]
    for _ in range(3):  # the same message from three mesh peers
        await pubsub.push_msg(peer, message)
    assert counted == [("validation_timeout", 1)]
