"""Pubsub frames are charged and checked before py-libp2p acts on them (net/pubsub_guard.py), with real
hosts on loopback in one process: a victim Mesh, an honest Mesh gossiping to it, and raw py-libp2p hosts
writing hand-made GossipSub RPCs (unknown-topic publishes, subscription churn, IHAVE spam, GRAFT on a
topic the victim does not carry). Each attacker is cut off; the honest peer's gossip still arrives."""

from __future__ import annotations

import multiaddr
import trio

from meshnode.base.container import build_container, now_ms
from meshnode.base.identity.keys import NodeKey
from meshnode.base.metrics import Metrics
from meshnode.net.mesh import Mesh, NetConfig
from meshnode.net.mesh_gossip import CONTAINER_TOPIC
from meshnode.net.pubsub_guard import did_of
from meshnode.store import Store
from pubsub_streams import FramesStream

FRAMES = 30  # per attacker: more than the 20 invalid inputs that cut a peer off
JUNK = "/junk/1"


def rpcs(kind: str) -> list[bytes]:
    """``FRAMES`` serialized RPCs of one attack."""
    from libp2p.pubsub.pb import rpc_pb2

    def one(i: int):
        if kind == "unknown_topic":
            return rpc_pb2.RPC(publish=[rpc_pb2.Message(data=bytes(2000), seqno=i.to_bytes(8, "big"),
                                                        topicIDs=[JUNK])])
        if kind == "churn":
            return rpc_pb2.RPC(subscriptions=[rpc_pb2.RPC.SubOpts(subscribe=j % 2 == 0, topicid=f"/churn/{i}")
                                              for j in range(16)])
        if kind == "ihave":  # 11 IHAVEs of 200 ids in a frame: more than one heartbeat allows, every frame
            return rpc_pb2.RPC(control=rpc_pb2.ControlMessage(ihave=[rpc_pb2.ControlIHave(
                topicID=CONTAINER_TOPIC, messageIDs=[bytes([i, j, k]) * 10 for k in range(200)]) for j in range(11)]))
        return rpc_pb2.RPC(control=rpc_pb2.ControlMessage(graft=[rpc_pb2.ControlGraft(topicID=JUNK)]))

    return [one(i).SerializeToString() for i in range(FRAMES)]


async def node(tmp_path, name: str) -> tuple[Mesh, Store]:
    store = await Store.open(tmp_path / name)
    config = NetConfig(listen=["/ip4/127.0.0.1/tcp/0"], announce=[], bootstrap=[], name=name)
    return Mesh(NodeKey.generate(), config, store, Metrics()), store


def address_of(mesh: Mesh) -> multiaddr.Multiaddr:
    return next(a for a in mesh.host.get_addrs() if "127.0.0.1" in str(a)).encapsulate(
        multiaddr.Multiaddr(f"/p2p/{mesh.host.get_id().to_base58()}"))


async def until(check, seconds: float = 15.0) -> None:
    """Until ``check()`` holds (looked at every 20 ms: nothing here offers an event to wait on)."""
    with trio.fail_after(seconds):
        while not check():
            await trio.sleep(0.02)


async def attack(victim: Mesh, kind: str) -> str:
    """A fresh identity writes ``kind``'s RPCs on a pubsub stream to ``victim``; its DID."""
    from libp2p import new_host
    from libp2p.crypto.ed25519 import create_new_key_pair
    from libp2p.crypto.x25519 import create_new_key_pair as x25519_key_pair
    from libp2p.network.config import ConnectionConfig
    from libp2p.network.stream.exceptions import StreamError
    from libp2p.peer.peerinfo import info_from_p2p_addr
    from libp2p.pubsub.gossipsub import PROTOCOL_ID_V12
    from libp2p.security.noise.transport import PROTOCOL_ID as NOISE, Transport as Noise
    from libp2p.stream_muxer.yamux.yamux import PROTOCOL_ID as YAMUX, Yamux
    from libp2p.utils.varint import encode_varint_prefixed

    key_pair = create_new_key_pair(NodeKey.generate().seed())
    host = new_host(key_pair=key_pair, sec_opt={NOISE: Noise(key_pair, noise_privkey=x25519_key_pair().private_key)},
                    muxer_opt={YAMUX: Yamux}, connection_config=ConnectionConfig(max_connections_per_peer=1))
    did = did_of(host.get_id())
    async with host.run([multiaddr.Multiaddr("/ip4/127.0.0.1/tcp/0")]):
        info = info_from_p2p_addr(address_of(victim))
        await host.connect(info)
        stream = await host.new_stream(info.peer_id, [PROTOCOL_ID_V12])
        try:
            try:
                await stream.write(b"".join(encode_varint_prefixed(r) for r in rpcs(kind)))
            except StreamError:  # cut off before all was written
                pass
            await until(lambda: victim.standing.is_banned(did, victim.clock()))
            await until(lambda: not host.get_network().get_connections(info.peer_id))
        finally:
            await host.close()
    return did


