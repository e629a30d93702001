"""The gate's review over HTTP: drafts, snapshots, confirmations, tools, the budget reset
(protocols/web.md 4.1). Every decision is a ``gate.person`` function, the one the CLI calls, so
the agent's context 4 shows a ``gate:<what>`` row whichever front end the person used ("web" is
recorded as the decider).

``GET /api/drafts`` writes (4.2): listing records the hash of what was shown, and an accept takes
only what was shown. Unlike the CLI, an accept here is all or nothing: a draft that changed since
it was listed refuses the whole decision (409 ``not_shown``) before anything is decided.
"""

from __future__ import annotations

from meshnode.base.errors import MeshnodeError
from meshnode.records.gate import drafts, person
from meshnode.faces.web import ids
from meshnode.faces.web.endpoint import Arg, Endpoint


def _number(args: dict, what: str) -> int:
    return ids.number(args["id"], "id", f"the {what}'s number")


async def drafts_listing(services, args):
    return await services.call("drafts", rejected=args["rejected"])


async def drafts_decide(services, args):
    if bool(args["all"]) == bool(args["paths"]):
        raise MeshnodeError("bad_arguments", f"name the drafts to {args['decision']} (paths) or give all: true,"
                                             " not both")
    paths = None if args["all"] else ids.texts("paths", args["paths"], 4096)
    return await services.call("drafts_decide", decision=args["decision"], paths=paths, all_or_nothing=True)


async def drafts_edit(services, args):
    return await services.call("drafts_edit", path=args["path"], content=args["content"])


async def drafts_commit(services, args):
    return await services.call("drafts_commit", message=args["message"])


async def snapshots_listing(services, args):
    return await services.call("snapshots", limit=args["limit"])


async def snapshots_show(services, args):
    return await services.call("snapshot_show", id=_number(args, "snapshot"))


async def snapshots_rollback(services, args):
    return await services.call("snapshot_rollback", id=_number(args, "snapshot"))


async def confirmations_listing(services, args):
    return await services.call("confirmations", all=args["all"], limit=args["limit"])


async def confirmations_decide(services, args):
    return await services.call("confirm_decide", id=_number(args, "request"), approve=args["approve"])


async def gate_tools(services, args):
    """The tools with their risk levels, and which sends out of the node ask a person first."""
    return await services.call("gate_tools")


async def reset_limit(services, args):
    return await services.call("gate_reset_limit")


_LIMIT = ids.LIMIT
_ID = Arg(str, required=True, max=20, doc="the number the listing shows")

ROUTES: list[Endpoint] = [
    Endpoint("GET", "/api/drafts", drafts_listing,
             {"rejected": Arg(bool, default=False, doc="the rejected drafts too (discarded at the next commit)")},
             "the agent's open drafts with their diffs (records what was shown: an accept takes only that)"),
    Endpoint("POST", "/api/drafts/decide", drafts_decide,
             {"decision": Arg(str, required=True, choices=person.DECISIONS),
              "paths": Arg(list, max=drafts.MAX_OPEN_DRAFTS, doc="drafted files, as the listing names them"),
              "all": Arg(bool, default=False, doc="accept: every pending draft; reject: pending and accepted")},
             "accept or reject drafts (an accept of a draft changed since it was listed refuses the whole decision)"),
    Endpoint("POST", "/api/drafts/edit", drafts_edit,
             {"path": Arg(str, required=True, max=4096), "content": Arg(str, required=True, max=drafts.MAX_DRAFT_BYTES)},
             "put your own content in an open draft (its status stays)"),
    Endpoint("POST", "/api/drafts/commit", drafts_commit,
             {"message": Arg(str, max=4096, default="reviewed and accepted", doc="why, kept with the snapshot")},
             "write the accepted drafts, all or nothing, after a snapshot"),
    Endpoint("GET", "/api/snapshots", snapshots_listing, {"limit": _LIMIT}, "snapshots taken before commits, newest first"),
    Endpoint("GET", "/api/snapshots/{id}", snapshots_show, {"id": _ID}, "one snapshot: its files and state"),
    Endpoint("POST", "/api/snapshots/{id}/rollback", snapshots_rollback, {"id": _ID},
             "restore the files as the snapshot has them (the state before is a new snapshot)"),
    Endpoint("GET", "/api/confirmations", confirmations_listing,
             {"all": Arg(bool, default=False, doc="answered and expired requests too"), "limit": _LIMIT},
             "the agent's requests for a person's confirmation, newest first"),
    Endpoint("POST", "/api/confirmations/{id}", confirmations_decide,
             {"id": _ID, "approve": Arg(bool, required=True, doc="true: approve; false: reject")},
             "answer a request; a running node acts on it at its next tick"),
    Endpoint("GET", "/api/gate/tools", gate_tools, {}, "the gate's tools and risk levels; outbound sends"),
    Endpoint("POST", "/api/gate/reset-limit", reset_limit, {}, "a fresh budget of tool calls from the next tick"),
]
