"""The running node at a glance: who it is, what it holds, where it listens, its agent's state
(``status``), and its counters, histograms and gauges (``metrics``): both are the running node's;
what the home's database holds (``holdings``), with or without a node."""

from __future__ import annotations

from meshnode.app.actor import Actor
from meshnode.app.context import App
from meshnode.records.mind import held


async def status(app: App, actor: Actor) -> dict:
    mesh = app.network("status")
    counts = await app.store.read(lambda db: db.counts())
    cognition = {**(app.cycle.status() if app.cycle else {"mode": "off"}), "held": await app.store.read(held.summary)}
    config = app.config
    return {"did": app.key.did, "peer_id": app.key.peer_id, "name": config.name, "home": str(config.home),
            "database": str(config.db_path), "schema_version": app.store.version, "counts": counts, "running": True,
            "addresses": mesh.addresses(), "web": app.web.url if app.web is not None else None, **mesh.peers_snapshot(), "cognition": cognition}


async def holdings(app: App, actor: Actor) -> dict:
    """What the database holds (rows per kind) and its schema's version."""
    return {"counts": await app.store.read(lambda db: db.counts()), "schema_version": app.store.version}


async def metrics(app: App, actor: Actor, full: bool = False):
    """The counters (a list, as ``meshnode metrics`` prints them); with ``full``,
    ``{"counters", "histograms", "gauges"}``."""
    if app.metrics is None:
        app.network("metrics")  # the counters are the running node's
    if not full:
        return app.metrics.snapshot()
    return {"counters": app.metrics.snapshot(), "histograms": app.metrics.histograms(),
            "gauges": app.metrics.gauges()}
