"""The handlers of the agent's goals and tasks (GMP, protocols/gmp.md section 9): the cognition's
commands over the application's GMP writes (``app.actions.gmp.write``, for the agent), so what the
agent creates, delegates, accepts, reports and completes is a container signed by the node, exactly
as the person's CLI makes it, with the record that the agent asked for it. They run in the store's
writer: what follows each write on the running node (``app.actions.gmp.follow``: pushes, reactions)
waits in an outbox for the cycle (``take_written``).

Shared goals and tasks are named as the agent is shown them: short id (context 3 and every
listing), lineage DID or any version's DID. The agent's own local goals and tasks (fact checks,
isolation reviews, auxiliary loops: rows with no lineage) keep their row numbers and stay on this
node: ``goal``/``task`` take the number too (``id`` as before), ``task_update`` changes them in
place, ``task_add`` without a goal makes one. The reads give GMP's own views (``goal_show``,
``task_show``: a result, its review, holders, progress summaries) in the agent's terms: short ids,
names beside DIDs. An offer by interest needs the mesh: the cycle runs it (``mesh_commands``).
"""

from __future__ import annotations

import collections
import json

from meshnode.app.actions import gmp
from meshnode.app.actor import AGENT
from meshnode.base.container import format_ms
from meshnode.engines.cognition import facts
from meshnode.engines.cognition.handlers.rows import one, rows_of, sql_time
from meshnode.base.errors import MeshnodeError
from meshnode.records.gmp import service
from meshnode.records.gmp.reads import resolve, result_of
from meshnode.store.short_ids import MIN_SHORT, short_container_id

_OUTBOX: dict[str, collections.deque] = {}  # signer DID -> (write, result) the cycle follows up (gmp.follow)


def _write(db, key, now, name: str, **args) -> dict:
    """GMP write ``name`` for the agent; what it reads back is the result without its push list,
    which waits in the outbox with the rest of the result for the cycle to follow up at once
    (``take_written``); without a running mesh, sync carries it."""
    result = gmp.write(db, key, AGENT, now, name, **args)
    _OUTBOX.setdefault(key.did, collections.deque(maxlen=1024)).append((name, result))
    return {k: v for k, v in result.items() if k != "push"}


def take_written(did: str) -> list[tuple[str, dict]]:
    """The GMP writes signed by ``did`` since the last call, each (name, result) (thread-safe)."""
    box, out = _OUTBOX.get(did), []
    while box:
        out.append(box.popleft())
    return out


def _named(db, args: dict, noun: str) -> tuple[str | None, int | None]:
    """(lineage, None) for a shared goal or task, (None, row id) for a local one, from what the
    prompt shows: ``goal``/``task`` (a short id, a lineage or version DID, or a local row's
    number) or ``id`` (a row number: a shared row's too)."""
    table = "goals" if noun == "goal" else "tasks"
    given = [args[k] for k in (noun, "id") if k in args]
    if len(given) != 1:
        raise MeshnodeError("bad_args", f"name one {noun}: {noun} (the id the prompt shows) or id (a row number)")
    ref = given[0]
    if type(ref) is str and ref.strip().isdigit() and len(ref.strip()) < MIN_SHORT:
        ref = int(ref.strip())
    if type(ref) is int:
        row = db.conn.execute(f"SELECT lineage FROM {table} WHERE id = ?", (ref,)).fetchone()
        if row is None:
            raise MeshnodeError("not_found", f"no {noun} {ref}")
        return (row[0], None) if row[0] else (None, ref)
    return resolve(db, ref, noun), None


def _goal_add(db, key, now, args):
    result = _write(db, key, now, "goal_add", title=args["title"], description=args.get("description"),
                    priority=args.get("priority"), criteria=args.get("criteria", ()),
                    constraints=args.get("constraints", ()), participants=args.get("participants", ()),
                    tags=args.get("tags", ()), public=args.get("public", False), parent=args.get("parent"))
    return {**result, "goal": short_container_id(result.get("lineage") or result.get("did") or "")}


def _goal_list(db, key, now, args):
    shared = [{"goal": short_container_id(r["lineage"]), "title": r["title"], "status": r["status"],
               "priority": r["priority"], "tasks_open": r["tasks_open"], "tasks_total": r["tasks_total"],
               "mine": r["creator_did"] == key.did}
              for r in service.goal_list(db, status=args.get("status"))]
    where, params = ("AND status = ?", [args["status"]]) if args.get("status") else ("", [])
    local = rows_of(db.conn.execute(f"SELECT id, name AS title, status, priority FROM goals WHERE lineage IS NULL"
                                    f" {where} ORDER BY id DESC LIMIT ?", (*params, args.get("limit", 20))))
    return (shared + local)[: args.get("limit", 20)]


