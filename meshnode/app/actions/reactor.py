"""The reactor: its state now as the running node runs it (next scan, runs in progress) and one
scan now, in the node (its own core can be woken there); what it stored (events, jobs, decisions,
unknown addressees: records.reactor.audit, read with or without a node), a lease dropped by
hand, the person's or the node's to drop, and the cooldowns in force, listed, and lifted by the
person alone (in the running core at once, else in the rows the next start loads)."""

from __future__ import annotations

from meshnode.app.actor import PERSON_OR_NODE, THIS_NODE, Actor, allow
from meshnode.app.context import App
from meshnode.base.errors import MeshnodeError
from meshnode.records.reactor import audit, cooldowns, leases, timeline


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


async def reactor_stored(app: App, actor: Actor) -> dict:
    """The reactor's state as its rows say (the last scan, pending events, open jobs, leases...),
    on or off."""
    return await app.store.read(audit.status, app.clock())


async def reactor_events(app: App, actor: Actor, agent: str | None = None, type: str | None = None,
                         since_ms: int | None = None, all: bool = False, limit: int = 100) -> list[dict]:
    return await app.store.read(audit.events, agent=agent, type=type, since_ms=since_ms, all=bool(all), limit=limit)


async def reactor_jobs(app: App, actor: Actor, status: str | None = None, limit: int = 100) -> list[dict]:
    return await app.store.read(audit.jobs, status=status, limit=limit)


async def reactor_job(app: App, actor: Actor, id: str) -> dict:
    """One job: context, report, events, decisions, escalations, lease (``no_job`` when none)."""
    return await app.store.read(audit.job, id)


async def reactor_explain(app: App, actor: Actor, key: str) -> dict:
    """Every decision on an event (dedupe key or note DID) or a job, in order; ``not_found`` when
    nothing is known of it."""
    found = await app.store.read(audit.explain, key)
    if not found or not any(found.get(k) for k in ("decisions", "event", "job", "escalations")):
        raise MeshnodeError("not_found", f"nothing is known about {key[:200]!r}")
    return found


async def reactor_unknown(app: App, actor: Actor) -> list[dict]:
    """Addressees no alias resolves, with how many events named them."""
    return await app.store.read(audit.unknown)


async def reactor_release(app: App, actor: Actor, job: str) -> dict:
    """Drop a job's lease by hand (``not_found`` when none is held): its agent can be woken again."""
    allow(actor, PERSON_OR_NODE, "releasing a reactor lease")
    if not await app.store.write(leases.release_lease, job):
        raise MeshnodeError("not_found", f"no lease is held for job {job[:200]!r}")
    return {"job": job, "released": True}


async def reactor_cooldowns(app: App, actor: Actor) -> list[dict]:
    """The cooldowns in force (wake per agent and signal kind, nudge, message), the soonest to end
    first: ``key``, ``limit``, ``agent``, ``kind``, ``until_ms``, ``count``."""
    allow(actor, THIS_NODE, "the reactor's cooldowns")
    return await app.store.read(cooldowns.in_force, app.clock())


async def reactor_cooldown_clear(app: App, actor: Actor, key: str | None = None, all: bool = False) -> dict:
    """Lift one cooldown (``key``, as ``reactor_cooldowns`` lists it) or every one in force
    (``all``): the next scan may wake for what it held. The person's alone; ``not_found`` when the
    key named is in force nowhere."""
    allow(actor, ("person",), "lifting a reactor cooldown")
    if bool(key) == bool(all):
        raise MeshnodeError("bad_request", "name one cooldown KEY, or all of them (all)")
    keys = None if all else cooldowns.check_keys([key])
    if app.reactor is not None:
        lifted = await app.reactor.lift_cooldowns(keys)
    else:  # no running reactor: its rows, which the next start loads
        if keys is None:
            keys = [r["key"] for r in await app.store.read(cooldowns.in_force, app.clock())]
        lifted = await app.store.write(cooldowns.lift, keys) if keys else []
    if key and not lifted:
        raise MeshnodeError("not_found", f"no cooldown {key[:200]!r} is in force (`reactor cooldowns` lists them)")
    return {"lifted": sorted(lifted), "all": bool(all)}


async def reactor_timeline(app: App, actor: Actor, limit: int = 20, before_ms: int | None = None) -> list[dict]:
    """The reactor's wakes in words, newest first (records.reactor.timeline): what woke whom, why,
    what the agent did, what was escalated; and the signals that woke nobody."""
    own = app.key.did if app.key is not None else None
    return await app.store.read(timeline.wakes, own, limit=int(limit),
                                before_ms=None if before_ms is None else int(before_ms))
