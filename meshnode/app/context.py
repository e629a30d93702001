"""What the actions work with: the node's objects, each passed in by whoever builds the App.

The running node builds one App with everything (``node.py``); the CLI with no node running
builds one on the home's store alone (``mesh`` None: nothing is gossiped, the next run syncs
it); the agent's tests build one on a bare store. An action uses what is there and never
imports an engine: the reactor is anything with ``poke()``, the cycle anything with ``paused``
and ``wake``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Protocol

from meshnode.base.container import now_ms
from meshnode.base.errors import MeshnodeError
from meshnode.base.identity.keys import NodeKey


class Pokeable(Protocol):
    def poke(self) -> None: ...


@dataclass
class App:
    store: Any  # meshnode.store.Store
    key: NodeKey | None  # None only where no action that signs runs (the CLI reading with no node)
    mesh: Any = None  # meshnode.net.mesh.Mesh when the node runs
    reactor: Pokeable | None = None
    cycle: Any = None  # the agent's cycle (``paused``, ``wake``), when cognition is on
    wake_on_message: bool = True  # [web] wake_on_message: a message to the agent wakes its cycle
    metrics: Any = None  # meshnode.base.metrics.Metrics
    clock: Callable[[], int] = now_ms
    gmp: Any = None  # meshnode.net.mesh_gmp.MeshGmp when the node runs (pushes, reactions, interest lookups)
    jail: Any = None  # the gate's jail of the agent's workspace (drafts, snapshots): meshnode.engines.gate.jail.Jail
    mind_view: Callable[[Any], dict] | None = None  # the agent's view read from the store (cognition.mind_view.view)
    # the running node's and its housekeeping's (app.actions: peers, containers, children, node_status...)
    config: Any = None  # meshnode.base.config.Config: limits, [net] thresholds, name and paths
    spawner: Any = None  # spawn.jobs.SpawnJobs (``spawn(app, ask, answer_seconds)``, ``wait(job)``)
    web: Any = None  # where the notebook listens, once bound (``url``: meshnode.faces.web.address.WebAddress)
    tools: dict = field(default_factory=dict)  # the gate's tools by name (gate.tools.TOOLS: summary, parameters, risk)
    a2a_blocks: Any = None  # the A2A face's blocks in memory (records.a2a.blocks.BlockSet), when the node runs

    @property
    def live(self) -> bool:
        """Whether a running node's network is here (gossip and pushes happen at once)."""
        return self.mesh is not None

    def network(self, what: str):
        """The running node's mesh, for an action that needs the network; with no node running,
        MeshnodeError ``node_not_running`` (what the CLI says when nothing answers its socket)."""
        if self.mesh is None:
            home = f" at {self.config.home}" if self.config is not None else ""
            raise MeshnodeError("node_not_running", f"{what} needs the running node: none runs{home}"
                                                    " (start it with `meshnode start`)")
        return self.mesh
