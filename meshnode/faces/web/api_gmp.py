"""Goals and tasks (GMP) over HTTP: every route is the application's action of the same name
(``meshnode.app.actions.gmp``, for the person through the web), so it signs, pushes and reacts
exactly as ``meshnode goal|task ...`` against a running node does (protocols/web.md 4.1).

Argument names are the service's (``meshnode.records.gmp.service``), as the CLI passes them: times in
milliseconds (``deadline_ms``, ``next_check_ms``), durations in seconds (``check_every_s``,
``grace_s``, ``expires_s``). Peers may be named as the CLI allows (DID, name, short id); they are
resolved to DIDs first. ``mine`` is the CLI's ``--mine``. GMP's refusals pass through unchanged
(code and reason).
"""

from __future__ import annotations

from meshnode.base.errors import MeshnodeError
from meshnode.records.gmp.reads import GOAL_STATUSES, TASK_STATUSES
from meshnode.records.gmp.service import RULES
from meshnode.faces.web import ids, reading
from meshnode.faces.web.endpoint import Arg, Endpoint

_PEERS = 64  # participants or candidates named in one request
_TEXT = 65536


def _id(noun: str) -> Arg:
    return Arg(str, required=True, max=200, doc=f"the {noun}: its lineage DID, a version's DID or its short id")


def _text(limit: int, doc: str = "", required: bool = False) -> Arg:
    return Arg(str, required=required, max=limit, doc=doc)


def _texts(doc: str) -> Arg:
    return Arg(list, max=64, doc=doc)


_UNIT = Arg(float, min=0.0, max=1.0, doc="0 to 1")
_PEER_LIST = Arg(list, max=_PEERS, doc="agents: DID, name or short id")


def _given(args: dict, *, rename: dict | None = None) -> dict:
    """The arguments given (None: left to the service's default), path ``id`` renamed."""
    rename = rename or {}
    for name, value in args.items():
        if isinstance(value, list):
            ids.texts(name, value, 4096)
    return {rename.get(k, k): v for k, v in args.items() if v is not None}


def _command(cmd: str, noun: str | None = None, peers: tuple[str, ...] = ()):
    """A handler calling action ``cmd`` with the route's arguments (``id`` -> ``noun``)."""
    async def handler(services, args):
        kwargs = _given(args, rename={"id": noun} if noun else None)
        if kwargs.pop("mine", False):
            kwargs["me"] = True  # the node's own DID (app.actions.gmp)
        for name in peers:
            if name in kwargs:
                kwargs[name] = await ids.agents(services, name, kwargs[name])
        return await services.call(cmd, **kwargs)

    handler.__name__ = f"gmp_{cmd}"
    return handler


def _readable(cmd: str):
    """A listing of ``cmd`` with what a person reads (faces.web.reading): its description as
    ``html`` (Markdown, sanitized), who created it in words (``author``: the person, the agent, a
    peer by name) and its time ``at_ms``."""
    listing = _command(cmd)

    async def handler(services, args):
        rows = await listing(services, args)
        found = await services.read(reading.provenance, [r.get("container_did") for r in rows])
        return reading.written(rows, services.key.did, found, author_key="creator_did",
                               name_key="creator_name" if cmd == "goal_list" else None, text_key="description",
                               time_key="timestamp_ms")

    handler.__name__ = f"gmp_{cmd}_readable"
    return handler


async def _assign(services, args):
    """``task assign``: exactly one of candidates (direct offer), interest (the mesh's lookup) or
    basis (an approved consensus result on a nomination)."""
    chosen = [k for k in ("candidates", "interest", "basis") if args.get(k)]
    if len(chosen) != 1:
        raise MeshnodeError("bad_arguments", "task assign takes candidates (a list of peers), interest or basis:"
                                             " exactly one")
    kwargs = {"task": args["id"], "expires_s": args.get("expires_s")}
    if chosen == ["interest"]:
        kwargs.update(interest=args["interest"], candidates_max=args.get("candidates_max") or 1)
    elif chosen == ["basis"]:
        kwargs["basis"] = args["basis"]
    else:
        kwargs.update(candidates=await ids.agents(services, "candidates", args["candidates"]), selection="direct")
    return await services.call("task_assign", **kwargs)


async def _nominate(services, args):
    (candidate,) = await ids.agents(services, "candidate", [args["candidate"]])
    return await services.call("task_nominate", task=args["id"], candidate=candidate)


_GOAL_LIST = {"status": Arg(str, choices=tuple(GOAL_STATUSES)),
              "mine": Arg(bool, default=False, doc="only goals this node creates, takes part in or works on")}
_TASK_LIST = {"goal": Arg(str, max=200, doc="only this goal's tasks"),
              "mine": Arg(bool, default=False, doc="only tasks this node created or holds"),
              "status": Arg(str, choices=tuple(TASK_STATUSES))}
_GOAL_ADD = {"title": _text(256, "the goal's title", required=True), "description": _text(_TEXT),
             "priority": _UNIT, "criteria": _texts("success criteria"), "constraints": _texts("constraints"),
             "participants": _PEER_LIST, "public": Arg(bool, default=False, doc="offer it to any peer"),
             "tags": _texts("tags"), "parent": Arg(str, max=200, doc="the goal this one is a subgoal of")}
_GOAL_UPDATE = {"id": _id("goal"), "status": Arg(str, choices=tuple(GOAL_STATUSES)), "title": _text(256),
                "description": _text(_TEXT), "priority": _UNIT, "add_participants": _PEER_LIST,
                "remove_participants": _PEER_LIST}
