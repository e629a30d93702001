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


class FakeYamuxConn:
    """What a YamuxStream asks its connection for when it gives credit back."""

    def __init__(self):
        self.stream_buffers: dict[int, bytearray] = {}

    def rtt(self) -> float:
        return 0.001


def credit_for_small_reads(frames: int, size: int) -> list[int]:
    """Window updates a yamux stream sends while its reader takes ``frames`` frames of ``size`` bytes."""
    from libp2p.stream_muxer.yamux.yamux import YamuxStream

    sent: list[int] = []

    async def main():
        stream = YamuxStream(1, FakeYamuxConn(), True)

        async def send_window_update(increment: int, skip_lock: bool = False) -> None:
            sent.append(increment)

        stream.send_window_update = send_window_update
        for _ in range(frames):
            stream.recv_window -= size  # what the connection does when a DATA frame arrives
            assert stream.recv_window >= 0, "the sender would have been stopped"
            await stream._auto_tune_and_send_window_update(bytes_read=size)  # the reader took it

    trio.run(main)
    return sent


def test_yamux_gives_credit_back_per_half_window_not_per_read(monkeypatch):
    from libp2p.stream_muxer.yamux.yamux import YamuxStream

    current = YamuxStream._auto_tune_and_send_window_update
    monkeypatch.setattr(YamuxStream, "_auto_tune_and_send_window_update", getattr(current, "original", current))
    before = credit_for_small_reads(200, 300)
    assert len(before) >= 100  # py-libp2p 0.8.1: about one WINDOW_UPDATE per read
    libp2p_fixes.batch_yamux_window_updates()
    libp2p_fixes.batch_yamux_window_updates()  # idempotent
    frames, size = 2000, 300
    sent = credit_for_small_reads(frames, size)
    assert 1 <= len(sent) <= frames * size // (128 * 1024) + 1  # one per half window (256 KiB)
    assert sum(sent) <= frames * size + 256 * 1024  # never more credit than was consumed plus growth


def test_own_record_bytes_are_built_once_per_period(monkeypatch):
    import libp2p.peer.peerstore as peerstore_module
    import libp2p.pubsub.gossipsub as gossipsub_module
    import libp2p.pubsub.pubsub as pubsub_module

    built = []

    def env_to_send_in_RPC(host):
        built.append(host)
        return b"record-%d" % len(built), True

    for module in (peerstore_module, pubsub_module, gossipsub_module):
        monkeypatch.setattr(module, "env_to_send_in_RPC", env_to_send_in_RPC)
    clock = [100.0]
    monkeypatch.setattr(libp2p_fixes.time, "monotonic", lambda: clock[0])
    libp2p_fixes.reuse_own_record_bytes(seconds=5.0)
    send = pubsub_module.env_to_send_in_RPC
    assert gossipsub_module.env_to_send_in_RPC is send is peerstore_module.env_to_send_in_RPC

    class Host:
        pass

    a, b = Host(), Host()
    assert send(a) == (b"record-1", True)
    for _ in range(50):
        assert send(a) == (b"record-1", False)
    assert send(b)[0] == b"record-2"  # each host its own record
    clock[0] += 5.0  # the period is over: built again (an address change shows within 5 s)
    assert send(a)[0] == b"record-3"
    assert len(built) == 3
    libp2p_fixes.reuse_own_record_bytes()
    assert pubsub_module.env_to_send_in_RPC is send


def test_idle_fixes_can_be_switched_off_for_a_b_runs(monkeypatch):
    monkeypatch.setenv(libp2p_fixes.IDLE_FIXES_ENV, "0")
    assert libp2p_fixes.cut_idle_cost() is False


def test_app_scores_are_kept_until_the_trust_is_refreshed(monkeypatch):
    from meshnode.base.identity.keys import NodeKey
    from meshnode.net import mesh_reputation

    turned = []
    original = mesh_reputation.peer_id_to_did

    def peer_id_to_did(text):
        turned.append(text)
        return original(text)

    monkeypatch.setattr(mesh_reputation, "peer_id_to_did", peer_id_to_did)
    from libp2p.peer.id import ID

    key = NodeKey.generate()
    peer = ID.from_base58(key.peer_id)
    mesh = mesh_reputation.Reputation(None, None, None, None, None, None, publish=None)
    mesh._trust_now = {key.did: 0.0}
    low = mesh.app_score(peer)
    for _ in range(20):
        assert mesh.app_score(peer) == low
    assert len(turned) == 1
    mesh._trust_now = {key.did: 1.0}  # a reputation round read the trust again
    assert mesh.app_score(peer) > low
    assert len(turned) == 2


def test_dht_maintenance_is_due_on_changes_or_once_a_period():
    from meshnode.net.announce import MaintenanceCadence

    cadence = MaintenanceCadence(republish_ms=600_000, rng=lambda: 0.5)
    table, content = frozenset({"a", "b"}), (("/ip4/127.0.0.1/tcp/1",), (), ())
    assert cadence.due(0, table, content)  # never done
    cadence.done(0, table, content)
    idle_rounds = [t for t in range(30_000, 600_000, 30_000) if cadence.due(t, table, content)]
    assert idle_rounds == []  # nothing changed: no DHT work for 10 minutes (it was every 30 s round)
    assert cadence.due(600_000, table, content)  # then once again
    assert cadence.due(30_000, table | {"c"}, content)  # a peer joined the routing table
    assert cadence.due(30_000, frozenset({"a"}), content)  # one left
    assert cadence.due(30_000, table, (("/ip4/10.0.0.1/tcp/1",), (), ()))  # new addresses
    jittered = MaintenanceCadence(republish_ms=600_000, rng=lambda: 0.0)
    jittered.done(0, table, content)
    assert jittered.due(540_000, table, content) and not jittered.due(539_999, table, content)
