"""Containers moved by hand: one pushed to a peer (``send``), fetched from one (``fetch``), read
out as bytes (``export``), and when each arrived here (``received``, for latency measurements)."""

from __future__ import annotations

import base64

from meshnode.app.actor import PERSON_OR_NODE, Actor, allow
from meshnode.app.context import App
from meshnode.base.container import ContainerError, decode_container
from meshnode.base.errors import MeshnodeError
from meshnode.domain.gmp.rules import is_gmp

MAX_RECEIVED = 1000  # DIDs looked up by one ``received``


async def send(app: App, actor: Actor, did: str, container: str) -> dict:
    """Push one container (base64) to the peer ``did``: what it accepted, had, or rejected."""
    allow(actor, PERSON_OR_NODE, "sending a container")
    mesh = app.network("send")
    try:
        data = base64.b64decode(container, validate=True)
        c = decode_container(data, now_ms=app.clock(), limits=app.config.limits)
    except (ValueError, ContainerError) as exc:
        reason = exc.reason if isinstance(exc, ContainerError) else "not base64"
        raise MeshnodeError("bad_container", f"not a valid container: {reason}") from None
    return await mesh.push(did, [c])


async def fetch(app: App, actor: Actor, did: str, container_did: str) -> dict:
    """Fetch one container from the peer ``did`` and store it (a GMP one is GMP's to take up)."""
    allow(actor, PERSON_OR_NODE, "fetching a container")
    got = await app.network("fetch").fetch(did, [container_did])
    for c in got:
        await app.store.write(lambda db, c=c: db.put_container(c, received_at_ms=app.clock(), received_from=did))
        if app.gmp is not None and is_gmp(c):
            app.gmp.arrived(c.did, did)
    return {"fetched": [c.did for c in got]}


async def received(app: App, actor: Actor, dids: list) -> dict:
    """When each container arrived here (ms), with, on a running node, where gossip's time went."""
    def lookup(db):
        rows = {}
        for did in dids[:MAX_RECEIVED]:
            row = db.conn.execute("SELECT received_at_ms, timestamp_ms FROM containers WHERE did = ?",
                                  (str(did),)).fetchone()
            if row:
                rows[did] = {"received_at_ms": row[0], "timestamp_ms": row[1]}
        return rows
    rows = await app.store.read(lookup)
    if app.mesh is not None:  # where gossip's time went (net.gossip_timing), when still kept
        for did, row in rows.items():
            row["stages"] = app.mesh.timing.of(did)
    return rows


async def export(app: App, actor: Actor, did: str) -> dict:
    data = await app.store.read(lambda db: db.get_container_bytes(did))
    if data is None:
        raise MeshnodeError("not_found", f"no container {did} on this node")
    return {"hex": data.hex()}