def _level(priority) -> float:
    """A goal's priority is a number in [0, 1]; the old words are 0.25, 0.5 and 0.75."""
    return {"low": 0.25, "normal": 0.5, "high": 0.75}.get(priority, priority)


def _goal_read(db, key, now, args):
    lineage, row_id = _named(db, args, "goal")
    if lineage:
        return _shared_goal(service.goal_show(db, goal=lineage, now_ms=now))
    goal = one(db.conn.execute("SELECT id, name, description, tags, status, priority, constraints, success_criteria,"
                                " created_at, updated_at FROM goals WHERE id = ?", (row_id,)), "goal", row_id)
    goal["tasks"] = rows_of(db.conn.execute("SELECT id, name, status, priority FROM tasks WHERE goal_id = ?"
                                            " ORDER BY id LIMIT 50", (row_id,)))
    return goal


def _who(did: str, names: dict) -> str:
    return f"{names[did]} ({did})" if names.get(did) else did


def _shared_goal(g: dict) -> dict:
    """``goal_show`` as the agent reads it: short ids, names beside DIDs, the tasks as a tree."""
    names = g.get("names") or {}

    def task(t: dict) -> dict:
        out = {"task": short_container_id(t["lineage"]), "title": t["title"], "status": t["status"],
               "assignees": [_who(d, names) for d in t["assigned_to"]]}
        for k in ("progress", "due"):
            if t.get(k) is not None:
                out[k] = t[k]
        if t.get("offers"):
            out["offered_to"] = [_who(c, names) for o in t["offers"] for c in o["candidates"]]
        if t.get("subtasks"):
            out["subtasks"] = [task(s) for s in t["subtasks"]]
        return out

    out = {"goal": short_container_id(g["lineage"]), "lineage": g["lineage"], "title": g["title"],
           "status": g["status"], "priority": g["priority"], "creator": _who(g["creator_did"], names),
           "participants": [_who(d, names) for d in g["participants"]],
           "tasks_total": g["tasks_total"], "tasks_completed": g["tasks_completed"],
           "tasks": [task(t) for t in g["tasks"]]}
    for k in ("description", "success_criteria", "constraints", "tags"):
        if g.get(k):
            out[k] = g[k]
    return out


def _goal_update(db, key, now, args):
    """A shared goal (one with a lineage) changes by a new signed version (gmp.service); a local row in place."""
    lineage, row_id = _named(db, args, "goal")
    given = {k: v for k, v in args.items() if k not in ("goal", "id")}
    if lineage:
        changes = {k: (_level(v) if k == "priority" else v) for k, v in given.items()}
        return _write(db, key, now, "goal_update", goal=lineage, **changes)
    if {"add_participants", "remove_participants"} & set(given):
        raise MeshnodeError("bad_args", "a local goal has no participants: goal_add makes a shared one")
    sets = {{"title": "name"}.get(k, k): (_level(v) if k == "priority" else v) for k, v in given.items()}
    if not sets:
        raise MeshnodeError("bad_args", "goal_update changes title, description, status or priority")
    with db.transaction() as conn:  # column names come from the schema above, never from the LLM
        if conn.execute(f"UPDATE goals SET {', '.join(f'{k} = ?' for k in sets)}, updated_at = ? WHERE id = ?",
                        (*sets.values(), sql_time(now), row_id)).rowcount == 0:
            raise MeshnodeError("not_found", f"no goal {row_id}")
    return {"id": row_id, **sets}


def _goal_cancel(db, key, now, args):
    lineage, _ = _named(db, {"goal": args["goal"]}, "goal")
    if lineage is None:
        raise MeshnodeError("bad_args", "a local goal is not cancelled: goal_update its status, or goal_delete it")
    return _write(db, key, now, "goal_cancel", goal=lineage, reason=args.get("reason"))


def _goal_delete(db, key, now, args):
    lineage, row_id = _named(db, args, "goal")
    if lineage:
        raise MeshnodeError("refused", f"goal {short_container_id(lineage)} is shared (signed): cancel it instead"
                                       " (goal_cancel)")
    with db.transaction() as conn:
        detached = conn.execute("UPDATE tasks SET goal_id = NULL WHERE goal_id = ?", (row_id,)).rowcount
        conn.execute("DELETE FROM goal_links WHERE parent_goal_id = ? OR child_goal_id = ?", (row_id,) * 2)
        conn.execute("DELETE FROM goals WHERE id = ?", (row_id,))
    return {"deleted": row_id, "tasks_detached": detached}


