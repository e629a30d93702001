"""The A2A face's held queue and blocks over HTTP (the /review page's "Held A2A messages" and
"Blocked" sections): each route calls the person's action of meshnode.app.actions.a2a, the one the
CLI's ``meshnode a2a held|reject|block|unblock|blocks`` calls; "web" is recorded as the decider.
Approving one held message stays ``POST /api/confirmations/{id}``."""

from __future__ import annotations

from meshnode.faces.web import ids
from meshnode.faces.web.endpoint import Arg, Endpoint

_TARGET = Arg(str, required=True, max=200, doc="a party (a known party's name, a claimed sender, a party's key)"
                                               " or an address or network (192.0.2.7, 203.0.113.0/24)")


async def held(services, args):
    return await services.call("a2a_held", limit=args["limit"])


async def reject(services, args):
    given = {k: args[k] for k in ("party", "address") if args[k] is not None}
    return await services.call("a2a_reject", all=args["all"], **given)


async def block(services, args):
    return await services.call("a2a_block", target=args["target"])


async def unblock(services, args):
    return await services.call("a2a_unblock", target=args["target"])


async def blocks(services, args):
    return await services.call("a2a_blocks")


ROUTES: list[Endpoint] = [
    Endpoint("GET", "/api/a2a/held", held, {"limit": ids.limit("held messages", 200)},
             "unknown parties' messages held for your approval, oldest first (approve: POST /api/confirmations/{id})"),
    Endpoint("POST", "/api/a2a/reject", reject,
             {"all": Arg(bool, default=False, doc="every held message"),
              "party": Arg(str, max=200, doc="a party's (its key, or the sender it claims)"),
              "address": Arg(str, max=200, doc="from an address or network")},
             "reject held messages: all of them, or a party's and/or an address's"),
    Endpoint("POST", "/api/a2a/block", block, {"target": _TARGET},
             "block a party or an address (HTTP 403 from then on); its held messages are rejected"),
    Endpoint("POST", "/api/a2a/unblock", unblock, {"target": _TARGET}, "lift a block"),
    Endpoint("GET", "/api/a2a/blocks", blocks, {}, "the parties and addresses blocked at the A2A face"),
]
