"""The Mesh charging peers for their input, driven in-process with fake streams and gossip messages
(no libp2p host): refusals for budget, weighted invalid input, gossip
ignored rather than rejected and not decoded twice, slow sync frames."""

from __future__ import annotations

from dataclasses import dataclass

import pytest
import trio
import trio.testing

from meshnode.base.container import build_container, cbor, now_ms
from meshnode.base.identity.keys import NodeKey
from meshnode.base.metrics import Metrics
from meshnode.net import exchange
from meshnode.net.budget import BudgetLimits
from meshnode.net.errors import NetError
from meshnode.net.frames import encode_frame
from meshnode.net.mesh import Mesh, NetConfig
from meshnode.net.mesh_gossip import message_key
from meshnode.store import Store


class _Conn:
    def __init__(self, peer_id, host: str):
        self.peer_id, self.host = peer_id, host

    def get_remote_address(self):
        return (self.host, 4001)


class FakeStream:
    """Hands out ``data`` (then EOF, or nothing more while ``hang``) and collects what is written."""

    def __init__(self, data: bytes, peer_id, host: str = "203.0.113.5", hang: bool = False):
        self.data, self.out, self.hang, self.was_reset = data, b"", hang, False
        self.muxed_conn = _Conn(peer_id, host)

    async def read(self, n: int | None = None) -> bytes:
        if not self.data and self.hang:
            await trio.sleep_forever()
        n = len(self.data) if n is None else n
        chunk, self.data = self.data[:n], self.data[n:]
        return chunk

    async def write(self, data: bytes) -> None:
        self.out += data

    async def close(self) -> None:
        pass

    async def reset(self) -> None:
        self.was_reset = True

    def answer(self) -> dict:
        from meshnode.net.frames import FrameDecoder

        return cbor.decode(FrameDecoder(1 << 20).feed(self.out)[0], max_bytes=1 << 20, max_depth=8)[0]


@dataclass
class Message:
    data: bytes
    from_id: bytes
    seqno: bytes = b"\x00" * 8


def peer(key: NodeKey):
    from libp2p.peer.id import ID

    return ID.from_base58(key.peer_id)


async def mesh_for(tmp_path, clock=now_ms, on_hello=None, **config) -> tuple[Mesh, Store]:
    store = await Store.open(tmp_path / "db")
    net = NetConfig(listen=[], announce=[], bootstrap=[], name="victim", **config)
    return Mesh(NodeKey.generate(), net, store, Metrics(), clock=clock, on_hello=on_hello), store


def push_frame(containers: list[bytes]) -> bytes:
    return encode_frame(exchange.encode_message({"op": "push", "containers": containers}))


def test_a_peer_over_its_budget_is_told_when_to_come_back(tmp_path):
    async def main():
        frozen = now_ms()  # no refill between the pushes, however slow the machine
        mesh, store = await mesh_for(tmp_path, clock=lambda: frozen,
                                     budget_limits=BudgetLimits(ms_per_second=1, burst_ms=1, known_factor=1000))
        async with store:
            sender = NodeKey.generate()
            good = build_container(sender, "x_test", {"n": 1}, timestamp_ms=now_ms()).to_bytes()
            first = FakeStream(push_frame([good]), peer(sender))
            await mesh.exchange.serve(first)  # the frame and the container fit in the one-ms burst
            answers = [first.answer()]
            for _ in range(12):
                again = FakeStream(push_frame([good]), peer(sender))
                await mesh.exchange.serve(again)
                answers.append(again.answer())
            refused = [a for a in answers if a["op"] == "error"]
            assert refused and refused[-1]["code"] == "over_budget" and refused[-1]["retry_ms"] > 0
            # refused at admission (over_budget) or, when the first push measured dearer than its
            # estimate on a loaded machine, before its frame was read (in_debt): counted either way
            counted = sum(mesh.metrics.get("exchange_refused", reason=r) for r in ("over_budget", "in_debt"))
            assert counted >= 1
            assert not mesh.standing.is_banned(sender.did, mesh.clock())  # refused, not held against it

            mesh.known.replace([sender.did])  # a known peer: its own, larger budget, no address limits
            known = FakeStream(push_frame([good]), peer(sender))
            await mesh.exchange.serve(known)
            assert known.answer()["op"] == "ack", known.answer()

    trio.run(main)


