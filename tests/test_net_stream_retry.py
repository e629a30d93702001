"""A stream whose connection closed as it was opened is tried once more (mesh_gating.open_stream).

py-libp2p 0.8.1's ``Swarm.new_stream`` dials only when a peer has no listed connection: while a
connection that closed is still listed, it fails with "No valid connections available" and does
not dial. A fetch in a five-node chain failed so in CI (stop 29)."""

from __future__ import annotations

import multiaddr
import pytest
import trio

from meshnode.base.identity.did import peer_id_to_did
from meshnode.base.metrics import Metrics
from meshnode.net import mesh_gating
from meshnode.net.addresses import AddressGuard
from meshnode.net.errors import NetError
from meshnode.net.events import PeerEvents
from meshnode.net.libp2p_parts import Libp2pParts
from meshnode.net.standing import Standing

PROTOCOL = "/meshnode/test-retry/1.0.0"
NOW = 1_000_000


class Guard:
    """The peer guard's one answer the gate asks for here."""

    def __init__(self, standing: Standing):
        self.standing = standing

    def banned(self, did) -> bool:
        return did is not None and self.standing.is_banned(did, NOW)


class Gate(mesh_gating.Gating):
    def __init__(self, host):
        standing = Standing()
        super().__init__(Libp2pParts(host=host), None, Guard(standing), standing, AddressGuard(), PeerEvents(),
                         Metrics(), lambda: NOW)

    def speaks(self, did: str, protocol: str) -> bool:
        return True  # identify is not what this test is about


class ClosedConnection:
    """What the swarm still lists for a moment after a connection closed."""
    is_closed = True


def new_host():
    from libp2p import new_host as libp2p_host
    from libp2p.crypto.ed25519 import create_new_key_pair

    return libp2p_host(key_pair=create_new_key_pair())


async def answer(stream) -> None:
    await stream.write(b"ok")
    await stream.close()


async def test_a_closed_connection_still_listed_fails_the_stream_once_then_it_dials():
    from libp2p.network.exceptions import SwarmException

    a, b = new_host(), new_host()
    b.set_stream_handler(PROTOCOL, answer)
    listen = [multiaddr.Multiaddr("/ip4/127.0.0.1/tcp/0")]
    async with a.run(listen), b.run(listen), trio.open_nursery() as nursery:
        a.get_peerstore().add_addrs(b.get_id(), b.get_addrs(), 60)
        network, stale = a.get_network(), ClosedConnection()
        network.connections[b.get_id()] = [stale]

        # py-libp2p alone: the stream fails, and nothing is dialled
        with pytest.raises(SwarmException, match="No valid connections"):
            await a.new_stream(b.get_id(), [PROTOCOL])

        async def close_completes() -> None:  # the swarm forgets the closed connection a moment later
            await trio.sleep(0.2)
            network.connections[b.get_id()].remove(stale)

        nursery.start_soon(close_completes)
        gate = Gate(a)
        stream = await gate.open_stream(peer_id_to_did(b.get_id().to_base58()), PROTOCOL)
        assert await stream.read(2) == b"ok"
        assert gate.metrics.get("stream_retries", reason="connection_closed") == 1
        assert not any(conn.is_closed for conn in network.get_connections(b.get_id()))
        nursery.cancel_scope.cancel()


async def test_a_peer_that_was_never_connected_is_not_tried_twice():
    a, b = new_host(), new_host()  # b never listens
    async with a.run([multiaddr.Multiaddr("/ip4/127.0.0.1/tcp/0")]):
        a.get_peerstore().add_addrs(b.get_id(), [multiaddr.Multiaddr("/ip4/127.0.0.1/tcp/9")], 60)
        gate = Gate(a)
        with pytest.raises(NetError) as failed:
            await gate.open_stream(peer_id_to_did(b.get_id().to_base58()), PROTOCOL)
        assert failed.value.code == "unreachable" and "fail to open connection" in failed.value.reason
        assert gate.metrics.get("stream_retries") == 0
