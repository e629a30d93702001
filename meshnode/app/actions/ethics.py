"""The ethics policies the agent thinks and is validated under (records.ethics): read them, add one,
remove one.

The person sets the policies that bind the agent; the agent may add stricter norms of its own
and remove those again, never one the person set (records.ethics keeps that rule); an outside
party, a peer or the node itself may not change them.
"""

from __future__ import annotations

from meshnode.app.actor import Actor, is_person
from meshnode.app.context import App
from meshnode.base.errors import MeshnodeError
from meshnode.records import ethics as policies


def _side(actor: Actor) -> str:
    """Whose policy it is: the person's or the agent's (records.ethics ``set_by``)."""
    if is_person(actor.kind):
        return policies.PERSON
    if actor.kind == "agent":
        return policies.AGENT
    raise MeshnodeError("not_allowed", "only the node's person (and the agent, for its own) sets ethics policies")


async def ethics(app: App, actor: Actor) -> list[dict]:
    """Every policy, with its principles and who set it."""
    return await app.store.read(policies.listing)


async def ethics_add(app: App, actor: Actor, name: str, principles: list, model_type: str | None = None,
                     on_violation: str | None = None, replace: bool = False) -> dict:
    """Add a policy (``replace``: or change the one of that name, set by the same side)."""
    by = _side(actor)
    return await app.store.write(lambda db: policies.add(db, name, principles, by=by, model_type=model_type,
                                                         on_violation=on_violation, replace=bool(replace)))


async def ethics_remove(app: App, actor: Actor, name: str) -> dict:
    by = _side(actor)
    return await app.store.write(lambda db: policies.remove(db, name, by=by))
