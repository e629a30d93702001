"""Binding decisions (MeshConsensus): a value proposed to the committee, the next committee
proposed, the committee's state, and the decisions stored here.

Proposing is this node's own: the person, the node, or its agent (its ``consensus_propose``
command); the committee's rounds run in the running node, the decisions stored can be read
without one.
"""

from __future__ import annotations

from meshnode.app.actor import PERSON_OR_NODE, THIS_NODE, Actor, allow
from meshnode.app.context import App
from meshnode.base.errors import MeshnodeError
from meshnode.store import decisions

MAX_WAIT_S = 3600


async def consensus_propose(app: App, actor: Actor, value: str, wait_seconds: float = 0.0) -> dict:
    """Submit ``value``; with ``wait_seconds``, wait that long for its commit."""
    allow(actor, THIS_NODE, "proposing a value")
    if type(wait_seconds) not in (int, float) or not 0 <= wait_seconds <= MAX_WAIT_S:
        raise MeshnodeError("bad_request", f"wait_seconds must be a number of seconds from 0 to {MAX_WAIT_S}")
    return await app.network("consensus_propose").consensus_submit(value.encode("utf-8"), wait_s=wait_seconds)


async def consensus_next_committee(app: App, actor: Actor) -> dict:
    allow(actor, PERSON_OR_NODE, "proposing the next committee")
    return await app.network("consensus_next_committee").propose_next_committee()


async def consensus_status(app: App, actor: Actor) -> dict:
    return app.network("consensus_status").consensus_status()


async def consensus_decisions(app: App, actor: Actor, limit: int = 50) -> list[dict]:
    return await app.store.read(decisions.decisions, int(limit))
