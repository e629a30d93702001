"""Goals and tasks (GMP, protocols/gmp.md): one action per command, for whoever asks.

``write`` is the store side of a change (``meshnode.records.gmp.service``: the containers signed
and stored, each with the record of who asked), for callers already inside the store's writer
(the agent's goal commands); ``follow`` is what comes after it on a running node: the node's GMP
service (``app.gmp``, net.mesh_gmp) pushes the new containers to the peers concerned at once,
reacts to them (receipts, an assignment) and refreshes who this node works with, and the reactor
looks. With no node running (the CLI on the home) the pushes wait: the next run's sync carries
them. The actions below do both; their parameters are the service's.
"""

from __future__ import annotations

from meshnode.app.actor import Actor
from meshnode.app.context import App
from meshnode.base.errors import MeshnodeError
from meshnode.records.gmp import review, service

OFFER_S = 3600  # how long an offer stands with no node to say ([gmp] offer_seconds is the node's)
WRITES = {name: getattr(service, name) for name in (
    "goal_add", "goal_update", "goal_cancel", "task_add", "task_update", "task_offer", "task_nominate",
    "task_accept", "task_refuse", "task_progress", "task_done", "task_release")} | {"task_review": review.task_review}


def write(db, key, actor: Actor, now_ms: int, name: str, **args) -> dict:
    """Service write ``name`` for ``actor`` (one of WRITES): its result, ``push`` included."""
    return WRITES[name](db, key, now_ms, asked_by=actor.row(), **args)


async def follow(app: App, name: str, result: dict, wait_s: float | None = None) -> dict:
    """What follows write ``name`` on a running node (see above); the result, with ``pushed`` (the
    push report) when the node ran it. ``wait_s``: how long to wait for the pushes (None: the
    service's default; the agent, whom nobody waits on, 0)."""
    result = dict(result)
    if app.gmp is not None:
        more = {} if wait_s is None else {"wait_s": wait_s}
        result["pushed"] = await app.gmp.published(name, result, **more)
    if app.reactor is not None:
        app.reactor.poke()
    return result


async def _write(app: App, actor: Actor, name: str, **args) -> dict:
    t = app.clock()
    result = await app.store.write(lambda db: write(db, app.key, actor, t, name, **args))
    return await follow(app, name, result)


# --- goals -------------------------------------------------------------------------------------


async def goal_add(app: App, actor: Actor, title: str, description: str | None = None, priority: float | None = None,
                   criteria: list | None = None, constraints: list | None = None, participants: list | None = None,
                   public: bool = False, tags: list | None = None, parent: str | None = None) -> dict:
    return await _write(app, actor, "goal_add", title=title, description=description, priority=priority,
                        criteria=criteria or (), constraints=constraints or (), participants=participants or (),
                        public=public, tags=tags or (), parent=parent)


async def goal_update(app: App, actor: Actor, goal: str, status: str | None = None, title: str | None = None,
                      description: str | None = None, priority: float | None = None,
                      add_participants: list | None = None, remove_participants: list | None = None) -> dict:
    return await _write(app, actor, "goal_update", goal=goal, status=status, title=title, description=description,
                        priority=priority, add_participants=add_participants or (),
                        remove_participants=remove_participants or ())


async def goal_cancel(app: App, actor: Actor, goal: str, reason: str | None = None) -> dict:
    return await _write(app, actor, "goal_cancel", goal=goal, reason=reason)


# --- tasks ---------------------------------------------------------------------------------------


async def task_add(app: App, actor: Actor, goal: str, title: str, description: str | None = None,
                   parent: str | None = None, depends: list | None = None, deadline_ms: int | None = None,
                   check_every_s: int | None = None, grace_s: int | None = None, rule: str = "creator",
                   tags: list | None = None, priority: float | None = None) -> dict:
    return await _write(app, actor, "task_add", goal=goal, title=title, description=description, parent=parent,
                        depends=depends or (), deadline_ms=deadline_ms, check_every_s=check_every_s, grace_s=grace_s,
                        rule=rule or "creator", tags=tags or (), priority=priority)


async def task_update(app: App, actor: Actor, task: str, status: str | None = None, next_check_ms: int | None = None,
                      notes: str | None = None, title: str | None = None, description: str | None = None,
                      progress: float | None = None, reason: str | None = None) -> dict:
    return await _write(app, actor, "task_update", task=task, status=status, next_check_ms=next_check_ms, notes=notes,
                        title=title, description=description, progress=progress, reason=reason)


async def task_assign(app: App, actor: Actor, task: str, candidates: list | None = None, selection: str = "direct",
                      expires_s: int | None = None, basis: str | None = None, interest: str | None = None,
                      candidates_max: int | None = None) -> dict:
    """Offer ``task``: to ``candidates`` (direct), to the best peers announcing ``interest`` (the
    mesh's lookup: a running node only), or as an approved consensus result on a nomination
    (``basis``) says. To this node alone, it takes the task itself (no offer)."""
    if expires_s is None:
        expires_s = int(app.gmp.settings.offer_s) if app.gmp is not None else OFFER_S
    if interest:
        candidates, selection = await _by_interest(app, task, str(interest), candidates, candidates_max), "interest"
    more = {} if basis is None else {"basis": basis}
    result = await _write(app, actor, "task_offer", task=task, candidates=candidates or (), selection=selection,
                          expires_s=expires_s, **more)
    _wake_for_task(app, actor, result)
    return result


