"""Each inbound Kad-DHT stream, and each request on it, is charged before py-libp2p's handler works on it
(net/stream_charge.py, libp2p_dht_fixes.close_idle_dht_streams)."""

from __future__ import annotations

from types import SimpleNamespace

from meshnode.base.container import now_ms
from meshnode.base.identity.keys import NodeKey
from meshnode.base.metrics import Metrics
from meshnode.net.budget import BudgetLimits
from meshnode.net.mesh import Mesh, NetConfig
from meshnode.net.stream_charge import charge_inbound_streams
from meshnode.store import Store


async def test_streams_past_the_budget_are_reset_before_the_handler(tmp_path):
    from libp2p.peer.id import ID

    frozen = now_ms()
    store = await Store.open(tmp_path / "db")
    config = NetConfig(listen=[], announce=[], bootstrap=[], name="victim",
                       budget_limits=BudgetLimits(ms_per_second=1, burst_ms=1))
    mesh = Mesh(NodeKey.generate(), config, store, Metrics(), clock=lambda: frozen)
    served, resets = [], []
    peer = ID.from_base58(NodeKey.generate().peer_id)

    async def serve(stream):
        served.append(stream)

    async def reset():
        resets.append(1)

    handler = charge_inbound_streams(serve, mesh.guard, mesh.metrics, mesh.clock, "dht")
    async with store:
        for _ in range(10):
            conn = SimpleNamespace(peer_id=peer, get_remote_address=lambda: ("203.0.113.9", 4001))
            await handler(SimpleNamespace(muxed_conn=conn, reset=reset))
    assert 1 <= len(served) <= 5 and len(served) + len(resets) == 10  # 0.2 ms each against a 1 ms burst
    assert mesh.metrics.get("stream_refused", protocol="dht", reason="over_budget") == len(resets)


async def test_each_request_pipelined_on_one_stream_is_charged(tmp_path):
    """py-libp2p's DHT handler reads any number of requests from one stream: each is charged when it
    has been read, and the stream ends once they are over the budget."""
    import libp2p.kad_dht.kad_dht as kad_dht_module
    from libp2p.io.exceptions import IncompleteReadError

    from meshnode.net import libp2p_dht_fixes
    from meshnode.net.frames import encode_varint
    from libp2p.peer.id import ID

    libp2p_dht_fixes.close_idle_dht_streams()
    frozen = now_ms()
    store = await Store.open(tmp_path / "db")
    config = NetConfig(listen=[], announce=[], bootstrap=[], name="victim",
                       budget_limits=BudgetLimits(ms_per_second=1, burst_ms=2))
    mesh = Mesh(NodeKey.generate(), config, store, Metrics(), clock=lambda: frozen)
    wire = bytearray(b"".join(encode_varint(100) + bytes(100) for _ in range(10)))  # ten requests at once

    async def read(n: int = -1) -> bytes:
        chunk = bytes(wire[:n])
        del wire[:n]
        return chunk

    served = []

    async def serve(stream):  # as KadDHT's handler: one request after another until the stream ends
        try:
            while True:
                served.append(await kad_dht_module.read_varint_prefixed_bytes_limited(stream, 1 << 20))
        except IncompleteReadError:
            pass

    async def reset():
        pass

    conn = SimpleNamespace(peer_id=ID.from_base58(NodeKey.generate().peer_id),
                           get_remote_address=lambda: ("203.0.113.9", 4001))
    handler = charge_inbound_streams(serve, mesh.guard, mesh.metrics, mesh.clock, "dht")
    async with store:
        await handler(SimpleNamespace(muxed_conn=conn, reset=reset, read=read))
    assert 1 <= len(served) < 10  # ~0.6 ms each against a 2 ms burst
    assert mesh.metrics.get("stream_refused", protocol="dht", reason="over_budget") == 1
