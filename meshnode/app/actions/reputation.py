"""Reputation as a person reads and sets it: every agent's trust now (decayed to the present,
direct or transitive), one agent's in full, the person's own judgement of one, and a round of the
running node's reputation now (observations folded, trust published).

Setting trust is the person's alone: the agent asks them (its ``reputation_set`` command writes
them a note), an outside party cannot. A round is the person's or the node's.
"""

from __future__ import annotations

from meshnode.app.actor import PERSON_OR_NODE, Actor, allow, is_person
from meshnode.app.actions.names import agent_of
from meshnode.app.context import App
from meshnode.base.errors import MeshnodeError
from meshnode.records.reputation.manual import set_by_person
from meshnode.records.reputation.reading import reputation_detail, reputation_rows


async def reputation(app: App, actor: Actor) -> list[dict]:
    """Every agent this node trusts or distrusts, most trusted first."""
    return await app.store.read(lambda db: reputation_rows(db, now_ms=app.clock()))


async def reputation_show(app: App, actor: Actor, did: str) -> dict:
    """Everything behind one agent's trust (``did``: as every action takes an agent, a name too)."""
    did = await agent_of(app, did)
    return await app.store.read(lambda db: reputation_detail(db, did, now_ms=app.clock()))


async def reputation_set(app: App, actor: Actor, did: str, score: float, reason: str = "") -> dict:
    """The person's judgement of ``did`` (0..1), applied as one event of the evidence model."""
    if not is_person(actor.kind):
        raise MeshnodeError("not_allowed", "only the node's person sets trust by hand")
    if isinstance(score, bool) or not isinstance(score, (int, float)):
        raise MeshnodeError("bad_request", "score is a number from 0 to 1")
    did = await agent_of(app, did)
    return await app.store.write(lambda db: set_by_person(db, did, float(score), now_ms=app.clock(),
                                                          reason=str(reason)))


async def reputation_round(app: App, actor: Actor) -> dict:
    """Fold the observations and publish this node's trust now (the running node's round)."""
    allow(actor, PERSON_OR_NODE, "a reputation round")
    return await app.network("reputation_round").reputation_round()
