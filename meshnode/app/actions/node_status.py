"""The node at a glance: who it is, what it holds, where it listens, its peers, its agent and what
waits for the person (``status``), and its counters, histograms and gauges (``metrics``: the running
node's).

``status`` answers with a node running (``running`` true: its addresses, connections, uptime, the
agent's state) and without one, on the home's database (``running`` false: the last run, the
peers as last known, aged by the silence since). Both say how many peers are ok, quiet, stale or
dead, whether an agent can think (an LLM registered) and what waits for the person (the inbox's
counts)."""

from __future__ import annotations

import os

from meshnode.app.actor import Actor
from meshnode.app.context import App
from meshnode.records import family, inbox
from meshnode.records.mind import held, registry
from meshnode.store import node_runs
from meshnode.store.peers import liveness_rows

LIVENESS = ("ok", "quiet", "stale", "dead")


async def status(app: App, actor: Actor) -> dict:
    config = app.config
    snapshot = app.mesh.peers_snapshot() if app.mesh is not None else {"liveness": {}}
    rows = await app.store.read(_status_rows, app.clock())  # one trip to a reader thread: under load each
    out = {"name": config.name, "home": str(config.home), "database": str(config.db_path),  # trip waits for
           "schema_version": app.store.version, "counts": rows["counts"],  # the interpreter lock again
           "running": app.mesh is not None,
           **_at_rest(app, rows, snapshot["liveness"])}
    if app.key is not None:
        out.update(did=app.key.did, peer_id=app.key.peer_id)
    if app.mesh is None:
        return out
    mesh = app.mesh
    cognition = {**(app.cycle.status() if app.cycle else {"mode": "off"}), "held": rows["held"]}
    run = out["last_run"]
    started = run["at_ms"] if run and not run["stopped"] else None
    out.update(addresses=mesh.addresses(), web=app.web.url if app.web is not None else None, **snapshot,
               cognition=cognition, pid=os.getpid(), started_ms=started,
               uptime_seconds=round((app.clock() - started) / 1000) if started is not None else None)
    return out


def _status_rows(db, now: int) -> dict:
    """Everything ``status`` reads from the database, in one go."""
    return {"counts": db.counts(), "llms": registry.endpoints(db), "last_run": node_runs.last_run(db),
            "peers": liveness_rows(db), "waiting": inbox.count(db, now), "held": held.summary(db)}


def _at_rest(app: App, rows: dict, heard: dict[str, str]) -> dict:
    """What the home's database tells, node or no node: the last run, the peers by liveness (as
    last known, aged by the silence since: a stopped node hears nobody; ``heard``: the running node's
    tracker for the peers heard this run), the LLMs and what waits."""
    llms = rows["llms"]
    return {"last_run": rows["last_run"],
            "peer_counts": _counted({**_stored_states(app, rows["peers"]), **heard}.values()),
            "agent": {"enabled": bool(app.config.values["cognition"]["enabled"]),
                      "llms": sum(1 for e in llms if not e.validator), "validators": sum(1 for e in llms if e.validator)},
            "waiting": rows["waiting"]}


def _stored_states(app: App, peers: list[dict]) -> dict[str, str]:
    """Each known peer's liveness as the peers table last knew it, aged by the silence since."""
    now = app.clock()
    thresholds = family.thresholds_of(app.config.values["net"])
    return {p["did"]: family.aged(p["liveness"], p["last_heard_ms"], now, thresholds)
            for p in peers if p["liveness"]}


async def config_in_effect(app: App, actor: Actor) -> dict:
    """The settings the running node started with (it reads config.toml at start only): ``{section: {key:
    value}}``; a face compares them with the file's to tell what waits for a restart."""
    app.network("config_in_effect")
    return {section: dict(keys) for section, keys in app.config.values.items()}


def _counted(states) -> dict:
    counts = dict.fromkeys(LIVENESS, 0)
    for state in states:
        if state in counts:
            counts[state] += 1
    return counts


async def metrics(app: App, actor: Actor, full: bool = False):
    """The counters (a list, as ``meshnode metrics`` prints them); with ``full``,
    ``{"counters", "histograms", "gauges"}``."""
    if app.metrics is None:
        app.network("metrics")  # the counters are the running node's
    if not full:
        return app.metrics.snapshot()
    return {"counters": app.metrics.snapshot(), "histograms": app.metrics.histograms(),
            "gauges": app.metrics.gauges()}
