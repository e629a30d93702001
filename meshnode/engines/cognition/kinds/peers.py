"""The types of the commands about other agents: votes, trust, the agents the node knows."""

from __future__ import annotations

from meshnode.engines.cognition.command_kind import LIMIT, TAGS, kind, named
from meshnode.base.container.schema import did, integer, number, one_of, text

TYPES = (
    kind("consensus_vote", "vote on a container", {"target": (did, True), "value": (integer(-1, 1), True),
                                                   "decision": (one_of("general", "ethical"), False)}),
    kind("reputation_list", "agents by trust", LIMIT, mutating=False),
    kind("reputation_show", "the evidence behind one agent's trust", {"did": (did, True)}, mutating=False),
    kind("reputation_set", "ask the person to set an agent's trust (0..1); they decide, you are told",
         {"did": (did, True), "score": (number(0, 1), True), "reason": (text(200), True)}, closed=True),
    kind("agents_list", "known HMP agents", LIMIT, mutating=False),
    kind("agent_add", "remember an HMP agent by its DID (did:key)",
         {"did": (did, True), "name": (named(128), False), "tags": (TAGS, False)}, closed=True),
    kind("agent_delete", "forget an agent the node holds no record about", {"did": (did, True)}, closed=True),
)
