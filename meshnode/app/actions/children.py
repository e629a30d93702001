"""A node's family: its children listed and shown (their liveness as this node hears them now),
one removed, and a new one spawned.

The rows are the store's (meshnode.records.family), so listing, showing and removing work with or
without a node running. A spawn runs in the running node as a job (spawn.jobs, handed to the App
as ``spawner``), since it may outlast one request: the answer is then ``{"pending": id}``, and
``spawn_wait`` asks again. Changing the family is the person's or the node's; the agent spawns only
once a person approved (its gate's ``spawn`` tool, ``approved_by``).
"""

from __future__ import annotations

from meshnode.app.actor import PERSON_OR_NODE, Actor, allow, is_person
from meshnode.app.context import App
from meshnode.base.errors import MeshnodeError
from meshnode.records import family


def as_heard(app: App, row: dict) -> dict:
    """A child's liveness as the running node's heartbeat tracker knows it now (the stored row
    changes only with the state), aged by the silence since it was last heard."""
    if app.mesh is not None and row.get("state") != "removed":
        tracker = app.mesh.liveness
        heard, state = tracker.last_heard_ms(row["did"]), tracker.state(row["did"])
        if heard is not None and heard >= (row["last_heard_ms"] or 0):
            row["last_heard_ms"], row["liveness"] = heard, state.value
    if app.config is not None:
        row["liveness"] = family.aged(row["liveness"], row["last_heard_ms"], app.clock(),
                                      family.thresholds_of(app.config.values["net"]))
    return row


async def children(app: App, actor: Actor, all: bool = False) -> list[dict]:
    """This node's children, oldest first; the removed ones too with ``all``."""
    return [as_heard(app, r) for r in await app.store.read(family.children, include_removed=bool(all))]


async def child_show(app: App, actor: Actor, did: str) -> dict:
    """One child, by its DID, a unique prefix or its name."""
    return as_heard(app, await app.store.read(family.child, str(did)))


async def child_remove(app: App, actor: Actor, did: str) -> dict:
    """No longer a child, a friend nor a peer here (its ``children`` row and home stay; should it
    still run and reach this node, it is a peer like any other); the reactor lets go at its next scan."""
    allow(actor, PERSON_OR_NODE, "removing a child")
    removed = await app.store.write(family.remove_child, str(did), app.clock())
    if app.mesh is not None:
        app.mesh.liveness.forget(removed["did"])  # heard again, it starts afresh as a stranger
        await app.mesh.refresh_known()  # no longer a friend: its containers are a stranger's
    return removed


async def child_start(app: App, actor: Actor, did: str) -> dict:
    """Start a local child through the running node, which waits on the process it opens (no
    zombie, its exit recorded); ``{"did", "name", "via", "pid", "log"}``. With no node running the
    CLI starts it itself (cli/children.py): there is no parent process to wait on it then."""
    allow(actor, PERSON_OR_NODE, "starting a child")
    rec = await _local_child(app, did)
    if app.spawner is None:
        raise MeshnodeError("node_not_running", "a child is started by the running node (`meshnode start`)")
    return {"did": rec["did"], "name": rec["name"], **await app.spawner.start_child(rec["home"], rec["autostart"])}


async def child_stop(app: App, actor: Actor, did: str) -> dict:
    """Stop a local child (SIGTERM, then SIGKILL after 10 s; its unit when it has one)."""
    allow(actor, PERSON_OR_NODE, "stopping a child")
    rec = await _local_child(app, did)
    if app.spawner is None:
        raise MeshnodeError("node_not_running", "a child is stopped here by the running node (`meshnode start`)")
    return {"did": rec["did"], "name": rec["name"], "stopped": await app.spawner.stop_child(rec["home"], rec["autostart"])}


async def _local_child(app: App, did: str) -> dict:
    rec = await app.store.read(family.child, str(did))
    if rec["state"] != "active":
        raise MeshnodeError("not_a_child", f"{rec['name']} was removed; spawn a new child instead")
    if rec["host"] != "local" or not rec["home"]:
        raise MeshnodeError("not_local", f"{rec['name']} runs on another host ({rec['host']}): start or stop it there")
    return rec


async def spawn(app: App, actor: Actor, kind: str, name: str | None = None, home: str | None = None,
                start: bool = False, autostart: str | None = None, bundle: str | None = None,
                expires_hours: float | None = None, answer_seconds: float | None = None,
                approved_by: Actor | None = None, friends: str | None = None) -> dict:
    """A child of this node (protocols/spawn.md), made by the running node; ``answer_seconds``: how
    long to wait before answering ``{"pending": id}`` (None: until it is done); ``friends``: the
    child's friends besides the parent (spawn.friends: None, the parent only)."""
    if not (actor.kind == "agent" and approved_by is not None and is_person(approved_by.kind)):
        allow(actor, PERSON_OR_NODE, "spawning a child (the agent's, once a person approved)")
    if app.spawner is None:
        raise MeshnodeError("node_not_running", "the running node spawns (with none running, `meshnode spawn`"
                                                " works on the parent's database)")
    by = (actor.via or actor.kind) if is_person(actor.kind) else actor.kind  # the metrics' label: cli, web, agent...
    return await app.spawner.spawn(app, dict(kind=kind, name=name, home=home, start=start, autostart=autostart,
                                             bundle=bundle, expires_hours=expires_hours, by=by, friends=friends),
                                   answer_seconds)


async def spawn_wait(app: App, actor: Actor, job: str) -> dict:
    """The result of a spawn that outlasted its request (``{"pending": id}`` while it runs)."""
    if not isinstance(job, str) or app.spawner is None:
        raise MeshnodeError("not_found", "no spawn job of that id")
    return await app.spawner.wait(job)
