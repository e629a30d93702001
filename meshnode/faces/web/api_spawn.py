"""Routes of a node's family (protocols/spawn.md section 9): spawn a child, list and look at the
children, remove one.

Every route is the control command the CLI sends (``spawn``, ``spawn_wait``, ``children``,
``child_show``, ``child_remove``). From a browser a child is made with the defaults of ``[spawn]``
only: its home, autostart and a bundle for another host name paths on the parent's host, which
stay with the CLI. A spawn may take longer than one request (seeding a large store): the answer is
then ``{"pending": job}``, and ``GET /api/spawn/{job}`` gives the result when it is done."""

from __future__ import annotations

from meshnode.engines.spawn import friends as friend_choice
from meshnode.engines.spawn.model import KINDS
from meshnode.faces.web import ids
from meshnode.faces.web.endpoint import Arg, Endpoint

ANSWER_SECONDS = 30.0  # inside one request's time (services.call: 90 s); longer spawns answer pending
MAX_NAME = 64
MAX_JOB = 64


async def spawn(services, args):
    return await services.call("spawn", kind=args["kind"], name=args["name"], start=args["start"],
                               friends=args["friends"], answer_seconds=ANSWER_SECONDS)


async def spawn_result(services, args):
    return await services.call("spawn_wait", job=args["job"])


async def children(services, args):
    return await services.call("children", all=args["all"])


async def child_show(services, args):
    return await services.call("child_show", did=args["did"])


async def child_remove(services, args):
    return await services.call("child_remove", did=args["did"])


_CHILD = {"did": Arg(str, required=True, max=ids.MAX_DID, doc="the child's DID, a unique prefix, or its name")}

ROUTES: list[Endpoint] = [
    Endpoint("POST", "/api/spawn", spawn,
             {"kind": Arg(str, required=True, choices=KINDS,
                          doc="clone: all the parent may share; trained: knowledge and known agents; newborn: nothing"),
              "name": Arg(str, max=MAX_NAME, doc="the child's name (default: <parent name>-<kind>-<n>)"),
              "start": Arg(bool, default=True, doc="start the child and wait until the parent reaches it"),
              "friends": Arg(str, max=friend_choice.MAX_TEXT,
                             doc="the child's friends besides its parent (default: the parent only):"
                                 f" '{friend_choice.INHERIT}' (the parent's friends; not for a newborn) and/or"
                                 f" DIDs, comma separated, at most {friend_choice.MAX_ITEMS} (`spawn --friends`;"
                                 " 400 bad_friends otherwise)")},
             doc="make a child node: its own key, home and ports, a store seeded by its kind; the result, or"
                 " {pending: job} when it takes longer than a request"),
    Endpoint("GET", "/api/spawn/{job}", spawn_result,
             {"job": Arg(str, required=True, max=MAX_JOB, doc="the job a pending spawn answered")},
             doc="the result of a pending spawn, or {pending: job} while it runs"),
    Endpoint("GET", "/api/children", children,
             {"all": Arg(bool, default=False, doc="also the removed children")},
             doc="this node's children: kind, depth, host, state, liveness, last heard"),
    Endpoint("GET", "/api/children/{did}", child_show, _CHILD,
             doc="one child: its home, ports, addresses, autostart, invitation and seed report"),
    Endpoint("POST", "/api/children/{did}/remove", child_remove, _CHILD,
             doc="no longer a child nor a friend (the home stays; `meshnode children remove --delete-home` deletes it)"),
]