def _wake_for_task(app: App, actor: Actor, result: dict) -> None:
    """A task given to this node's agent by someone else (the person, a party) wakes its cycle now,
    unless a person paused it: the task is in the next prompt at once, not after the pause or an
    idle wait (issue 34: 31.9 s). The agent giving itself a task is already awake."""
    cycle, own = app.cycle, app.key.did if app.key is not None else None
    if cycle is None or own is None or actor.kind == "agent" or own not in (result.get("assigned") or ()):
        return
    if not cycle.paused:
        cycle.wake.set()


async def _by_interest(app: App, task: str, interest: str, exclude: list | None, limit: int | None) -> list[str]:
    if app.gmp is None:
        raise MeshnodeError("node_not_running", "finding candidates by interest needs the running node's mesh"
                                                " (start it with `meshnode start`)")
    limit = limit or 1
    if type(limit) is not int or not 1 <= limit <= 16:
        raise MeshnodeError("bad_request", "candidates_max is a number from 1 to 16")
    t = app.clock()
    shown = await app.store.read(lambda db: service.task_show(db, task=str(task), now_ms=t))
    found = await app.gmp.candidates(shown.get("lineage") or str(task), [interest], exclude=set(exclude or ()))
    if not found:
        raise MeshnodeError("no_candidates", f"no peer announces the interest {interest[:64]!r}"
                                             " (or none is trusted enough)")
    return found[:limit]


async def task_nominate(app: App, actor: Actor, task: str, candidate: str) -> dict:
    return await _write(app, actor, "task_nominate", task=task, candidate=candidate)


async def task_accept(app: App, actor: Actor, task: str, offer: str | None = None) -> dict:
    return await _write(app, actor, "task_accept", task=task, offer=offer)


async def task_refuse(app: App, actor: Actor, task: str, offer: str | None = None, reason: str | None = None) -> dict:
    return await _write(app, actor, "task_refuse", task=task, offer=offer, reason=reason)


async def task_progress(app: App, actor: Actor, task: str, progress: float, summary: str | None = None,
                        check_in: bool = False) -> dict:
    return await _write(app, actor, "task_progress", task=task, progress=progress, summary=summary,
                        check_in=bool(check_in))


async def task_done(app: App, actor: Actor, task: str, summary: str | None = None, failed: bool = False) -> dict:
    return await _write(app, actor, "task_done", task=task, summary=summary, failed=bool(failed))


async def task_release(app: App, actor: Actor, task: str, reason: str = "released") -> dict:
    return await _write(app, actor, "task_release", task=task, reason=reason)


async def task_review(app: App, actor: Actor, task: str, verdict: str, reason: str | None = None,
                      reassign: bool = False) -> dict:
    """The creator's review of a finished task's result: ``accept``, or ``reject`` with a reason,
    which reopens the task (``reassign``: taken from its holders, to offer again)."""
    return await _write(app, actor, "task_review", task=task, verdict=verdict, reason=reason, reassign=bool(reassign))


# --- reads ---------------------------------------------------------------------------------------


def _me(app: App, me) -> str | None:
    """``me``: a DID, or True for this node's own (the web's ``mine``)."""
    if me is not True:
        return me or None
    if app.key is None:
        raise MeshnodeError("bad_request", "mine needs this node's DID: give it as me")
    return app.key.did


async def _liveness(app: App) -> dict | None:
    """Each peer's liveness as the running node sees it; None with no node (the stored rows decide)."""
    return await app.gmp.liveness() if app.gmp is not None else None


async def goal_list(app: App, actor: Actor, status: str | None = None, me: str | bool | None = None) -> list[dict]:
    mine = _me(app, me)
    return await app.store.read(lambda db: service.goal_list(db, status=status, me=mine))


async def goal_show(app: App, actor: Actor, goal: str) -> dict:
    live, t = await _liveness(app), app.clock()
    return await app.store.read(lambda db: service.goal_show(db, goal=goal, now_ms=t, liveness=live))


async def task_list(app: App, actor: Actor, goal: str | None = None, me: str | bool | None = None,
                    status: str | None = None) -> list[dict]:
    mine = _me(app, me)
    return await app.store.read(lambda db: service.task_list(db, goal=goal, me=mine, status=status))


async def task_show(app: App, actor: Actor, task: str) -> dict:
    t = app.clock()
    return await app.store.read(lambda db: service.task_show(db, task=task, now_ms=t))


async def task_due(app: App, actor: Actor, include_all: bool = False) -> list[dict]:
    live, t = await _liveness(app), app.clock()
    return await app.store.read(lambda db: service.task_due(db, t, liveness=live, include_all=bool(include_all)))
