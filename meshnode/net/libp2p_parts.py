"""The libp2p objects of a running node, shared by the mesh's services.

The ``Mesh`` makes them when it runs (``Mesh.run``) and each service is given
this holder at construction: a service built before the host exists reads
``parts.host`` when it works, and finds None until then (after shutdown, the
objects stay as they were).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from meshnode.base.errors import MeshnodeError
from meshnode.base.identity.did import peer_id_to_did


@dataclass
class Libp2pParts:
    host: Any = None  # libp2p's BasicHost
    dht: Any = None  # KadDHT
    pubsub: Any = None  # Pubsub
    gossipsub: Any = None  # its GossipSub router

    def connected_dids(self) -> set[str]:
        """The DIDs of the peers the host is connected to now (none before it runs)."""
        out = set()
        for pid in list(self.host.get_connected_peers()) if self.host is not None else []:
            try:
                out.add(peer_id_to_did(pid.to_base58()))
            except MeshnodeError:
                continue
        return out
