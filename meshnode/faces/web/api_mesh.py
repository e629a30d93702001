"""Routes of the mesh's shared judgement (protocols/web.md 4.1): the committee's consensus, reputation,
the tally of votes on a container, and ethics policies.

Consensus and the reputation round are control commands (the running mesh does them); the tally
of votes is the action ``consensus status`` runs (``consensus_tally``); ethics is the actions
``meshnode ethics`` calls (``ethics``, ``ethics_add``, ``ethics_remove``). Casting votes stays in
the CLI in v1."""

from __future__ import annotations

from meshnode.records import ethics
from meshnode.domain.consensus.cogvote import DAY_MS, DECISIONS, DEFAULT_HALF_LIFE_MS, DEFAULT_MIN_TRUST, DEFAULT_MIN_VOTERS
from meshnode.records.reputation.manual import MAX_REASON
from meshnode.faces.web import ids
from meshnode.faces.web.endpoint import Arg, Endpoint

MAX_VALUE = 64 * 1024  # a proposed value: text a person typed


async def consensus_status(services, args):
    return await services.call("consensus_status")


async def consensus_decisions(services, args):
    return await services.call("consensus_decisions", limit=args["limit"])


async def consensus_propose(services, args):
    return await services.call("consensus_propose", value=args["value"], wait_seconds=args["wait_seconds"])


async def consensus_next_committee(services, args):
    return await services.call("consensus_next_committee")


async def reputation_list(services, args):
    return await services.call("reputation")


async def reputation_show(services, args):
    return await services.call("reputation_show", did=await ids.agent(services, args["did"]))


async def reputation_set(services, args):
    return await services.call("reputation_set", did=await ids.agent(services, args["did"]), score=args["score"],
                               reason=args["reason"])


async def reputation_round(services, args):
    return await services.call("reputation_round")


async def votes(services, args):
    """The local tally of the votes on a container, as ``meshnode consensus status --json`` prints it."""
    target = args["did"] if args["did"].startswith("did:") else await ids.container(services, args["did"])
    return await services.call("consensus_tally", target=target, decision=args["decision"],
                               half_life_ms=round(args["half_life_days"] * DAY_MS), min_voters=args["min_voters"],
                               min_trust=args["min_trust"])


async def ethics_list(services, args):
    return await services.call("ethics")


async def ethics_add(services, args):
    principles = ids.texts("principles", args["principles"], ethics.MAX_PRINCIPLE)
    return await services.call("ethics_add", name=args["name"], principles=principles, model_type=args["model_type"],
                               on_violation=args["on_violation"], replace=args["replace"])


async def ethics_remove(services, args):
    return await services.call("ethics_remove", name=args["name"])


_AGENT = {"did": ids.AGENT}

ROUTES: list[Endpoint] = [
    Endpoint("GET", "/api/consensus", consensus_status, doc="the committee, its height and round, this node's part"),
    Endpoint("GET", "/api/consensus/decisions", consensus_decisions, {"limit": ids.LIMIT},
             doc="committed decisions and unsettled emergency ones, newest height first"),
    Endpoint("POST", "/api/consensus/propose", consensus_propose,
             {"value": Arg(str, required=True, max=MAX_VALUE, doc="the value to decide (text)"),
              "wait_seconds": Arg(float, min=0, max=3600, default=0.0, doc="wait this long for the decision")},
             doc="propose a value to the committee"),
    Endpoint("POST", "/api/consensus/next-committee", consensus_next_committee,
             doc="propose the next committee (from trust) to the current one"),
    Endpoint("GET", "/api/reputation", reputation_list,
             doc="agents this node trusts or distrusts, directly or through others, most trusted first"),
    Endpoint("POST", "/api/reputation/round", reputation_round, doc="fold observations and publish trust now"),
    Endpoint("GET", "/api/reputation/{did}", reputation_show, _AGENT,
             doc="one agent's trust: evidence, history, others' statements"),
    Endpoint("POST", "/api/reputation/{did}", reputation_set,
             {**_AGENT, "score": Arg(float, required=True, min=0, max=1, doc="0 none, 0.5 unknown, 1 full"),
              "reason": Arg(str, max=MAX_REASON, default="", doc="why (kept with the score)")},
             doc="set an agent's trust to the person's judgement: {did, score, capped}"),
    Endpoint("GET", "/api/votes/{did}", votes,
             {"did": Arg(str, required=True, max=ids.MAX_DID, doc="the container voted on (DID or short id)"),
              "decision": Arg(str, choices=tuple(DECISIONS), default="general",
                              doc="general: passes above 1/2 of the weight; ethical: at 2/3"),
              "half_life_days": Arg(float, min=0, max=1e6, default=DEFAULT_HALF_LIFE_MS / DAY_MS,
                                    doc="a vote's weight halves every this many days (0: no decay)"),
              "min_voters": Arg(int, min=1, max=1_000_000, default=DEFAULT_MIN_VOTERS, doc="quorum: voters"),
              "min_trust": Arg(float, min=0, max=1e9, default=DEFAULT_MIN_TRUST, doc="quorum: their trust added up")},
             doc="the local tally of the votes on a container (voting stays in the CLI)"),
    Endpoint("GET", "/api/ethics", ethics_list, doc="the ethics policies, the person's first"),
    Endpoint("POST", "/api/ethics", ethics_add,
             {"name": Arg(str, required=True, max=64, doc="1 to 64 letters, digits or ._-"),
              "principles": Arg(list, required=True, max=ethics.MAX_PRINCIPLES, doc="one sentence each"),
              "model_type": Arg(str, max=64, doc="e.g. deontological"),
              "on_violation": Arg(str, max=ethics.MAX_TEXT, doc="what the agent does when a principle is broken"),
              "replace": Arg(bool, default=False, doc="change the policy of that name instead of refusing")},
             doc="add (or replace) a policy: {name, principles, set_by}"),
    Endpoint("POST", "/api/ethics/{name}/remove", ethics_remove,
             {"name": Arg(str, required=True, max=64, doc="the policy's name")}, doc="remove a policy: {removed}"),
]
