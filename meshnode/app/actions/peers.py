"""The peers this node knows and reaches: the list (connected now, with a node running), a ping,
a lookup by DID or interest, the mesh's formation, friends, and a sync with one peer.

Making a peer a friend (it then gets friends notes and knowledge, and its containers are never a
stranger's) is the person's decision, or the node's: the agent cannot, nor can an outside party.
"""

from __future__ import annotations

from meshnode.app.actor import THIS_NODE, PERSON_OR_NODE, Actor, allow
from meshnode.app.actions.names import agent_of, other_agent
from meshnode.app.context import App
from meshnode.base.errors import MeshnodeError
from meshnode.base.identity.did import did_to_peer_id
from meshnode.records import family
from meshnode.store.peers import list_peers
from meshnode.store.sharing import friends as friend_dids, set_friend


async def peers(app: App, actor: Actor) -> list[dict]:
    """Every peer this node knows, its liveness aged by the silence since it was last heard (a node
    stopped or killed while its peers were ``ok`` left them so in its table); with a node running,
    whether each is connected now and the liveness its tracker holds. With none, what it last knew,
    told as such: no peer is connected or online to a stopped node."""
    rows = await app.store.read(list_peers)
    thresholds = family.thresholds_of(app.config.values["net"]) if app.config is not None else None
    tracker = app.mesh.liveness if app.mesh is not None else None
    connected = set(app.mesh.peers_snapshot()["connected"]) if app.mesh is not None else set()
    for row in rows:
        heard = tracker.last_heard_ms(row["did"]) if tracker is not None else None
        if heard is not None and heard >= (row["last_heard_ms"] or 0):
            row["last_heard_ms"], row["liveness"] = heard, tracker.state(row["did"]).value
        if thresholds is not None and row["liveness"]:
            row["liveness"] = family.aged(row["liveness"], row["last_heard_ms"], app.clock(), thresholds)
        row["connected"] = row["peer_id"] in connected
        if app.mesh is None and row["status"] == "online":
            row["status"] = "offline"
    return rows


async def ping(app: App, actor: Actor, did: str) -> dict:
    did = await other_agent(app, did, "a ping")
    return {"did": did, "rtt_ms": round(await app.network("ping").ping(did), 3)}


async def find(app: App, actor: Actor, did: str | None = None, interest: str | None = None):
    """An agent by DID on the mesh (its peer id and addresses), or the agents that announced ``interest``."""
    mesh = app.network("find")
    if interest:
        return await mesh.find_interest(interest)
    if not did:
        raise MeshnodeError("bad_request", "find needs a DID or an interest")
    return await mesh.find(await agent_of(app, did))


async def formation(app: App, actor: Actor) -> dict:
    """Connected peers and GossipSub mesh sizes (how far the node has joined the mesh)."""
    return app.network("formation").formation()


async def friend(app: App, actor: Actor, did: str, on: bool = True) -> dict:
    """Make ``did`` a friend, or no longer one (``on`` false); with a node running, its admission
    learns it at once."""
    allow(actor, PERSON_OR_NODE, "making a friend")
    did = await other_agent(app, did, "a friend")
    peer_id = did_to_peer_id(did)  # refuses anything that is not an Ed25519 did:key
    await app.store.write(set_friend, did, peer_id, app.clock(), bool(on))
    if app.mesh is not None:
        await app.mesh.refresh_known()  # a new friend's containers are never a stranger's
    return {"did": did, "friend": bool(on)}


async def friends(app: App, actor: Actor) -> list[str]:
    return await app.store.read(friend_dids)


async def sync(app: App, actor: Actor, did: str) -> dict:
    """Reconcile with one peer now (the agent's ``sync_request`` too)."""
    allow(actor, THIS_NODE, "a sync")
    did = await other_agent(app, did, "a sync")
    return await app.network("sync").sync_with(did)
