"""Each inbound Kad-DHT stream is charged before py-libp2p's handler sees it (net/stream_charge.py)."""

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
                       budget_limits=BudgetLimits(ms_per_second=1, burst_ms=2))
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
    assert 1 <= len(served) <= 4 and len(served) + len(resets) == 10
    assert mesh.metrics.get("stream_refused", protocol="dht", reason="over_budget") == len(resets)
