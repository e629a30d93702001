"""The reactor as the running node runs it: its state now (next scan, runs in progress) and one
scan now, in the node (its own core can be woken there). What the reactor stored is read from the
database by the CLI itself (cli/reactor.py), with or without a node."""

from __future__ import annotations

from meshnode.app.actor import THIS_NODE, Actor, allow
from meshnode.app.context import App
from meshnode.errors import MeshnodeError


def _reactor(app: App, what: str):
    if app.reactor is None:
        app.network(what)  # no node runs: that is why, not the setting
        raise MeshnodeError("reactor_off", "the reactor is off ([reactor] enabled = false)")
    return app.reactor


async def reactor_status(app: App, actor: Actor) -> dict:
    return await _reactor(app, "reactor_status").status()


async def reactor_scan(app: App, actor: Actor, dry_run: bool = False) -> dict:
    """One scan now, in the node."""
    allow(actor, THIS_NODE, "a reactor scan")
    return await _reactor(app, "reactor_scan").scan(dry_run=bool(dry_run))