def test_a_large_invalid_frame_weighs_more_than_one(tmp_path):
    async def main():
        mesh, store = await mesh_for(tmp_path)
        async with store:
            sender = NodeKey.generate()
            junk = encode_frame(cbor.encode({"op": "push", "zz": [b"x" * 1000] * 500}))  # ~500 KiB, invalid
            stream = FakeStream(junk, peer(sender))
            await mesh.exchange.serve(stream)
            assert stream.answer()["code"] == "bad_request"
            assert mesh.standing._peers.peek(sender.did).invalid_weight >= 7
            await mesh.exchange.serve(FakeStream(junk, peer(sender)))
            await mesh.exchange.serve(FakeStream(junk, peer(sender)))
            assert mesh.standing.is_banned(sender.did, mesh.clock())  # 3 frames, not 20

    trio.run(main)


def test_streams_per_address_are_bounded_for_unknown_peers(tmp_path):
    async def main():
        from meshnode.net.addresses import AddressLimits

        mesh, store = await mesh_for(tmp_path, address_limits=AddressLimits(max_streams=1))
        async with store:
            slow = FakeStream(b"", peer(NodeKey.generate()), hang=True)
            async with trio.open_nursery() as nursery:
                nursery.start_soon(mesh.exchange.serve, slow)
                await trio.testing.wait_all_tasks_blocked()
                other = FakeStream(push_frame([b"x"]), peer(NodeKey.generate()))  # a second identity there
                await mesh.exchange.serve(other)
                assert other.answer()["code"] == "busy"
                assert mesh.metrics.get("exchange_refused", reason="address_busy") == 1
                nursery.cancel_scope.cancel()

    trio.run(main)


def test_gossip_is_decoded_once_and_ignored_not_rejected_when_over_budget(tmp_path):
    async def main():
        mesh, store = await mesh_for(tmp_path, budget_limits=BudgetLimits(ms_per_second=0.01, burst_ms=0.5))
        async with store:
            author, forwarder = NodeKey.generate(), NodeKey.generate()
            decoded = []
            decode = mesh.container_gossip._decode
            mesh.container_gossip._decode = lambda raw: decoded.append(raw) or decode(raw)
            c = build_container(author, "x_test", {"n": 1}, timestamp_ms=now_ms())
            message = Message(c.to_bytes(), peer(author).to_bytes())
            assert await mesh.container_gossip.validate_container(peer(forwarder), message)
            send, receive = trio.open_memory_channel(1)

            class Subscription:
                get = receive.receive

            await send.send(message)
            got = await mesh.container_gossip._from_others(Subscription()).__anext__()
            assert got.did == c.did and len(decoded) == 1  # the reader took the validator's container

            ignored = 0
            for n in range(2, 40):  # the forwarder's half millisecond runs out: ignored, not rejected
                other = Message(build_container(author, "x_test", {"n": n}, timestamp_ms=now_ms()).to_bytes(),
                                peer(author).to_bytes(), seqno=bytes([n]) * 8)
                if not await mesh.container_gossip.validate_container(peer(forwarder), other):
                    ignored += 1
                    assert mesh.container_gossip.was_ignored(other) and not mesh.container_gossip.was_ignored(other)
            assert ignored and mesh.metrics.get("gossip_ignored", reason="over_budget") == ignored
            assert mesh.metrics.get("invalid_from_peer") == 0
            assert message_key(message) not in mesh.container_gossip._validated  # handed on, not kept

    trio.run(main)


def test_a_sync_frame_that_trickles_in_is_cut_and_counted(tmp_path):
    async def main():
        mesh, store = await mesh_for(tmp_path, frame_timeout_s=2.0)
        async with store:
            sender = NodeKey.generate()
            stream = FakeStream(b"\x80\x80\x01" + b"x" * 100, peer(sender), hang=True)  # promises 16 KiB
            with pytest.raises(NetError) as cut:
                await mesh.sync._read_sync_frame(sender.did, stream)
            assert cut.value.code == "slow_frame"
            assert mesh.metrics.get("invalid_from_peer", code="slow_frame") == 1

    trio.run(main, clock=trio.testing.MockClock(autojump_threshold=0))


