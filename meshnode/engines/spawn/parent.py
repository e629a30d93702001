"""The parent's side of a spawn, whether its node runs or not.

``LiveParent`` is used inside the running node from the worker thread that runs ``spawn_child``:
every store access and network question goes back to the node's trio loop
(``trio.from_thread.run``), so the node's one-writer rule holds. ``LocalParent`` is used when no
node runs: its own connection to the parent's database.
"""

from __future__ import annotations

from pathlib import Path
from typing import Callable, Protocol, TypeVar

import multiaddr
import trio

from meshnode.base.config import Config
from meshnode.base.identity.did import did_to_peer_id
from meshnode.base.identity.keys import NodeKey
from meshnode.net.libp2p_fixes import local_ipv4s
from meshnode.base.errors import SpawnError
from meshnode.engines.spawn import launch
from meshnode.engines.spawn.processes import ChildProcesses
from meshnode.store.database import Database

T = TypeVar("T")
PING_SECONDS = 5.0  # one reachability probe of a child (reached() is polled)


class ParentSide(Protocol):
    did: str
    peer_id: str
    name: str
    home: Path
    db_path: Path
    running: bool

    def addresses(self) -> list[str]: ...
    def write(self, fn: Callable[[Database], T]) -> T: ...
    def read(self, fn: Callable[[Database], T]) -> T: ...
    def reached(self, did: str) -> bool: ...
    def launch(self, home: Path, autostart: str) -> dict: ...
    def exited(self, launched: dict) -> bool: ...


def parent_names(config: Config, key: NodeKey) -> tuple[str, str, str, Path, Path]:
    """What both sides name the parent by: (did, peer_id, name, home, db_path)."""
    return key.did, key.peer_id, config.name, config.home, config.db_path


class LocalParent:
    """No node runs: the parent's own Database connection (close it after)."""

    running = False

    def __init__(self, config: Config, key: NodeKey, db: Database | None = None):
        self.config = config
        self.did, self.peer_id, self.name, self.home, self.db_path = parent_names(config, key)
        self._own = db is None
        self.db = db if db is not None else Database(config.db_path, create=False)

    def addresses(self) -> list[str]:
        """Where the stopped parent will listen: ``net.announce``, else its listen addresses (a
        wildcard as this host's interfaces). A parent that never ran, or whose port is chosen at
        each start (``tcp/0``), has none to give: ``parent_never_ran``."""
        ran = self.db.conn.execute("SELECT 1 FROM main_process WHERE name = 'node'").fetchone()
        if ran is None:
            raise SpawnError("parent_never_ran", "the parent node has never run (`meshnode start` once, then spawn)")
        found = stopped_addresses(self.config)
        if not found:
            raise SpawnError("parent_never_ran", "the stopped parent has no fixed address (its [net] listen port is 0);"
                             " start it (spawn then asks it) or set a port")
        return [f"{a}/p2p/{self.peer_id}" for a in found]

    def write(self, fn: Callable[[Database], T]) -> T:
        return fn(self.db)

    def read(self, fn: Callable[[Database], T]) -> T:
        return fn(self.db)

    def reached(self, did: str) -> bool:
        return False  # no node to reach it from; the service asks the child itself

    def launch(self, home: Path, autostart: str) -> dict:
        return launch.launch(home, autostart)  # detached: init reaps it once this process exits

    def exited(self, launched: dict) -> bool:
        return launch.exited(launched.get("pid"))

    def close(self) -> None:
        if self._own:
            self.db.close()


def stopped_addresses(config: Config) -> list[str]:
    """The addresses a node with ``config`` announces when it runs (without /p2p), fixed ports only."""
    announce = list(config.get("net", "announce"))
    if announce:
        return announce
    out = []
    for text in config.get("net", "listen"):
        ma = multiaddr.Multiaddr(text)
        if ma.value_for_protocol("tcp") == "0":
            continue
        names = [p.name for p in ma.protocols()]
        port = ma.value_for_protocol("tcp")
        if "ip4" in names and ma.value_for_protocol("ip4") == "0.0.0.0":
            out += [f"/ip4/{ip}/tcp/{port}" for ip in local_ipv4s()]
        elif "ip6" in names and ma.value_for_protocol("ip6") == "::":
            out.append(f"/ip6/::1/tcp/{port}")
        else:
            out.append(text)
    return out


class LiveParent:
    """Inside the running node, called from a worker thread (never from the trio loop itself)."""

    running = True

    def __init__(self, config: Config, key: NodeKey, store, mesh, processes: ChildProcesses | None = None):
        self.config = config
        self.did, self.peer_id, self.name, self.home, self.db_path = parent_names(config, key)
        self.store, self.mesh = store, mesh
        self.processes = processes if processes is not None else ChildProcesses()

    def launch(self, home: Path, autostart: str) -> dict:
        """``launch.launch``, a direct start opened on the node's loop as a process the node waits on."""
        return launch.launch(home, autostart, direct=lambda h: trio.from_thread.run(self.processes.open, h))

    def exited(self, launched: dict) -> bool:
        pid = launched.get("pid")
        if launched.get("via") == "direct":
            return trio.from_thread.run_sync(self.processes.exited, pid)
        return launch.exited(pid)  # a start.sh's node is not this process's child

    def addresses(self) -> list[str]:
        found = trio.from_thread.run_sync(self.mesh.addresses)
        if not found:
            raise SpawnError("parent_never_ran", "the running parent listens on no address")
        return found

    def write(self, fn: Callable[[Database], T]) -> T:
        return trio.from_thread.run(self.store.write, fn)

    def read(self, fn: Callable[[Database], T]) -> T:
        return trio.from_thread.run(self.store.read, fn)

    def reached(self, did: str) -> bool:
        """A ping to ``did`` answered (asked once the child has connected to us: it dials its bootstrap)."""
        return trio.from_thread.run(self._ping, did)

    async def _ping(self, did: str) -> bool:
        """One ping round trip over the connection the child made (``mesh.ping`` would first look the
        child's announce up in the DHT, which a child seconds old may not have published yet)."""
        from libp2p.host.ping import ID as PING_ID, perform_ping_roundtrip
        from libp2p.peer.id import ID

        pid = ID.from_base58(did_to_peer_id(did))
        if pid not in self.mesh.host.get_connected_peers():
            return False
        with trio.move_on_after(PING_SECONDS):
            try:
                stream = await self.mesh.host.new_stream(pid, [PING_ID])
            except Exception:  # py-libp2p raises several types when a peer is gone; asked again later
                return False
            try:
                await perform_ping_roundtrip(stream)
                return True
            except Exception:
                return False
            finally:
                await stream.close()
        return False