def _task_add(db, key, now, args):
    if "goal" not in args:
        shared_only = sorted({"parent", "deadline_ms", "depends", "grace_s", "rule", "check_every_s"} & set(args))
        if shared_only:
            raise MeshnodeError("bad_args", f"a local task has no {', '.join(shared_only)}; give a goal to share it")
        with db.transaction() as conn:
            cur = conn.execute("INSERT INTO tasks (name, description, tags, priority, created_at) VALUES (?, ?, ?, ?, ?)",
                               (args["title"], args.get("description"), json.dumps(args.get("tags", [])),
                                args.get("priority", 0), sql_time(now)))
        return {"id": cur.lastrowid}
    result = _write(db, key, now, "task_add", goal=args["goal"], title=args["title"],
                    description=args.get("description"), parent=args.get("parent"),
                    depends=args.get("depends", ()), deadline_ms=args.get("deadline_ms"),
                    check_every_s=args.get("check_every_s"), grace_s=args.get("grace_s"),
                    rule=args.get("rule", "creator"), tags=args.get("tags", ()), priority=args.get("priority"))
    return {**result, "task": short_container_id(result["lineage"])}


def _task_update(db, key, now, args):
    lineage, row_id = _named(db, args, "task")
    args = {k: v for k, v in args.items() if k not in ("task", "id")}
    if lineage is not None:
        if "pinned" in args and len(args) == 1:  # pinned is this node's own mark, never signed
            with db.transaction() as conn:
                conn.execute("UPDATE tasks SET pinned = ? WHERE lineage = ?", (int(args["pinned"]), lineage))
            return {"task": short_container_id(lineage), "pinned": args["pinned"]}
        if {"verdict", "evidence"} & set(args):
            raise MeshnodeError("bad_args", "a verdict settles a local fact-check task, not a shared one")
        result = _write(db, key, now, "task_update", task=lineage, status=args.get("status"),
                        next_check_ms=args.get("next_check_ms"), notes=args.get("notes"),
                        progress=args.get("progress"), title=args.get("title"), description=args.get("description"))
        if "pinned" in args:
            with db.transaction() as conn:
                conn.execute("UPDATE tasks SET pinned = ? WHERE lineage = ?", (int(args["pinned"]), result["lineage"]))
        return result
    if {"title", "description", "notes", "progress", "next_check_ms"} & set(args):
        raise MeshnodeError("bad_args", "a local task changes status, pinned or a fact-check verdict only")
    return _local_update(db, key, now, {**args, "id": row_id})


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


def _task_list(db, key, now, args):
    """Shared tasks with, for a finished one, its result (what its holder wrote, cut: task_read
    gives it whole); local ones by row number."""
    limit = args.get("limit", 20)
    shared = service.task_list(db, goal=args.get("goal"), status=args.get("status"),
                               me=key.did if args.get("mine") else None)[:limit]
    where, params = ("AND status = ?", [args["status"]]) if args.get("status") else ("", [])
    local = [] if args.get("goal") else rows_of(db.conn.execute(
        f"SELECT id, name, status, priority, pinned, repl_status FROM tasks WHERE lineage IS NULL {where}"
        " ORDER BY pinned DESC, priority DESC, id DESC LIMIT ?", (*params, limit)))
    return (local[:5] + [_listed(db, r, key.did) for r in shared] + local[5:])[:limit]


def _listed(db, r: dict, me: str) -> dict:
    out = _task_row(r, me)
    result = result_of(db, r)
    if result is not None:
        summary = " ".join((result["summary"] or "(no summary)").split())
        out["result"] = summary if len(summary) <= 300 else summary[:299] + "…"
    return out


def _task_read(db, key, now, args):
    lineage, row_id = _named(db, args, "task")
    if lineage:
        return _shared_task(service.task_show(db, task=lineage, now_ms=now))
    return one(db.conn.execute("SELECT id, goal_id, name, description, tags, status, priority, pinned, created_at,"
                                " updated_at, repl_mode, repl_status, repl_config FROM tasks WHERE id = ?",
                                (row_id,)), "task", row_id)


