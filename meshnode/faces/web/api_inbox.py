"""The person's inbox over HTTP (the /inbox page, the count in every page's top bar, the items shown
inline in a conversation): each route calls an action of meshnode.app.actions.inbox, the one
``meshnode inbox`` calls. A decision is ``POST /api/inbox/decide``, which calls the action that
decides that kind of item (``confirm_decide``, ``mind_release``...): the existing routes
(``/api/confirmations/{id}``, ``/api/drafts/decide``, ``/api/a2a/reject``...) decide the same way;
"web" is recorded as the decider."""

from __future__ import annotations

from meshnode.faces.web.endpoint import Arg, Endpoint
from meshnode.records import inbox as records


async def listing(services, args):
    return await services.call("inbox", thread=args["thread"], limit=args["limit"])


async def count(services, args):
    return await services.call("inbox_count")


async def decide(services, args):
    return await services.call("inbox_decide", kind=args["kind"], ref=args["ref"], decision=args["decision"])


ROUTES: list[Endpoint] = [
    Endpoint("GET", "/api/inbox", listing,
             {"thread": Arg(str, max=16, doc="only the items of this conversation (its thread id)"),
              "limit": Arg(int, min=1, max=records.MAX_ITEMS, default=records.MAX_ITEMS, doc="at most this many items")},
             "what waits for you, newest first: confirmations, held A2A messages, held commands, drafts,"
             " escalations (each with its decisions), and the count"),
    Endpoint("GET", "/api/inbox/count", count, {}, "how many items wait for you: total and by kind"),
    Endpoint("POST", "/api/inbox/decide", decide,
             {"kind": Arg(str, required=True, choices=records.KINDS),
              "ref": Arg(str, required=True, max=4096, doc="the item's ref, as the inbox lists it"),
              "decision": Arg(str, required=True, max=16, doc="one of the item's actions (approve, reject, release...)")},
             "decide one item, through the action that decides its kind"),
]
