"""CogConsensus (protocols/cogconsensus.md): this node's vote on a target, the tally of the votes
it holds, and a result signed from that tally, for whoever asks.

``cast`` is the store side of a vote (with the record of who asked), for callers already inside
the store's writer (the agent's ``consensus_vote``). Votes and results reach peers by sync, as
before: nothing is pushed at once.
"""

from __future__ import annotations

from meshnode.app.actor import Actor
from meshnode.app.context import App
from meshnode.domain.consensus.cogvote import DEFAULT_HALF_LIFE_MS, DEFAULT_MIN_TRUST, DEFAULT_MIN_VOTERS, Rule
from meshnode.base.container import Container
from meshnode.records import consensus


def cast(db, key, actor: Actor, target: str, value: int, *, now_ms: int, decision: str = "general",
         arguments: list[dict] | None = None, evidence: list[str] | None = None) -> Container:
    return consensus.cast_vote(db, key, target, value, now_ms=now_ms, decision=decision, arguments=arguments,
                               evidence=evidence, asked_by=actor.row())


def _rule(decision: str, half_life_ms: int, min_voters: int, min_trust: float) -> Rule:
    return Rule(decision, half_life_ms, min_voters, min_trust)


async def consensus_vote(app: App, actor: Actor, target: str, value: int, decision: str = "general",
                         arguments: list | None = None, evidence: list | None = None) -> dict:
    """This node's vote on ``target`` (a DID); ``arguments``: reasons, each text."""
    t = app.clock()
    reasons = [{"reason": str(r)} for r in arguments or []]
    vote = await app.store.write(lambda db: cast(db, app.key, actor, target, value, now_ms=t, decision=decision,
                                                 arguments=reasons, evidence=list(evidence or [])))
    return {"did": vote.did}


async def consensus_tally(app: App, actor: Actor, target: str, decision: str = "general",
                          half_life_ms: int = DEFAULT_HALF_LIFE_MS, min_voters: int = DEFAULT_MIN_VOTERS,
                          min_trust: float = DEFAULT_MIN_TRUST) -> dict:
    """The tally of the votes this node holds on ``target`` now, under the rule given."""
    rule, t = _rule(decision, half_life_ms, min_voters, min_trust), app.clock()
    return (await app.store.read(lambda db: consensus.tally_stored(db, target, rule=rule, at_ms=t))).to_plain()


async def consensus_result(app: App, actor: Actor, target: str, decision: str = "general",
                           half_life_ms: int = DEFAULT_HALF_LIFE_MS, min_voters: int = DEFAULT_MIN_VOTERS,
                           min_trust: float = DEFAULT_MIN_TRUST) -> dict:
    """Tally ``target`` now and sign the result (a consensus_result container)."""
    rule, t = _rule(decision, half_life_ms, min_voters, min_trust), app.clock()
    result = await app.store.write(lambda db: consensus.publish_result(db, app.key, target, rule=rule, now_ms=t,
                                                                       asked_by=actor.row()))
    return {"did": result.did}