def test_a_push_stops_costing_work_once_its_peer_is_cut_off(tmp_path):
    async def main():
        from meshnode.net.standing import PeerLimits

        mesh, store = await mesh_for(tmp_path, peer_limits=PeerLimits(invalid_threshold=2))
        async with store:
            sender = NodeKey.generate()
            stream = FakeStream(push_frame([b"\xa1\x61a\x01"] * 5), peer(sender))  # five invalid containers
            await mesh.exchange.serve(stream)
            rejected = stream.answer()["rejected"]
            assert [r["code"] for r in rejected[2:]] == ["cut_off"] * 3  # answered, not decoded
            assert mesh.standing.summary(sender.did)["invalid"] == 2
            assert mesh.metrics.get("exchange_refused", reason="cut_off") == 3

    trio.run(main)


def test_strangers_cannot_take_the_sync_slots_of_known_peers(tmp_path):
    async def main():
        mesh, store = await mesh_for(tmp_path, sync_sessions=8, sync_sessions_per_peer=2)
        async with store:
            mesh.sync._serving.update({f"did:stranger:{i}": 2 for i in range(4)})  # 4 identities x 2 sessions
            stranger, friend = NodeKey.generate(), NodeKey.generate()
            mesh.known.replace([friend.did])
            refused = FakeStream(b"", peer(stranger))
            await mesh.sync.serve(refused)
            assert refused.was_reset and mesh.metrics.get("sync_refused", reason="sessions") == 1
            friendly = FakeStream(b"", peer(friend), hang=True)
            with trio.move_on_after(0.5):
                await mesh.sync.serve(friendly)  # served: waits for its first frame
            assert not friendly.was_reset and mesh.metrics.get("sync_refused", reason="sessions") == 1

    trio.run(main)


class SlowStream(FakeStream):
    """Hands out ``data`` ``chunk`` bytes at a time, one chunk every ``every_s`` seconds."""

    def __init__(self, data: bytes, peer_id, chunk: int, every_s: float):
        super().__init__(data, peer_id)
        self.chunk, self.every_s = chunk, every_s

    async def read(self, n: int | None = None) -> bytes:
        await trio.sleep(self.every_s)
        return await super().read(min(self.chunk, len(self.data) if n is None else n))


def test_a_large_frame_on_a_slow_link_gets_time_by_its_length(tmp_path):
    async def main():
        mesh, store = await mesh_for(tmp_path)  # frame_timeout_s 10
        async with store:
            sender = NodeKey.generate()
            body = b"\x00" * (1 << 20)
            slow = SlowStream(encode_frame(body), peer(sender), chunk=16 * 1024, every_s=0.16)  # 100 KiB/s: 10.2 s
            assert await mesh.sync._read_sync_frame(sender.did, slow) == body
            assert mesh.metrics.get("invalid_from_peer", code="slow_frame") == 0

    trio.run(main, clock=trio.testing.MockClock(autojump_threshold=0))


def test_a_known_peers_slow_frame_is_cut_but_not_held_against_it(tmp_path):
    async def main():
        mesh, store = await mesh_for(tmp_path, frame_timeout_s=2.0)
        async with store:
            friend = NodeKey.generate()
            mesh.known.replace([friend.did])
            with pytest.raises(NetError):
                await mesh.sync._read_sync_frame(friend.did, FakeStream(b"\x80\x80\x01" + b"x", peer(friend), hang=True))
            stream = FakeStream(b"\x80\x80\x01" + b"x", peer(friend), hang=True)
            await mesh.exchange.serve(stream)
            assert stream.was_reset
            assert mesh.standing.summary(friend.did)["invalid"] == 0
            assert mesh.metrics.get("slow_frame_from_known_peer") == 2

    trio.run(main, clock=trio.testing.MockClock(autojump_threshold=0))
