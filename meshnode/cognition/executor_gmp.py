"""The agent's goals and tasks (GMP, protocols/gmp.md section 9): the cognition's commands over
``gmp.service``, so what the agent creates, delegates, accepts, reports and completes is a
container signed by the node, exactly as the person's CLI makes it.

Shared goals and tasks are named by lineage DID or short id (context 3 shows the short
ids). The agent's own local tasks (fact checks, isolation reviews, auxiliary loops: rows with
no lineage) keep their integer ids and stay on this node: ``task_update`` with ``id`` changes
them in place, ``task_add`` without a goal makes one. Registered on import (executor imports it).
"""

from __future__ import annotations

import collections
import json

from meshnode.cognition import facts
from meshnode.cognition.executor_admin import _named, admin_command, rows_of, sql_time
from meshnode.container.schema import boolean, did, integer, list_of, number, one_of, text
from meshnode.errors import MeshnodeError
from meshnode.gmp import service
from meshnode.gmp.reads import GOAL_STATUSES, TASK_STATUSES
from meshnode.store.short_ids import short_container_id

_LONG = 64 * 1024
_tags = list_of(text(64), max_items=64)
_REF = text(128)  # a lineage DID, a version's DID or a short id
_LIMIT = {"limit": (integer(1, 500), False)}


_OUTBOX: dict[str, collections.deque] = {}  # signer DID -> push lists the cycle hands to the node's GMP service


def _shown(result: dict, key) -> dict:
    """What the agent reads back: the result without its push list, which waits in the outbox for
    the cycle to push at once (``take_pushes``); without a running mesh, sync carries them."""
    if result.get("push"):
        _OUTBOX.setdefault(key.did, collections.deque(maxlen=1024)).append(result["push"])
    return {k: v for k, v in result.items() if k != "push"}


def take_pushes(did: str) -> list[dict]:
    """The push lists of the GMP commands signed by ``did`` since the last call (thread-safe)."""
    box, out = _OUTBOX.get(did), []
    while box:
        out += box.popleft()
    return out


@admin_command("goal_add", "create a goal shared with its participants (signed by this node)",
               {"title": (_named(256), True), "description": (text(_LONG), False), "priority": (number(0, 1), False),
                "participants": (list_of(did, max_items=255), False), "tags": (_tags, False),
                "public": (boolean, False)})
def _goal_add(db, key, now, args):
    return _shown(service.goal_add(db, key, now, title=args["title"], description=args.get("description"),
                                   priority=args.get("priority"), participants=args.get("participants", ()),
                                   tags=args.get("tags", ()), public=args.get("public", False)), key)


@admin_command("goal_list", "goals with their open/total tasks", {**_LIMIT, "status": (one_of(*GOAL_STATUSES), False)},
               mutating=False)
def _goal_list(db, key, now, args):
    shared = [{"goal": short_container_id(r["lineage"]), "title": r["title"], "status": r["status"],
               "priority": r["priority"], "tasks_open": r["tasks_open"], "tasks_total": r["tasks_total"],
               "mine": r["creator_did"] == key.did}
              for r in service.goal_list(db, status=args.get("status"))]
    where, params = ("AND status = ?", [args["status"]]) if args.get("status") else ("", [])
    local = rows_of(db.conn.execute(f"SELECT id, name AS title, status, priority FROM goals WHERE lineage IS NULL"
                                    f" {where} ORDER BY id DESC LIMIT ?", (*params, args.get("limit", 20))))
    return (shared + local)[: args.get("limit", 20)]


@admin_command("task_add", "add a task under a goal (shared, signed); without goal, a local task of your own",
               {"title": (_named(256), True), "goal": (_REF, False), "description": (text(_LONG), False),
                "parent": (_REF, False), "deadline_ms": (integer(0), False),
                "check_every_s": (integer(60, 365 * 86400), False), "priority": (number(0, 1), False),
                "tags": (_tags, False)})
def _task_add(db, key, now, args):
    if "goal" not in args:
        if "parent" in args or "deadline_ms" in args:
            raise MeshnodeError("bad_args", "a local task has no parent or deadline; give a goal to share it")
        with db.transaction() as conn:
            cur = conn.execute("INSERT INTO tasks (name, description, tags, priority, created_at) VALUES (?, ?, ?, ?, ?)",
                               (args["title"], args.get("description"), json.dumps(args.get("tags", [])),
                                args.get("priority", 0), sql_time(now)))
        return {"id": cur.lastrowid}
    result = service.task_add(db, key, now, goal=args["goal"], title=args["title"], description=args.get("description"),
                              parent=args.get("parent"), deadline_ms=args.get("deadline_ms"),
                              check_every_s=args.get("check_every_s"), tags=args.get("tags", ()),
                              priority=args.get("priority"))
    return {**_shown(result, key), "task": short_container_id(result["lineage"])}


@admin_command("task_update", "change a task: a shared one (task: id) by a new signed version; a local one (id: n)"
               " in place; on a fact-check task, verdict verified|rejected (+ evidence) settles its facts",
               {"id": (integer(0), False), "task": (_REF, False), "status": (one_of(*TASK_STATUSES), False),
                "pinned": (boolean, False), "verdict": (one_of("verified", "rejected"), False),
                "evidence": (text(4096), False), "progress": (number(0, 1), False), "notes": (text(_LONG), False),
                "next_check_ms": (integer(0), False)})
