"""The libp2p objects of a running node, shared by the mesh's services.

The ``Mesh`` makes them when it runs (``Mesh.run``) and each service is given
this holder at construction: a service built before the host exists reads
``parts.host`` when it works, and finds None until then (after shutdown, the
objects stay as they were).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass
class Libp2pParts:
    host: Any = None  # libp2p's BasicHost
    dht: Any = None  # KadDHT
    pubsub: Any = None  # Pubsub
    gossipsub: Any = None  # its GossipSub router