async def test_attackers_are_cut_off_per_frame_kind_while_honest_gossip_arrives(tmp_path):
    victim, victim_store = await node(tmp_path, "victim")
    honest, honest_store = await node(tmp_path, "honest")
    async with victim_store, honest_store, trio.open_nursery() as nursery:
        await nursery.start(victim.run)
        await nursery.start(honest.run)
        from libp2p.peer.peerinfo import info_from_p2p_addr

        await honest.host.connect(info_from_p2p_addr(address_of(victim)))
        await until(lambda: victim.host.get_id() in honest.gossipsub.mesh.get(CONTAINER_TOPIC, ()))

        cut_off = {kind: await attack(victim, kind) for kind in ("unknown_topic", "churn", "ihave", "graft")}

        await honest.gossip(build_container(honest.key, "x_test", {"n": 1}, timestamp_ms=now_ms()))
        await until(lambda: victim.metrics.get("containers_received", via="gossip") == 1)

        codes = {kind: victim.standing.summary(did)["invalid_by_code"] for kind, did in cut_off.items()}
        assert set(codes["unknown_topic"]) == {"pubsub_publish_unknown_topic"}, codes
        assert set(codes["churn"]) == {"pubsub_subscribe_churn"}, codes
        assert set(codes["ihave"]) == {"pubsub_ihave_over_heartbeat"}, codes
        assert set(codes["graft"]) == {"pubsub_graft_unknown_topic"}, codes
        assert victim.metrics.get("pubsub_refused", kind="graft", reason="unknown_topic") >= 20
        assert victim.metrics.get("peers_cut_off") == 4
        assert victim.standing.summary(honest.key.did)["invalid"] == 0
        nursery.cancel_scope.cancel()


async def frames_over_budget(tmp_path, limits) -> tuple[Mesh, list[str], FramesStream, str]:
    """Six empty RPCs, then eight undecodable frames, from one stranger on one stream, to a victim with
    ``limits`` (BudgetLimits): the victim, what was reported undecodable, the stream, the sender's DID."""
    from types import SimpleNamespace

    from libp2p import new_host
    from libp2p.peer.id import ID
    from libp2p.pubsub.gossipsub import PROTOCOL_ID, GossipSub
    from libp2p.pubsub.pubsub import Pubsub

    from meshnode.net import libp2p_fixes
    from meshnode.net.pubsub_guard import PubsubGuard

    frozen = now_ms()
    store = await Store.open(tmp_path / "db")
    config = NetConfig(listen=[], announce=[], bootstrap=[], name="victim", budget_limits=limits)
    mesh = Mesh(NodeKey.generate(), config, store, Metrics(), clock=lambda: frozen)
    gossipsub = GossipSub(protocols=[PROTOCOL_ID], degree=6, degree_low=4, degree_high=12)
    pubsub = Pubsub(new_host(), gossipsub)
    pubsub._manager = SimpleNamespace(is_running=True)  # the read loop runs while its service does
    try:
        guard = PubsubGuard(mesh.guard, mesh.metrics, mesh.clock)
        guard.attach(pubsub, gossipsub)
        reported = []
        libp2p_fixes.survive_bad_pubsub_rpcs(pubsub, lambda peer, code: reported.append(code), serve=guard.serve)
        sender = NodeKey.generate()
        stream = FramesStream(ID.from_base58(sender.peer_id), [b""] * 6 + [b"\x0a\xff\xff\xff\xff\x0f" + bytes(40)] * 8)
        async with store:
            await pubsub.host.get_mux().handlers[PROTOCOL_ID](stream)
    finally:
        pubsub.seen_messages.stop()
    return mesh, reported, stream, sender.did


async def test_a_frame_over_budget_is_dropped_before_it_is_parsed(tmp_path):
    """Six empty RPCs fill a one-ms budget; the undecodable frame after them is never parsed (no
    undecodable_rpc), and every fourth frame dropped over budget counts as invalid input."""
    from meshnode.net.budget import BudgetLimits

    mesh, reported, stream, sender = await frames_over_budget(tmp_path, BudgetLimits(ms_per_second=1, burst_ms=1))
    assert reported == [] and stream.resets == 1  # once, at its end (as py-libp2p's loop: reset, peer forgotten)
    dropped = mesh.metrics.get("pubsub_refused", kind="frame", reason="over_budget")
    assert dropped >= 8 and mesh.standing.summary(sender)["invalid_by_code"] == {"pubsub_frame_over_budget": dropped // 4}


async def test_frames_over_a_budget_others_emptied_are_dropped_and_not_held_against_the_sender(tmp_path):
    """All strangers' budget spent (by a swarm): an honest stranger's frames are dropped unread, but
    it is no fault of its own, so nothing counts as its invalid input."""
    from meshnode.net.budget import BudgetLimits

    limits = BudgetLimits(ms_per_second=1000, burst_ms=1000, strangers_ms_per_second=1, strangers_burst_ms=1)
    mesh, reported, stream, sender = await frames_over_budget(tmp_path, limits)
    assert reported == []
    assert mesh.metrics.get("pubsub_refused", kind="frame", reason="shared_over_budget") >= 8
    assert mesh.metrics.get("pubsub_refused", kind="frame", reason="over_budget") == 0
    assert mesh.standing.summary(sender)["invalid"] == 0
