"""A flat charge for each inbound stream of a protocol served by py-libp2p's own code (Kad-DHT).

Why: meshnode's own protocols charge every frame by its size before decoding it
(exchange, sync, heartbeats, pubsub_guard). The Kad-DHT's handler is
py-libp2p's: it reads and answers requests from anyone, bounded only by its
inbound slots and idle timeout (libp2p_dht_fixes). A stream costs a protobuf
parse, a routing-table walk and, for PUT_VALUE, a signature check: charge each
opened stream ``estimate_ms(STREAM_BYTES)`` to the peer, its address and subnet
(CpuBudgets.admit, known peers on their own budget) before the handler sees it;
a peer that is banned or over budget has the stream reset, counted as
``stream_refused{protocol,reason}``. The estimate is not settled: the work is
not measured here, so the estimate stands.
"""

from __future__ import annotations

from meshnode.net.budget import OverBudget, estimate_ms
from meshnode.net.libp2p_fixes import reset_quietly
from meshnode.net.peer_guard import PeerGuard, remote_host
from meshnode.net.pubsub_guard import did_of

STREAM_BYTES = 4096  # a DHT request with its answer: a peer record, a few closer peers (~1-4 KiB)


def charge_inbound_streams(serve, guard: PeerGuard, metrics, clock, protocol: str, nbytes: int = STREAM_BYTES):
    """``serve(stream)`` behind the charge above."""
    estimate = estimate_ms(nbytes)

    async def handler(stream) -> None:
        peer_id = stream.muxed_conn.peer_id
        did = did_of(peer_id)
        key = did or f"pid:{peer_id.to_base58()}"
        if did is not None and guard.banned(did):
            reason = "banned"
        else:
            try:
                guard.budgets.admit(key, remote_host(stream.muxed_conn), did is not None and guard.is_known(did),
                                    estimate, clock())
                return await serve(stream)
            except OverBudget:
                reason = "over_budget"
        metrics.inc("stream_refused", protocol=protocol, reason=reason)
        await reset_quietly(stream)

    return handler
