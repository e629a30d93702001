"""Every dial of the swarm refuses a banned peer, not only the Mesh's own (mesh_gating): py-libp2p's
DHT and pubsub dial peers themselves (a routing-table refresh, a lookup), which connected a peer
this node had cut off until the notifee closed it again."""

from __future__ import annotations

import pytest

from meshnode.base.identity.did import did_to_peer_id
from meshnode.base.identity.keys import NodeKey
from meshnode.base.metrics import Metrics
from meshnode.net import mesh_gating
from meshnode.net.addresses import AddressGuard
from meshnode.net.events import PeerEvents
from meshnode.net.libp2p_parts import Libp2pParts
from meshnode.net.standing import Standing

NOW = 1_000_000


class Guard:
    """The peer guard's one answer the gate asks for here."""

    def __init__(self, standing: Standing):
        self.standing = standing

    def banned(self, did) -> bool:
        return did is not None and self.standing.is_banned(did, NOW)


def gate_of(standing: Standing) -> mesh_gating.Gating:
    return mesh_gating.Gating(Libp2pParts(), None, Guard(standing), standing, AddressGuard(), PeerEvents(), Metrics(),
                              lambda: NOW)


def a_did() -> str:
    return NodeKey.generate().did


@pytest.fixture
def host():
    from libp2p import new_host
    from libp2p.crypto.ed25519 import create_new_key_pair

    return new_host(key_pair=create_new_key_pair())


async def test_a_dial_of_the_swarm_to_a_banned_peer_never_starts(host):
    from libp2p.network.exceptions import SwarmException
    from libp2p.peer.id import ID
    from multiaddr import Multiaddr

    gate, banned, other = gate_of(Standing()), a_did(), a_did()
    gate.standing.restore_ban(banned, NOW + 60_000, NOW)
    network = host.get_network()
    mesh_gating._refuse_banned_dials(gate, network)
    for did in (banned, other):  # both have an address (nothing listens there)
        host.get_peerstore().add_addrs(ID.from_base58(did_to_peer_id(did)), [Multiaddr("/ip4/127.0.0.1/tcp/9")], 60)

    with pytest.raises(SwarmException, match="cut off"):
        await host.new_stream(ID.from_base58(did_to_peer_id(banned)), ["/meshnode/test/1"])
    assert gate.metrics.get("connections_refused", reason="banned", stage="dial") == 1

    # a peer that is not banned is dialled as before (and fails here, for nothing listens)
    with pytest.raises(Exception) as failed:
        await network.dial_peer(ID.from_base58(did_to_peer_id(other)))
    assert "cut off" not in str(failed.value)
    assert gate.metrics.get("connections_refused", reason="banned", stage="dial") == 1
