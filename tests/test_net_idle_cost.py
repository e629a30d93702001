"""What an idle mesh costs each node inside py-libp2p, and the libp2p_fixes that cut it: IDONTWANT
only for large messages, a sender's signed peer record verified once per bytes (issue 18)."""

from __future__ import annotations

import inspect
from types import SimpleNamespace

import trio

from meshnode.net import libp2p_fixes


class FakeGossip:
    """What GossipSub.publish does around IDONTWANT: no await before it asks to emit."""

    def __init__(self):
        self.emitted: list[bytes] = []

    async def publish(self, msg_forwarder, pubsub_msg) -> None:
        await self._emit_idontwant_for_message(pubsub_msg.seqno, pubsub_msg.topicIDs)
        await trio.sleep(0)

    async def _emit_idontwant_for_message(self, msg_id, topic_ids) -> None:
        await trio.sleep(0)  # a send yields: another task's publish may run meanwhile
        self.emitted.append(msg_id)


def message(seqno: bytes, size: int):
    return SimpleNamespace(seqno=seqno, data=b"x" * size, topicIDs=["t"])


def test_idontwant_goes_only_with_messages_of_at_least_the_threshold():
    gossip = FakeGossip()
    libp2p_fixes.idontwant_only_for_large(gossip, threshold=1024)

    async def main():
        async with trio.open_nursery() as nursery:  # interleaved: each publish sees its own size
            for i in range(20):
                nursery.start_soon(gossip.publish, "peer", message(b"big%d" % i, 1024))
                nursery.start_soon(gossip.publish, "peer", message(b"small%d" % i, 300))

    trio.run(main)
    assert sorted(gossip.emitted) == sorted(b"big%d" % i for i in range(20))


def test_the_patched_names_are_where_py_libp2p_calls_them():
    """An upgrade that moves these calls must fail here, not silently undo the fixes."""
    import libp2p.pubsub.gossipsub as gossipsub_module
    import libp2p.pubsub.pubsub as pubsub_module

    assert "self._emit_idontwant_for_message(" in inspect.getsource(gossipsub_module.GossipSub.publish)
    assert "maybe_consume_signed_record(" in inspect.getsource(pubsub_module.Pubsub.continuously_read_stream)
    assert "maybe_consume_signed_record(" in inspect.getsource(gossipsub_module.GossipSub.handle_rpc)


def test_a_sender_record_is_verified_once_per_peer_and_bytes(monkeypatch):
    import libp2p.pubsub.gossipsub as gossipsub_module
    import libp2p.pubsub.pubsub as pubsub_module

    checked = []

    def verify(msg, host, peer_id) -> bool:
        checked.append((peer_id, msg.senderRecord))
        return msg.senderRecord != b"forged"

    monkeypatch.setattr(pubsub_module, "maybe_consume_signed_record", verify)
    monkeypatch.setattr(gossipsub_module, "maybe_consume_signed_record", verify)
    libp2p_fixes.verify_sender_records_once(kept=2)
    consume = pubsub_module.maybe_consume_signed_record
    assert gossipsub_module.maybe_consume_signed_record is consume

    def rpc(record: bytes | None):
        return SimpleNamespace(HasField=lambda name: record is not None, senderRecord=record)

    for _ in range(5):
        assert consume(rpc(b"r1"), None, "a") is True
    assert consume(rpc(None), None, "a") is True  # no record: nothing to check
    assert checked == [("a", b"r1")]
    assert consume(rpc(b"r2"), None, "a") is True and consume(rpc(b"r1"), None, "b") is True
    assert len(checked) == 3  # new bytes, another peer: checked
    for _ in range(3):  # a record that fails is checked (and refused) every time
        assert consume(rpc(b"forged"), None, "c") is False
    assert checked[-3:] == [("c", b"forged")] * 3
    libp2p_fixes.verify_sender_records_once()  # once patched, calling again changes nothing
    assert pubsub_module.maybe_consume_signed_record is consume
