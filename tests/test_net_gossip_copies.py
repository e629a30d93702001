"""Copies of one gossip message that arrive while the first is validated (libp2p_fixes, issue 18):
py-libp2p 0.8.1 validated each, and handed each that passed to the subscription and to every mesh
peer again; a message's pubsub signature was checked twice per copy."""

from __future__ import annotations

import inspect

import pytest
import trio

from meshnode.net import libp2p_fixes


@pytest.fixture
def pubsub():
    from libp2p import new_host
    from libp2p.crypto.ed25519 import create_new_key_pair
    from libp2p.pubsub.gossipsub import PROTOCOL_ID, GossipSub
    from libp2p.pubsub.pubsub import ContentAddressedMessageIDGenerator, Pubsub

    gossipsub = GossipSub(protocols=[PROTOCOL_ID], degree=6, degree_low=4, degree_high=12)
    pubsub = Pubsub(new_host(key_pair=create_new_key_pair()), gossipsub, strict_signing=False,
                    msg_id_constructor=ContentAddressedMessageIDGenerator())
    pubsub.delivered, pubsub.relayed, pubsub.validated = [], [], []
    pubsub.notify_subscriptions = pubsub.delivered.append

    async def relay(forwarder, msg):
        pubsub.relayed.append(forwarder)

    gossipsub.publish = relay
    yield pubsub
    pubsub.seen_messages.stop()


def peers(n: int):
    from libp2p.peer.id import ID

    return [ID(b"\x00\x25" + bytes([i + 1]) * 37) for i in range(n)]


def a_message(author):
    from libp2p.pubsub.pb import rpc_pb2

    return rpc_pb2.Message(data=b"note", seqno=(1).to_bytes(8, "big"), topicIDs=["t"], from_id=author.to_bytes())


async def copies_at_once(pubsub, forwarders, msg) -> None:
    async with trio.open_nursery() as nursery:
        for forwarder in forwarders:
            nursery.start_soon(pubsub.push_msg, forwarder, msg)
            await trio.sleep(0)  # each copy reaches the validator before the first is done


async def test_copies_in_flight_are_validated_delivered_and_relayed_once(pubsub):
    async def validator(forwarder, msg):
        pubsub.validated.append(forwarder)
        await trio.sleep(0.05)  # validation takes a while on a busy node: the other copies arrive
        return True

    pubsub.set_topic_validator("t", validator, is_async_validator=True)
    libp2p_fixes.one_validation_per_message(pubsub)
    forwarders = peers(4)
    await copies_at_once(pubsub, forwarders, a_message(forwarders[0]))
    assert (len(pubsub.validated), len(pubsub.delivered), pubsub.relayed) == (1, 1, [forwarders[0]])


async def test_a_copy_is_validated_afresh_when_the_first_was_ignored(pubsub):
    """The first forwarder over its budget: its copy ignored (not cached as invalid); the next
    forwarder's copy, which waited, is validated and passes."""
    ignored = set()

    async def validator(forwarder, msg):
        pubsub.validated.append(forwarder)
        await trio.sleep(0.05)
        if len(pubsub.validated) == 1:
            ignored.add(bytes(msg.seqno))
            return False
        return True

    pubsub.set_topic_validator("t", validator, is_async_validator=True)
    libp2p_fixes.forget_ignored(pubsub, lambda msg: bytes(msg.seqno) in ignored and not ignored.discard(bytes(msg.seqno)))
    libp2p_fixes.one_validation_per_message(pubsub)
    forwarders = peers(3)
    await copies_at_once(pubsub, forwarders, a_message(forwarders[0]))
    assert len(pubsub.validated) == 2 and len(pubsub.delivered) == 1
    assert len(pubsub.relayed) == 1 and pubsub.relayed[0] in forwarders[1:]  # whichever waiting copy woke first


async def test_a_signature_is_checked_once_per_push(monkeypatch):
    import libp2p.pubsub.pubsub as pubsub_module

    checked = []
    monkeypatch.setattr(pubsub_module, "signature_validator", lambda msg: checked.append(msg) or msg.good)
    libp2p_fixes.verify_signatures_once()

    class Msg:
        def __init__(self, good):
            self.good = good

    async def push(msg):  # count_gossip_refused_unseen's check, then push_msg's, in one task
        return pubsub_module.signature_validator(msg) and pubsub_module.signature_validator(msg)

    good, bad, other = Msg(True), Msg(False), Msg(True)
    assert await push(good) and not await push(bad) and await push(other)
    assert checked == [good, bad, other]  # a bad signature is never remembered as good
    libp2p_fixes.verify_signatures_once()  # idempotent: not wrapped twice
    assert pubsub_module.signature_validator(good) and checked[-1] is good


def test_the_patched_steps_are_where_py_libp2p_does_them():
    """An upgrade that moves these must fail here, not silently undo the fixes."""
    from libp2p.pubsub.pubsub import Pubsub

    source = inspect.getsource(Pubsub.push_msg)
    assert source.index("self._is_msg_seen(msg)") < source.index("await self.validate_msg(") \
        < source.index("self._mark_msg_seen(msg)")
    assert "signature_validator(msg)" in source
    assert "self.manager.run_task(self.push_msg, peer_id, msg)" in inspect.getsource(Pubsub.continuously_read_stream)
