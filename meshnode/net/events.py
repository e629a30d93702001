"""What happens on the mesh that more than one service reacts to, and the node's parts built after it.

Services are built in order, each given what it needs; where two of them must
hear of each other both ways (the gate sees a connection identified, and the
announce pusher and the heartbeat sender act on it), the one that sees the
event fires it here and the others subscribe at construction. Nothing is
patched into a service afterwards.

``PeerEvents`` are the mesh's own; ``MeshHooks`` link the mesh to parts of the
node built after it (the GMP service, the reactor): the node makes one, gives
it to the ``Mesh``, and each such part subscribes itself when it is built.
"""

from __future__ import annotations

from typing import Callable

from meshnode.base.container import Container

class PeerEvents:
    """A connection identified, a peer gone, a peer heard again, an upkeep round: listeners in
    the order they subscribed, called synchronously (a listener that has work to do starts it)."""

    def __init__(self) -> None:
        self._identified: list[Callable] = []
        self._gone: list[Callable[[str | None], None]] = []
        self._back: list[Callable[[], None]] = []
        self._upkeep: list[Callable[[int, set[str]], None]] = []

    def on_identified(self, listener: Callable) -> None:
        """``listener(did, conn, nursery)``: ``conn`` to ``did`` was identified and kept."""
        self._identified.append(listener)

    def on_gone(self, listener: Callable[[str | None], None]) -> None:
        """``listener(did)``: the last connection of a peer closed (did None: not one of ours)."""
        self._gone.append(listener)

    def on_back(self, listener: Callable[[], None]) -> None:
        """``listener()``: a peer appeared, or came back after it went quiet."""
        self._back.append(listener)

    def on_upkeep(self, listener: Callable[[int, set[str]], None]) -> None:
        """``listener(now_ms, connected_dids)``: forget what strangers left (each maintenance round)."""
        self._upkeep.append(listener)

    def identified(self, did: str, conn, nursery) -> None:
        for listener in self._identified:
            listener(did, conn, nursery)

    def gone(self, did: str | None) -> None:
        for listener in self._gone:
            listener(did)

    def back(self) -> None:
        for listener in self._back:
            listener()

    def upkeep(self, now: int, connected: set[str]) -> None:
        for listener in self._upkeep:
            listener(now, connected)

class MeshHooks:
    """The node's parts the mesh tells of arrivals, and asks whom it works with: the GMP service
    (``net.mesh_gmp.MeshGmp`` subscribes itself) and whoever wants each new note or GMP container
    (the reactor's poke)."""

    def __init__(self) -> None:
        self._stored: list[Callable[[Container], None]] = []
        self.gmp = None  # the GMP service, once it subscribed (one per node)

    def on_stored(self, listener: Callable[[Container], None]) -> None:
        """``listener(c)`` for each note or GMP container stored new from the network."""
        self._stored.append(listener)

    def serve_gmp(self, gmp) -> None:
        """The GMP service: told of each GMP container admitted (``arrived``), asked for its
        ``coworkers`` and ``sync_peers``."""
        if self.gmp is not None and self.gmp is not gmp:
            raise ValueError("a node runs one GMP service")
        self.gmp = gmp

    def stored(self, c: Container) -> None:
        for listener in self._stored:
            listener(c)

    def gmp_arrived(self, did: str, received_from: str | None) -> None:
        if self.gmp is not None:
            self.gmp.arrived(did, received_from)

    async def coworkers(self) -> set[str]:
        """Peers this node chose to work with on a goal (none without GMP)."""
        return set(await self.gmp.coworkers()) if self.gmp is not None else set()

    async def goal_peers(self) -> set[str]:
        """Peers sharing a goal with this node, whom sync must reach (none without GMP)."""
        return set(await self.gmp.sync_peers()) if self.gmp is not None else set()
