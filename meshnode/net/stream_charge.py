"""Charges for the inbound streams of a protocol served by py-libp2p's own code (Kad-DHT).

Why: meshnode's own protocols charge every frame by its size before decoding it
(exchange, sync, heartbeats, pubsub_guard). The Kad-DHT's handler is
py-libp2p's: it reads and answers requests from anyone, any number on one
stream, bounded only by its inbound slots and idle timeout (libp2p_dht_fixes).
A request costs a protobuf parse, a routing-table walk and, for PUT_VALUE, a
signature check. So a stream is charged ``estimate_ms(0)`` when it opens, and
each request ``estimate_ms(its bytes + REQUEST_WORK_BYTES)`` when it has been
read (``libp2p_dht_fixes.close_idle_dht_streams`` calls the stream's
``meshnode_charge``), to the peer, its address and subnet (CpuBudgets.admit,
known peers on their own budget), before the handler parses it. A peer that is
banned or over budget has the stream reset or ended, counted as
``stream_refused{protocol,reason}``. The estimates are not settled: the work is
not measured here, so they stand.
"""

from __future__ import annotations

from meshnode.net.budget import OverBudget, estimate_ms
from meshnode.net.libp2p_fixes import reset_quietly
from meshnode.net.peer_guard import PeerGuard, remote_host
from meshnode.net.pubsub_guard import did_of

REQUEST_WORK_BYTES = 4096  # a request's work beyond its parse: its answer (a peer record, a few closer peers,
#                            ~1-4 KiB) and a routing-table walk


def charge_inbound_streams(serve, guard: PeerGuard, metrics, clock, protocol: str,
                           work_bytes: int = REQUEST_WORK_BYTES):
    """``serve(stream)`` behind the charges above."""

    async def handler(stream) -> None:
        peer_id = stream.muxed_conn.peer_id
        did = did_of(peer_id)
        key = did or f"pid:{peer_id.to_base58()}"
        host, known = remote_host(stream.muxed_conn), did is not None and guard.is_known(did)

        def admit(nbytes: int) -> bool:
            try:
                guard.budgets.admit(key, host, known, estimate_ms(nbytes), clock())
            except OverBudget:
                metrics.inc("stream_refused", protocol=protocol, reason="over_budget")
                return False
            return True

        if did is not None and guard.banned(did):
            metrics.inc("stream_refused", protocol=protocol, reason="banned")
        elif admit(0):
            stream.meshnode_charge = lambda nbytes: admit(nbytes + work_bytes)
            return await serve(stream)
        await reset_quietly(stream)

    return handler
