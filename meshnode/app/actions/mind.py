"""The agent's mind as a person watches and steers it: its state, its ticks, the commands the
validators held, and the hand on its switch (tick now, pause, resume).

Deciding for the agent is the person's alone: releasing or dropping held commands, pausing and
resuming it. Who decided is the face the person came through (``actor.via``: cli, web, mcp),
recorded as ``decided_by`` / ``paused_by``; no argument can name it. The cycle (``app.cycle``:
``status()``, ``paused``, ``wake``, ``pause(by)``, ``resume(by)``, ``run_released()``) is there
when the node runs with cognition on; with no node running, held commands are decided on the
home's database and the node runs what was released when it starts.
"""

from __future__ import annotations

from meshnode.app.actor import Actor, decided_by
from meshnode.app.context import App
from meshnode.base.errors import MeshnodeError
from meshnode.records.mind import held, tick_traces


def _cycle(app: App):
    if app.cycle is None:
        raise MeshnodeError("cognition_off", "the cognitive cycle is off ([cognition] enabled = false)")
    return app.cycle


async def mind(app: App, actor: Actor) -> dict:
    """The cycle's state (with the node running), its validation metrics, each validator's weight
    and why, held commands and decisions taken alone (``app.mind_view``, a store read)."""
    if app.mind_view is None:
        raise MeshnodeError("cognition_off", "the agent's view is not available here")
    state = (app.cycle.status() if app.cycle is not None else {"mode": "off"}) if app.live else {}
    return {**state, **await app.store.read(app.mind_view)}


async def mind_held(app: App, actor: Actor, status: str | None = "held", limit: int = held.DEFAULT_LIMIT) -> list:
    """Held commands, newest first (``status`` None: in every state)."""
    return await app.store.read(held.listing, status, int(limit))


async def mind_release(app: App, actor: Actor, ids: list | None = None) -> dict:
    """Release held commands (``ids``, or all when None); with the cycle on they run now (while a
    person has paused it they wait for the resume); with no node running, when it starts."""
    by = decided_by(actor, "releases held commands")
    released = await app.store.write(held.decide, ids, True, app.clock(), by)
    if not app.live:
        return {"released": released, "offline": True}
    cycle = app.cycle
    ran = await cycle.run_released() if cycle is not None and not cycle.paused else []
    return {"released": released, "ran": ran, "cognition": "on" if cycle is not None else "off",
            "paused": bool(cycle is not None and cycle.paused)}


async def mind_drop(app: App, actor: Actor, ids: list | None = None) -> dict:
    """Discard held commands (``ids``, or all when None)."""
    by = decided_by(actor, "drops held commands")
    out = {"dropped": await app.store.write(held.decide, ids, False, app.clock(), by)}
    return out if app.live else {**out, "offline": True}


async def mind_pause(app: App, actor: Actor) -> dict:
    """Stop the agent until the person resumes it (kept across restarts)."""
    return await _cycle(app).pause(decided_by(actor, "pauses the agent"))


async def mind_resume(app: App, actor: Actor) -> dict:
    return await _cycle(app).resume(decided_by(actor, "resumes the agent"))


async def tick(app: App, actor: Actor) -> dict:
    """Wake the cognitive cycle now (it ticks at once instead of at the end of its pause). A paused
    agent does not tick: refused with the reason (resume it first), never an ok that does nothing."""
    cycle = _cycle(app)
    if cycle.paused:
        raise MeshnodeError("paused", f"the agent is paused (by {cycle.paused_by}): it does not tick until a person"
                                      " resumes it (`meshnode mind resume`, or Resume on the page)")
    cycle.wake.set()
    return cycle.status()


async def mind_ticks(app: App, actor: Actor, limit: int = 50, before: int | None = None) -> list:
    """The last ticks, newest first."""
    return await app.store.read(tick_traces.listing, int(limit), None if before is None else int(before))


async def mind_tick_show(app: App, actor: Actor, tick: int) -> dict:
    """One tick in full: its contexts, answer, commands and what was held."""
    return await app.store.read(tick_traces.show, int(tick))
