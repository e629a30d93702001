"""Workarounds for measured py-libp2p 0.8.1 Kad-DHT behaviour (split from libp2p_fixes.py, same rules).

Each item names what it works around and comes with a test that fails without it: the answer
to FIND_NODE for oneself, providers asked beyond the local store, a bound on each hop of a walk,
idle inbound streams closed, and more inbound requests served at once.
"""

from __future__ import annotations

import logging

import multiaddr
import trio

log = logging.getLogger("meshnode.net")


def answer_find_node_for_self(dht) -> None:
    """Asked FIND_NODE for its own peer id, KadDHT puts itself first in the answer but
    looks its addresses up in its peerstore, which holds only other peers': the entry
    goes out with no address and no record. Fill in the host's advertised addresses and
    its signed peer record. Patches this one DHT object (private API, verified against 0.8.1)."""
    from libp2p.peer.peerstore import env_to_send_in_RPC

    original = dht._add_closer_peers_to_response

    def add_closer_peers(response, closest_peers, exclude_peer_id=None) -> None:
        original(response, closest_peers, exclude_peer_id)
        host = dht.host
        me = host.get_id().to_bytes()
        for entry in response.closerPeers:
            if entry.id == me and not entry.addrs:
                suffix = f"/p2p/{host.get_id().to_base58()}"
                entry.addrs.extend(multiaddr.Multiaddr(str(a).removesuffix(suffix)).to_bytes()
                                   for a in host.get_addrs())
                entry.signedRecord = env_to_send_in_RPC(host)[0]

    dht._add_closer_peers_to_response = add_closer_peers


async def find_providers_network(dht, key: str) -> set:
    """KadDHT.find_providers() answers from the local store alone as soon as it holds one
    record (a node that provides a tag finds only itself), and may repeat peers. Ask the
    closest peers as well (private API, verified against 0.8.1)."""
    raw = key.encode("utf-8")
    found = {p.peer_id for p in dht.provider_store.get_providers(raw)}
    for peer in await dht.peer_routing.find_closest_peers_network(raw):
        if peer == dht.host.get_id():
            continue
        with trio.move_on_after(5):
            try:
                providers, _ = await dht.provider_store._get_providers_from_peer_with_closers(peer, raw)
            except Exception as exc:  # a peer that fails to answer is just not counted
                log.debug("provider query to %s failed: %s", peer, exc)
                continue
            found |= {p.peer_id for p in providers}
    return found


DHT_HOP_SECONDS = 5.0  # 20 processes on two busy cores answered in seconds; a silent peer costs 10 s otherwise


def dht_hop_timeout(seconds: float = DHT_HOP_SECONDS) -> None:
    """Every Kad-DHT query to one peer (FIND_NODE in a walk, GET_VALUE, PUT_VALUE, providers) may
    take py-libp2p 0.8.1's QUERY_TIMEOUT, 10 s, and a walk waits for its slowest peer before the
    next round: one stalled or vanished peer made a lookup take 10 s or more per round. A hop on a
    reachable peer answers in milliseconds (4 hops ~ 240 ms measured; a few seconds on an overloaded
    machine), so give each one ``seconds``
    (the whole lookup is bounded by its caller). Sets the module constant where each module reads
    it (idempotent)."""
    import libp2p.kad_dht.kad_dht as kad_dht_module
    import libp2p.kad_dht.peer_routing as peer_routing_module
    import libp2p.kad_dht.provider_store as provider_store_module

    for module in (kad_dht_module, peer_routing_module, provider_store_module):
        module.QUERY_TIMEOUT = seconds


DHT_IDLE_SECONDS = 5.0  # an inbound DHT stream waiting this long for its next request is closed


def close_idle_dht_streams(seconds: float = DHT_IDLE_SECONDS) -> None:
    """py-libp2p 0.8.1's KadDHT serves at most 12 inbound streams at once and resets every stream
    beyond that, and a handler waits for a stream's next request with no timeout. A requester
    whose request is cancelled (a lookup that has its answer cancels the slower peers; py-libp2p's
    own get_value does the same at its quorum) closes its stream inside the cancelled scope, so
    the close never goes out: the server's handler waits forever and keeps its slot. Twelve
    such, and the node refuses every DHT request for the rest of the connection: while 20
    processes formed a mesh, GET_VALUE, PUT_VALUE and FIND_NODE to such nodes failed or hung,
    announce pushes reached 0 of 5 peers, and finds waited out their 10 s (find-tail;
    tests/test_mesh_lookup_stale.py). A silent peer could do the same on purpose with 12 streams.
    Each wait for a request now ends after ``seconds`` (go-libp2p-kad-dht closes idle streams
    too, after a minute; requests here are one per stream): the stream is closed as at EOF and
    the slot freed. Each request read is also charged, when the stream carries a
    ``meshnode_charge`` (net.stream_charge): the handler serves any number of requests on one
    stream, so a charge per stream would let them be pipelined for free. Patches the reader the
    handler calls (idempotent)."""
    import libp2p.kad_dht.kad_dht as kad_dht_module
    from libp2p.io.exceptions import IncompleteReadError

    original = kad_dht_module.read_varint_prefixed_bytes_limited
    if getattr(original, "closes_idle", False):
        return

    async def read_or_idle(stream, *args, **kwargs):
        with trio.move_on_after(seconds):
            request = await original(stream, *args, **kwargs)
            charge = getattr(stream, "meshnode_charge", None)  # set by net.stream_charge: one charge a request
            if charge is not None and not charge(len(request)):
                raise IncompleteReadError("a DHT request over its sender's budget", 0, 0)  # ends the stream
            return request
        raise IncompleteReadError("no request on an idle DHT stream", 0, 0)  # handled as a clean EOF

    read_or_idle.closes_idle = True
    kad_dht_module.read_varint_prefixed_bytes_limited = read_or_idle


DHT_INBOUND_SLOTS = 48  # inbound DHT streams served at once (py-libp2p 0.8.1: 12, the rest reset)


def widen_dht_inbound(dht, slots: int = DHT_INBOUND_SLOTS) -> None:
    """py-libp2p 0.8.1 resets every inbound DHT stream beyond 12 served at once. While 20 processes
    formed a mesh (walks of ALPHA=10 queries from several nodes, announce pushes, lookups), a
    target's own GET_VALUE answer was a reset in 13 of 67 asks traced (find-tail): the one peer
    sure to hold the record refused it. A request served costs one round trip; with idle streams
    closed (close_idle_dht_streams) a slot is held only while a request is being answered."""
    dht._inbound_limiter = trio.CapacityLimiter(slots)