def _shared_task(t: dict) -> dict:
    """``task_show`` as the agent reads it: the result, who held it, the progress and answers."""
    names = t.get("names") or {}
    out = {"task": short_container_id(t["lineage"]), "lineage": t["lineage"], "title": t["title"],
           "status": t["status"], "goal": short_container_id(t["goal_lineage"] or ""),
           "creator": _who(t["creator_did"], names), "assignees": [_who(d, names) for d in t["assigned_to"]]}
    for k in ("description", "notes", "progress", "due", "reason", "delegation_rule", "tags"):
        if t.get(k) not in (None, "", []):
            out[k] = t[k]
    for k in ("deadline_ms", "next_check_ms", "overdue_at_ms"):
        if t.get(k):
            out[k[:-3]] = format_ms(t[k])
    if t.get("parent_task"):
        out["parent"] = short_container_id(t["parent_task"])
    if t.get("depends_on"):
        out["depends_on"] = [short_container_id(d) for d in t["depends_on"]]
    if t.get("result"):
        r = t["result"]
        out["result"] = {"status": r["status"], "summary": r["summary"], "by": _who(r["by"], names),
                         "at": format_ms(r["at_ms"])}
        out["review"] = t.get("review") or "not reviewed (task_review)"
    out["holders"] = [{"who": _who(h["assignee"], names), "since": format_ms(h["since_ms"]),
                       **({"until": format_ms(h["until_ms"]), "ended": h["ended"]} if h["until_ms"] else {})}
                      for h in t["holders"][-10:]]
    out["entries"] = [{"kind": e["kind"], "by": _who(e["signer"], names), "at": format_ms(e["timestamp_ms"]),
                       "id": short_container_id(e["did"]),
                       **({"progress": e["progress"]} if e.get("progress") is not None else {}),
                       **({"summary": e["summary"]} if e.get("summary") else {}),
                       **({"not_counted": e["reason"]} if not e["counted"] else {})}
                      for e in t["entries"][-20:] if e["kind"] != "receipt"]
    if t.get("forks"):
        out["forks"] = t["forks"]
    return out


def _task_due(db, key, now, args):
    return [_task_row(r, key.did) for r in service.task_due(db, now, include_all=bool(args.get("all")))][:50]


def _task_delete(db, key, now, args):
    lineage, row_id = _named(db, args, "task")
    if lineage:
        raise MeshnodeError("refused", f"task {short_container_id(lineage)} is shared (signed): its creator abandons"
                                       " it (task_update with status abandoned)")
    with db.transaction() as conn:
        row = conn.execute("SELECT repl_status FROM tasks WHERE id = ?", (row_id,)).fetchone()
        if row[0] == "running":
            raise MeshnodeError("busy", f"task {row_id} has a running auxiliary loop; set its status to paused"
                                        " (task_update) and delete it once the loop has stopped")
        conn.execute("UPDATE llm_recent_responses SET task_id = NULL WHERE task_id = ?", (row_id,))
        conn.execute("DELETE FROM tasks WHERE id = ?", (row_id,))
    return {"deleted": row_id}


def _task_delegate(db, key, now, args):
    """To named agents here; by interest, the cycle runs it on the mesh (``mesh_commands``)."""
    if "interest" in args:  # only reached without a cycle (the cycle defers it to the mesh)
        raise MeshnodeError("node_not_running", "finding candidates by interest needs the running node's mesh")
    if "to" not in args:
        raise MeshnodeError("bad_args", "task_delegate names its candidates: to (DIDs) or interest (a tag)")
    if "candidates" in args:
        raise MeshnodeError("bad_args", "candidates (how many) goes with interest; to names them")
    return _write(db, key, now, "task_offer", task=args["task"], candidates=args["to"],
                  expires_s=args.get("expires_s", 3600))


def _task_nominate(db, key, now, args):
    return _write(db, key, now, "task_nominate", task=args["task"], candidate=args["candidate"])


def _task_accept(db, key, now, args):
    return _write(db, key, now, "task_accept", task=args["task"], offer=args.get("offer"))


def _task_refuse(db, key, now, args):
    return _write(db, key, now, "task_refuse", task=args["task"], offer=args.get("offer"), reason=args.get("reason"))


def _task_progress(db, key, now, args):
    return _write(db, key, now, "task_progress", task=args["task"], progress=args["progress"],
                  summary=args.get("summary"), check_in=args.get("check_in", False))


def _task_done(db, key, now, args):
    return _write(db, key, now, "task_done", task=args["task"], summary=args.get("summary"),
                  failed=args.get("failed", False))


def _task_release(db, key, now, args):
    return _write(db, key, now, "task_release", task=args["task"])


def _task_review(db, key, now, args):
    return _write(db, key, now, "task_review", task=args["task"], verdict=args["verdict"], reason=args.get("reason"),
                  reassign=args.get("reassign", False))


HANDLERS = {
    "goal_add": _goal_add,
    "goal_list": _goal_list,
    "goal_read": _goal_read,
    "goal_update": _goal_update,
    "goal_cancel": _goal_cancel,
    "goal_delete": _goal_delete,
    "task_add": _task_add,
    "task_update": _task_update,
    "task_list": _task_list,
    "task_read": _task_read,
    "task_delete": _task_delete,
    "task_delegate": _task_delegate,
    "task_accept": _task_accept,
    "task_refuse": _task_refuse,
    "task_progress": _task_progress,
    "task_done": _task_done,
    "task_release": _task_release,
    "task_review": _task_review,
    "task_due": _task_due,
    "task_nominate": _task_nominate,
}
