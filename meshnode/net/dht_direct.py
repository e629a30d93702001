"""DHT record requests sent straight to given peers (the connected ones), beside py-libp2p's walks.

KadDHT.get_value() and put_value() of py-libp2p 0.8.1 always start with a whole FIND_NODE walk;
in a forming or small mesh the connected peers are one round trip away and hold the record. These
use its private per-peer calls (``ValueStore._get_from_peer`` / ``_store_at_peer``), verified
against 0.8.1 (``libp2p_dht_fixes.dht_hop_timeout`` bounds each one).
"""

from __future__ import annotations

import logging

import trio

log = logging.getLogger("meshnode.net")


VALUE_ANSWER_GRACE = 0.5  # seconds the other peers have after a first valid answer (a newer copy may come)


async def get_value_from_peers(dht, key: str, peers: list, enough: int = 3, owner=None) -> list[bytes]:
    """Ask ``peers`` (e.g. the connected ones) for the DHT record under ``key``, all at once, and
    return the valid values received once ``enough`` have come, every peer has answered (each
    within the hop timeout), or VALUE_ANSWER_GRACE has passed since the first valid one (one
    overloaded peer held 20-node finds for the whole hop timeout: p99 10.4 s, p50 0.1 s). KadDHT.get_value() always starts with a whole FIND_NODE walk and, with
    quorum 0, asks every peer it meets and writes the record back to those without it before it
    answers; in a small mesh the peers already connected hold the record (the owner put it to its
    K closest). A valid answer from ``owner`` (the record's owner, when asked) ends it at once: no
    copy is newer than the one its owner holds, and under load the grace alone cost finds 0.5-1 s.
    Private API (``ValueStore._get_from_peer``), verified against 0.8.1."""
    import libp2p.kad_dht.kad_dht as kad_dht_module

    raw = key.encode("utf-8")
    values: list[bytes] = []
    done = trio.Event()
    pending = len(peers)

    async def last_call() -> None:
        await trio.sleep(VALUE_ANSWER_GRACE)
        done.set()

    async def ask(peer) -> None:
        nonlocal pending
        try:
            with trio.move_on_after(kad_dht_module.QUERY_TIMEOUT):
                record = await dht.value_store._get_from_peer(peer, raw, return_record=True)
                if record is not None:
                    dht.validator.validate(key, record.value)
                    values.append(record.value)
                    if owner is not None and peer == owner:
                        done.set()
                    elif len(values) == 1:  # the others get a moment more: a slow peer does not hold the answer
                        nursery.start_soon(last_call)
        except Exception as exc:  # a peer without the record, gone, or with an invalid one: not counted
            log.debug("value query to %s failed: %s", peer, exc)
        finally:
            pending -= 1
            if pending == 0 or len(values) >= enough:
                done.set()

    if not peers:
        return []
    async with trio.open_nursery() as nursery:
        for peer in peers:
            nursery.start_soon(ask, peer)
        await done.wait()
        nursery.cancel_scope.cancel()
    return values


async def put_value_to_peers(dht, key: str, value: bytes, peers: list) -> set:
    """PUT_VALUE ``key`` = ``value`` at each of ``peers`` at once (each within the hop timeout); the
    peers that accepted it. KadDHT.put_value() stores only after a whole FIND_NODE walk, which on a busy
    mesh outlasts its caller's deadline, so the record reached nobody; the peers already connected
    are one round trip away. Private API (``ValueStore._store_at_peer``), verified against 0.8.1."""
    import libp2p.kad_dht.kad_dht as kad_dht_module

    raw = key.encode("utf-8")
    stored = set()

    async def put(peer) -> None:
        with trio.move_on_after(kad_dht_module.QUERY_TIMEOUT):
            try:
                if await dht.value_store._store_at_peer(peer, raw, value):
                    stored.add(peer)
            except Exception as exc:  # a peer gone or refusing: not counted
                log.debug("value store at %s failed: %s", peer, exc)

    async with trio.open_nursery() as nursery:
        for peer in peers:
            nursery.start_soon(put, peer)
    return stored


def closest_known(dht, key: str, count: int, exclude=()) -> list:
    """The ``count`` routing-table peers closest to ``key`` (connected or not; asking one dials it),
    leaving out ``exclude``."""
    skip = set(exclude)
    closest = dht.routing_table.find_local_closest_peers(key.encode("utf-8"), count + len(skip))
    return [p for p in closest if p not in skip][:count]


def closest_connected(host, key: str, count: int) -> list:
    """The ``count`` connected peers closest to ``key`` by Kademlia distance (the likeliest holders
    of its record)."""
    from libp2p.kad_dht.utils import sort_peer_ids_by_distance

    return sort_peer_ids_by_distance(key.encode("utf-8"), list(host.get_connected_peers()))[:count]