_TASK_ADD = {"goal": _id("goal"), "title": _text(256, "the task's title", required=True),
             "description": _text(_TEXT), "parent": Arg(str, max=200, doc="the task this one is a subtask of"),
             "depends": Arg(list, max=64, doc="tasks it waits for"),
             "deadline_ms": Arg(int, min=1, doc="when it is due (ms since 1970)"),
             "check_every_s": Arg(int, min=1, doc="how often its holder shows life on it"),
             "grace_s": Arg(int, min=1, doc="how late a check may be before it is reassigned"),
             "rule": Arg(str, choices=tuple(RULES), doc="who chooses its holder (default creator)"),
             "tags": _texts("tags, also what an interest lookup finds"), "priority": _UNIT}
_TASK_UPDATE = {"id": _id("task"), "status": Arg(str, choices=tuple(TASK_STATUSES)),
                "next_check_ms": Arg(int, min=1, doc="when you look at it next (ms since 1970)"),
                "notes": _text(_TEXT), "title": _text(256), "description": _text(_TEXT), "progress": _UNIT}
_TASK_ASSIGN = {"id": _id("task"), "candidates": _PEER_LIST,
                "interest": Arg(str, max=64, doc="find candidates by this interest in the mesh"),
                "candidates_max": Arg(int, min=1, max=16, doc="with interest: offer to the top N (default 1)"),
                "basis": Arg(str, max=200, doc="an approved consensus result on a nomination"),
                "expires_s": Arg(int, min=1, doc="how long the offer stands (default [gmp] offer_seconds)")}

ROUTES: list[Endpoint] = [
    Endpoint("GET", "/api/goals", _readable("goal_list"), _GOAL_LIST,
             "goals: status, title, description (and html, its Markdown), open/total tasks, author (who created it)"),
    Endpoint("GET", "/api/goals/{id}", _command("goal_show", "goal"), {"id": _id("goal")},
             "a goal as a tree of its tasks"),
    Endpoint("POST", "/api/goals", _command("goal_add", peers=("participants",)), _GOAL_ADD,
             "create a goal signed by this node"),
    Endpoint("POST", "/api/goals/{id}/update",
             _command("goal_update", "goal", peers=("add_participants", "remove_participants")), _GOAL_UPDATE,
             "a new version of a goal (its creator only)"),
    Endpoint("POST", "/api/goals/{id}/cancel", _command("goal_cancel", "goal"),
             {"id": _id("goal"), "reason": _text(4096, "why")}, "cancel a goal; its open tasks here are abandoned"),
    Endpoint("GET", "/api/tasks", _readable("task_list"), _TASK_LIST,
             "tasks: status, progress, assignees, title, description (and html), author (who created it)"),
    Endpoint("GET", "/api/tasks/due", _command("task_due"),
             {"include_all": Arg(bool, default=False, doc="every open task, with its state")},
             "what needs a check now: overdue, holder dead, unassigned, offers open"),
    Endpoint("GET", "/api/tasks/{id}", _command("task_show", "task"), {"id": _id("task")},
             "a task: shown version, forks, holders, entries"),
    Endpoint("POST", "/api/tasks", _command("task_add"), _TASK_ADD, "add a task to a goal"),
    Endpoint("POST", "/api/tasks/{id}/update", _command("task_update", "task"), _TASK_UPDATE,
             "a new version of a task (creator; assignee: status, next check, notes, progress)"),
    Endpoint("POST", "/api/tasks/{id}/assign", _assign, _TASK_ASSIGN, "offer a task to agents"),
    Endpoint("POST", "/api/tasks/{id}/nominate", _nominate,
             {"id": _id("task"), "candidate": Arg(str, required=True, max=200, doc="the peer proposed")},
             "propose a peer for a contested task"),
    Endpoint("POST", "/api/tasks/{id}/accept", _command("task_accept", "task"),
             {"id": _id("task"), "offer": Arg(str, max=200, doc="which offer (default the newest naming you)")},
             "accept an offer of a task"),
    Endpoint("POST", "/api/tasks/{id}/refuse", _command("task_refuse", "task"),
             {"id": _id("task"), "offer": Arg(str, max=200), "reason": _text(1024)}, "refuse an offer of a task"),
    Endpoint("POST", "/api/tasks/{id}/progress", _command("task_progress", "task"),
             {"id": _id("task"), "progress": Arg(float, required=True, min=0.0, max=1.0, doc="0 to 1"),
              "summary": _text(4096), "check_in": Arg(bool, default=False, doc="also move the next check on")},
             "report progress on a task you hold"),
    Endpoint("POST", "/api/tasks/{id}/done", _command("task_done", "task"),
             {"id": _id("task"), "summary": _text(_TEXT), "failed": Arg(bool, default=False)},
             "complete a task you hold (or failed)"),
    Endpoint("POST", "/api/tasks/{id}/release", _command("task_release", "task"), {"id": _id("task")},
             "give back a task you hold"),
    Endpoint("POST", "/api/tasks/{id}/review", _command("task_review", "task"),
             {"id": _id("task"), "verdict": Arg(str, required=True, choices=("accept", "reject")),
              "reason": _text(4096, "why (required to reject: the holder reads it)"),
              "reassign": Arg(bool, default=False, doc="with reject: take it from its holders, to offer again")},
             "review the result of a task you created: accept it, or reject it (reopens it)"),
]