def _task_update(db, key, now, args):
    if ("id" in args) == ("task" in args):
        raise MeshnodeError("bad_args", "task_update names its task: task (a shared task's id) or id (a local one)")
    lineage = args.get("task")
    if lineage is None:
        row = db.conn.execute("SELECT lineage FROM tasks WHERE id = ?", (args["id"],)).fetchone()
        lineage = row[0] if row else None
    if lineage is not None:
        if "pinned" in args and len(args) == 2:  # pinned is this node's own mark, never signed
            with db.transaction() as conn:
                conn.execute("UPDATE tasks SET pinned = ? WHERE lineage = ?", (int(args["pinned"]), lineage))
            return {"task": short_container_id(lineage), "pinned": args["pinned"]}
        if {"verdict", "evidence"} & set(args):
            raise MeshnodeError("bad_args", "a verdict settles a local fact-check task, not a shared one")
        result = service.task_update(db, key, now, task=lineage, status=args.get("status"),
                                     next_check_ms=args.get("next_check_ms"), notes=args.get("notes"),
                                     progress=args.get("progress"))
        if "pinned" in args:
            with db.transaction() as conn:
                conn.execute("UPDATE tasks SET pinned = ? WHERE lineage = ?", (int(args["pinned"]), result["lineage"]))
        return _shown(result, key)
    return _local_update(db, key, now, args)


def _local_update(db, key, now, args):
    """A ``verdict`` (with ``evidence``) is a fact-check task's result: its facts become verified
    or rejected (cognition/facts.py) and the task completed, unless another status is given."""
    sets = {k: (int(v) if k == "pinned" else v) for k, v in args.items() if k in ("status", "pinned")}
    if "verdict" in args:
        sets.setdefault("status", "completed")
    if not sets:
        raise MeshnodeError("bad_args", "task_update changes status, pinned or gives a fact-check verdict")
    with db.transaction() as conn:
        cur = conn.execute(f"UPDATE tasks SET {', '.join(f'{k} = ?' for k in sets)} WHERE id = ? AND lineage IS NULL",
                           (*sets.values(), args["id"]))
        if cur.rowcount == 0:
            raise MeshnodeError("not_found", f"no task {args['id']}")
        if "verdict" in args:
            checked = facts.resolve(conn, args["id"], args["verdict"], args.get("evidence"), key.did, now)
            return {"id": args["id"], **sets, args["verdict"]: checked}
    return {"id": args["id"], **sets}


def _task_row(r: dict, me: str) -> dict:
    out = {"task": short_container_id(r["lineage"]), "title": r["title"], "status": r["status"],
           "goal": short_container_id(r["goal_lineage"] or ""),
           "assignees": [n or d for d, n in zip(r["assigned_to"], r.get("assignee_names") or [None] * 64)],
           "mine": me in r["assigned_to"]}
    if r.get("progress") is not None:
        out["progress"] = r["progress"]
    if r.get("due"):
        out["due"] = r["due"]
    return out


@admin_command("task_list", "tasks: shared ones (with assignees) and your local ones, pinned first",
               {**_LIMIT, "goal": (_REF, False), "mine": (boolean, False), "status": (one_of(*TASK_STATUSES), False)},
               mutating=False)
def _task_list(db, key, now, args):
    shared = [_task_row(r, key.did) for r in service.task_list(db, goal=args.get("goal"), status=args.get("status"),
                                                                me=key.did if args.get("mine") else None)]
    where, params = ("AND status = ?", [args["status"]]) if args.get("status") else ("", [])
    local = [] if args.get("goal") else rows_of(db.conn.execute(
        f"SELECT id, name, status, priority, pinned, repl_status FROM tasks WHERE lineage IS NULL {where}"
        " ORDER BY pinned DESC, priority DESC, id DESC LIMIT ?", (*params, args.get("limit", 20))))
    return (local[:5] + shared + local[5:])[: args.get("limit", 20)]


@admin_command("task_delegate", "offer a shared task you created to agents (they accept or refuse)",
               {"task": (_REF, True), "to": (list_of(did, max_items=16, non_empty=True), True),
                "expires_s": (integer(60, 30 * 86400), False)})
def _task_delegate(db, key, now, args):
    return _shown(service.task_offer(db, key, now, task=args["task"], candidates=args["to"],
                                     expires_s=args.get("expires_s", 3600)), key)


@admin_command("task_accept", "accept an offer of a task (the delegator then assigns it to you)",
               {"task": (_REF, True), "offer": (_REF, False)})
def _task_accept(db, key, now, args):
    return _shown(service.task_accept(db, key, now, task=args["task"], offer=args.get("offer")), key)


@admin_command("task_refuse", "refuse an offer of a task",
               {"task": (_REF, True), "offer": (_REF, False), "reason": (text(1024), False)})
def _task_refuse(db, key, now, args):
    return _shown(service.task_refuse(db, key, now, task=args["task"], offer=args.get("offer"),
                                      reason=args.get("reason")), key)


@admin_command("task_progress", "report progress (0..1) on a task you hold; check_in also moves its next check on",
               {"task": (_REF, True), "progress": (number(0, 1), True), "summary": (text(4096), False),
                "check_in": (boolean, False)})
def _task_progress(db, key, now, args):
    return _shown(service.task_progress(db, key, now, task=args["task"], progress=args["progress"],
                                        summary=args.get("summary"), check_in=args.get("check_in", False)), key)


@admin_command("task_done", "complete a task you hold (failed: true if it could not be done)",
               {"task": (_REF, True), "summary": (text(_LONG), False), "failed": (boolean, False)})
def _task_done(db, key, now, args):
    return _shown(service.task_done(db, key, now, task=args["task"], summary=args.get("summary"),
                                    failed=args.get("failed", False)), key)
