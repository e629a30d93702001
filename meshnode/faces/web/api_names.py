"""Routes of the names a person gives agents (README "Names", ``app/actions/names.py``): what every
agent known here is called, and the person's petnames, set and forgotten.

Each route is the action ``meshnode name list|set|unset`` runs (``names``, ``name_set``,
``name_unset``); the agent is named as the CLI takes it (a DID, a name, a short id) and resolved
by the action. A petname stays on this node: nothing is sent."""

from __future__ import annotations

from meshnode.domain.names import MAX_PETNAME
from meshnode.faces.web import ids
from meshnode.faces.web.endpoint import Arg, Endpoint


async def names(services, args):
    return await services.call("names")


async def name_set(services, args):
    return await services.call("name_set", agent=args["agent"], petname=args["petname"])


async def name_unset(services, args):
    return await services.call("name_unset", agent=args["agent"])


_NAME = ("{did, name (as every listing shows it), petname, announced (the name the agent gave itself),"
         " ambiguous, own}")

ROUTES: list[Endpoint] = [
    Endpoint("GET", "/api/names", names,
             doc=f"every agent known here with what it is called, this node first: [{_NAME}]"),
    Endpoint("POST", "/api/names", name_set,
             {"agent": ids.AGENT,
              "petname": Arg(str, required=True, max=MAX_PETNAME,
                             doc="what you call it: printable, no leading or trailing space, not like a DID or"
                                 " short id, not another agent's petname (409 petname_taken)")},
             doc=f"give an agent a petname on this node only (it replaces its old one): {_NAME}"),
    Endpoint("POST", "/api/names/unset", name_unset, {"agent": ids.AGENT},
             doc=f"forget an agent's petname (404 when it has none): {_NAME} as it is called now"),
]
