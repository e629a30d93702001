"""The store side of GMP: every change a person, the agent or another party asks for on goals and
tasks (through ``meshnode.app.actions.gmp``), each ``(db, key, now_ms, **args) -> dict``; the
keyword ``asked_by`` (an actor's row) is recorded with every container it writes (store.provenance).

A mutating action checks what it can before signing (so a person reads "you are not an
assignee of this task", not an admission code), builds its container with ``gmp.build``,
stores it with ``db.put_container`` (admission there is the final word: a ``GmpRefused``
propagates as the typed error it is) and returns ``push``: which peers should get which
containers at once, in the order they need them to admit them. The node does the pushing;
sync repairs whatever a push missed. The reads live in ``gmp.reads``; the reactions of a
running node (receipts, assignment on acceptance, reassignment) in ``gmp.reactions``.
"""

from __future__ import annotations

import json

from meshnode.base.container import Container, format_ms
from meshnode.domain.gmp import build
from meshnode.records.gmp.reads import (GOAL_STATUSES, GOAL_TERMINAL, TASK_STATUSES, TASK_TERMINAL, GmpError, bundle,
                                goal_list, goal_row, goal_show, ordered, resolve, shown, task_due, task_list, task_row,
                                task_show, decided_basis, delegates)
from meshnode.records.gmp.delegate import (cog_choices, cog_picks, decided_mesh_basis, mesh_choices, mesh_requests,
                                          take_over)
from meshnode.records.gmp.store_admission import release_commits
from meshnode.records.gmp.publish import (DAY_S, Push, check_every_s, goal_audience, publish, publish_task_version,
                                          push_task_version, task_audience)
from meshnode.records.gmp.reactions import on_admitted as _on_admitted
from meshnode.records.gmp.reactions import reassign_stale as _reassign_stale
from meshnode.store import lineage as lineage_index
from meshnode.store.database import sql_errors

__all__ = ["GmpError", "goal_add", "goal_update", "goal_cancel", "goal_list", "goal_show", "task_add", "task_update",
           "task_offer", "task_accept", "task_refuse", "task_progress", "task_done", "task_release", "task_list",
           "task_show", "task_due", "task_nominate", "on_admitted", "reassign_stale", "Push",
           # the running node's own delegation (gmp/delegate.py) and MeshConsensus waiters (gmp/store_admission.py)
           "take_over", "cog_picks", "cog_choices", "mesh_choices", "mesh_requests", "release_commits"]

DEFAULT_GRACE_S = 3600
MIN_GRACE_S, MAX_GRACE_S = 600, 2_592_000
RULES = ("creator", "cogconsensus", "meshconsensus")
GOAL_MOVES = {"proposed": {"active", "cancelled"}, "active": {"paused", "completed", "cancelled", "failed"},
              "paused": {"active", "cancelled", "failed"}}


def _text(value, what: str, limit: int) -> str:
    if not isinstance(value, str) or not value.strip() or len(value) > limit:
        raise GmpError("bad_args", f"{what} is text of 1 to {limit} characters")
    return value


def _unit(value, what: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 <= value <= 1:
        code = "bad_progress" if what == "progress" else "bad_args"
        raise GmpError(code, f"{what} is a number from 0 to 1, not {value!r}")
    return float(value)


def _dids(values, what: str) -> list[str]:
    out = []
    for v in values or ():
        if not isinstance(v, str) or not v.startswith("did:"):
            raise GmpError("bad_args", f"{what}: {str(v)[:80]!r} is not a DID")
        if v not in out:
            out.append(v)
    return out


# --- goals ------------------------------------------------------------------------------------


def goal_add(db, key, now_ms, *, title, description=None, priority=None, criteria=(), constraints=(),
             participants=(), public=False, tags=(), parent=None, asked_by=None) -> dict:
    payload = {"title": _text(title, "the title", 256), "status": "active"}
    if description:
        payload["description"] = _text(description, "the description", 65536)
    if priority is not None:
        payload["priority"] = _unit(priority, "priority")
    if criteria:
        payload["success_criteria"] = [_text(x, "a success criterion", 4096) for x in criteria]
    if constraints:
        payload["constraints"] = [_text(x, "a constraint", 4096) for x in constraints]
    people = [d for d in _dids(participants, "participant") if d != key.did]
    if people:
        payload["participants"] = [key.did, *people]
    payload["audience"] = "public" if public else "participants"
    parent_lineage = resolve(db, parent, "goal") if parent else None
    c = publish(db, build.goal(key, payload, now_ms=now_ms, tags=tuple(tags or ()), parent_goal=parent_lineage), now_ms,
                asked_by)
    push = Push(key.did)
    push.add(people, [c.did])
    return {"did": c.did, "lineage": c.did, "status": "active", "push": push.result()}


def _goal_version(db, key, now_ms, lineage: str, changes: dict, asked_by=None) -> tuple[Container, dict]:
    row = goal_row(db, lineage)
    if row["creator_did"] != key.did:
        raise GmpError("not_allowed", f"only the goal's creator ({row['creator_did']}) changes goal {lineage}")
    head = shown(db, row)
    old = head.payload.get("status")
    new = changes.get("status", old)
    if new != old and new not in GOAL_MOVES.get(old, set()):
        raise GmpError("bad_transition", f"a goal goes from {old} to {', '.join(sorted(GOAL_MOVES.get(old, ()))) or 'nothing'}"
                                         f" (it is {old}); not to {new}")
    payload = {**head.payload, **changes}
    rel = head.related
    c = build.goal(key, payload, now_ms=now_ms, tags=tuple(head.head.get("tags") or ()),
                   parent_goal=(rel.get("in_reply_to") or [None])[0], depends_on=tuple(rel.get("depends_on") or ()),
                   see_also=tuple(rel.get("see_also") or ()), previous=(head.did,))
    return publish(db, c, now_ms, asked_by), row


def goal_update(db, key, now_ms, *, goal, status=None, title=None, description=None, priority=None,
                add_participants=(), remove_participants=(), asked_by=None) -> dict:
    lineage = resolve(db, goal, "goal")
    row = goal_row(db, lineage)
    changes: dict = {}
    if status is not None:
        if status not in GOAL_STATUSES:
            raise GmpError("bad_status", f"a goal's status is one of {', '.join(GOAL_STATUSES)}")
        changes["status"] = status
    if title is not None:
        changes["title"] = _text(title, "the title", 256)
    if description is not None:
        changes["description"] = _text(description, "the description", 65536)
    if priority is not None:
        changes["priority"] = _unit(priority, "priority")
    people = list(row["participants"])
    added, removed = _dids(add_participants, "participant"), _dids(remove_participants, "participant")
    if added or removed:
        people = [d for d in dict.fromkeys([*(people or [row["creator_did"]]), *added]) if d not in removed]
        changes["participants"] = people
    if not changes:
        raise GmpError("bad_args", "goal update changes the status, title, description, priority or participants")
    c, row = _goal_version(db, key, now_ms, lineage, changes, asked_by)
    push = Push(key.did)
    newcomers = [d for d in people if d not in row["participants"]]
    if newcomers:  # a new participant has seen no version of the goal: it gets them all, oldest first
        with sql_errors("collecting a goal's versions"):
            push.add(newcomers, ordered(db.conn, lineage_index.members(db.conn, lineage)))
    push.add(goal_audience(db, lineage, first=[*row["participants"], *people]), [c.did])  # removed ones too
    out = {"did": c.did, "lineage": lineage, "status": c.payload.get("status")}
    if c.payload.get("status") in GOAL_TERMINAL:
        out["abandoned"] = _abandon_tasks(db, key, now_ms, lineage, push, asked_by)
    out["push"] = push.result()
    return out


def goal_cancel(db, key, now_ms, *, goal, reason=None, asked_by=None) -> dict:
    lineage = resolve(db, goal, "goal")
    c, row = _goal_version(db, key, now_ms, lineage, {"status": "cancelled"}, asked_by)
    push = Push(key.did)
    push.add(goal_audience(db, lineage), [c.did])
    out = {"did": c.did, "lineage": lineage, "status": "cancelled"}
    if reason:
        note = publish(db, build.entry(key, "reflection", {}, now_ms=now_ms, about=lineage,
                                      summary=_text(reason, "the reason", 4096)), now_ms, asked_by)
        push.add(goal_audience(db, lineage), [note.did])
        out["reflection"] = note.did
    out["abandoned"] = _abandon_tasks(db, key, now_ms, lineage, push, asked_by)
    out["push"] = push.result()
    return out


def _abandon_tasks(db, key, now_ms, goal_lineage: str, push: Push, asked_by=None) -> list[str]:
    """A closed goal's open tasks that this node created are abandoned (gmp.md section 3.1)."""
    with sql_errors("reading a goal's tasks"):
        open_tasks = [r[0] for r in db.conn.execute(
            "SELECT lineage FROM tasks WHERE goal_lineage = ? AND creator_did = ? AND status NOT IN"
            " ('completed', 'failed', 'abandoned')", (goal_lineage, key.did))]
    for lin in open_tasks:
        c, row = publish_task_version(db, key, now_ms, task_row(db, lin), {"status": "abandoned", "reason": "abandoned"},
                                      asked_by=asked_by)
        push_task_version(push, db, row, c)
    return open_tasks


# --- tasks: creating and changing ------------------------------------------------------------------


def task_add(db, key, now_ms, *, goal, title, description=None, parent=None, depends=(), deadline_ms=None,
             check_every_s=None, grace_s=None, rule="creator", tags=(), priority=None, asked_by=None) -> dict:
    goal_lineage = resolve(db, goal, "goal")
    g = goal_row(db, goal_lineage)
    if g["status"] in GOAL_TERMINAL:
        raise GmpError("goal_closed", f"goal {goal_lineage} is {g['status']}: it takes no new tasks")
    parent_lineage = resolve(db, parent, "task") if parent else None
    see_also: list[str] = []
    if g["creator_did"] != key.did:  # decomposition is open to those who work on the goal (gmp.md 4.2 item 6)
        if parent_lineage and key.did in task_row(db, parent_lineage)["assigned_to"]:
            see_also.append(task_row(db, parent_lineage)["container_did"])
        elif key.did in g["participants"]:
            see_also.append(g["container_did"])
        else:
            raise GmpError("not_allowed", f"only the goal's creator, its participants and the holders of a parent"
                                          f" task add tasks to goal {goal_lineage}")
    if parent_lineage and task_row(db, parent_lineage)["goal_lineage"] != goal_lineage:
        raise GmpError("bad_args", f"the parent task {parent_lineage} belongs to another goal")
    if rule not in RULES:
        raise GmpError("bad_args", f"the delegation rule is one of {', '.join(RULES)}")
    payload: dict = {"title": _text(title, "the title", 256), "status": "pending", "reason": "created"}
    if description:
        payload["description"] = _text(description, "the description", 65536)
    if priority is not None:
        payload["priority"] = _unit(priority, "priority")
    if deadline_ms is not None:
        if type(deadline_ms) is not int or deadline_ms <= 0:
            raise GmpError("bad_args", "the deadline is a time (milliseconds since 1970)")
        payload["deadline"] = format_ms(deadline_ms)
    if grace_s is not None:
        if type(grace_s) is not int or not MIN_GRACE_S <= grace_s <= MAX_GRACE_S:
            raise GmpError("bad_args", f"the grace is {MIN_GRACE_S} s to {MAX_GRACE_S} s (30 days)")
        payload["check_grace_s"] = grace_s
    if check_every_s is not None:
        if type(check_every_s) is not int or not 60 <= check_every_s <= 365 * DAY_S:
            raise GmpError("bad_args", "the check interval is 60 s to 365 days")
        payload["metrics"] = {"check_every_s": check_every_s}
    if rule != "creator":
        payload["delegation_rule"] = rule
    depends_on = tuple(resolve(db, d, "task") for d in depends or ())
    c = publish(db, build.task(key, payload, now_ms=now_ms, goal=goal_lineage, parent_task=parent_lineage,
                              depends_on=depends_on, see_also=tuple(see_also), tags=tuple(tags or ())), now_ms,
                asked_by)
    push = Push(key.did)
    push.add(goal_audience(db, goal_lineage), [c.did])  # those working on the goal see it at once
    return {"did": c.did, "lineage": c.did, "goal": goal_lineage, "status": "pending", "push": push.result()}


_CREATOR_ONLY = ("title", "description", "priority", "deadline", "delegation_rule", "check_grace_s")
_REASONS = {"in_progress": "started", "paused": "paused", "completed": "completed", "failed": "failed",
            "abandoned": "abandoned"}


def _allowed(row: dict, me: str, old: str, new: str) -> str | None:
    """Why ``me`` may not move the task from ``old`` to ``new`` (gmp.md section 3.2), or None."""
    creator, holder = row["creator_did"] == me, me in row["assigned_to"]
    if not creator and not holder:
        return "you are neither its creator nor one of its assignees"
    if old == "abandoned":
        return "it is abandoned (final)"
    if new == old:
        return None
    moves = set()
    if holder:
        moves |= {("pending", "in_progress"), ("pending", "paused"), ("in_progress", "paused"),
                  ("paused", "in_progress"), ("in_progress", "completed"), ("in_progress", "failed")}
    if creator:
        moves |= {("pending", "paused"), ("in_progress", "paused"), ("in_progress", "pending"), ("paused", "pending"),
                  ("failed", "pending"), ("completed", "pending")}
        moves |= {(s, "abandoned") for s in TASK_STATUSES if s not in TASK_TERMINAL}
    if (old, new) in moves:
        return None
    if new == "completed" and not holder:
        return "a completion counts only from an assignee (its creator abandons a task nobody finished)"
    return f"{'its creator' if creator else 'an assignee'} cannot move it from {old} to {new}"


def task_update(db, key, now_ms, *, task, status=None, next_check_ms=None, notes=None, title=None,
                description=None, progress=None, reason=None, asked_by=None) -> dict:
    lineage = resolve(db, task, "task")
    row = task_row(db, lineage)
    me, old = key.did, row["status"]
    changes: dict = {}
    if status is not None and status not in TASK_STATUSES:
        raise GmpError("bad_status", f"a task's status is one of {', '.join(TASK_STATUSES)}")
    new = status or old
    if new == "pending" and old != "pending" and me in row["assigned_to"] and row["creator_did"] != me:
        raise GmpError("not_allowed", "to give the task back, release it (`meshnode task release`)")
    why = _allowed(row, me, old, new)
    if why:
        raise GmpError("not_allowed", f"task {lineage}: {why}")
    if (title is not None or description is not None) and row["creator_did"] != me:
        raise GmpError("not_allowed", f"only the task's creator changes its title or description")
    if status is not None:
        changes["status"] = status
    if title is not None:
        changes["title"] = _text(title, "the title", 256)
    if description is not None:
        changes["description"] = _text(description, "the description", 65536)
    if notes is not None:
        changes["notes"] = _text(notes, "the notes", 65536)
    if progress is not None:
        changes["progress"] = _unit(progress, "progress")
    if next_check_ms is not None:
        if type(next_check_ms) is not int or next_check_ms <= 0:
            raise GmpError("bad_args", "the next check is a time (milliseconds since 1970)")
        changes["next_check_at"] = format_ms(next_check_ms)
    if not changes:
        raise GmpError("bad_args", "task update changes the status, next check, notes, title, description or progress")
    if new == "completed":
        changes.setdefault("progress", 1.0)
    if old in ("completed", "failed") and new == "pending":
        changes["reason"] = "reopened"
    elif reason:
        changes["reason"] = reason
    elif new != old:
        changes["reason"] = _REASONS.get(new, "edited")
    else:
        changes["reason"] = "check_in" if me in row["assigned_to"] and "next_check_at" in changes else "edited"
    c, row = publish_task_version(db, key, now_ms, row, changes, asked_by=asked_by)
    push = Push(me)
    push_task_version(push, db, row, c)
    return {"did": c.did, "lineage": lineage, "status": c.payload["status"], "push": push.result()}


def task_release(db, key, now_ms, *, task, reason="released", asked_by=None) -> dict:
    lineage = resolve(db, task, "task")
    row = task_row(db, lineage)
    if key.did not in row["assigned_to"]:
        raise GmpError("not_allowed", f"you do not hold task {lineage}: there is nothing to release")
    if row["status"] in TASK_TERMINAL:
        raise GmpError("not_allowed", f"task {lineage} is {row['status']}: it is over")
    left = [d for d in row["assigned_to"] if d != key.did]
    changes = {"assigned_to": left, "reason": reason if reason in ("released",) else "released"}
    if not left:
        changes.update(status="pending", next_check_at=None)
    c, row = publish_task_version(db, key, now_ms, row, changes, asked_by=asked_by)
    push = Push(key.did)
    push_task_version(push, db, row, c)
    return {"did": c.did, "lineage": lineage, "status": c.payload["status"], "push": push.result()}


# --- delegation --------------------------------------------------------------------------------------


def task_offer(db, key, now_ms, *, task, candidates=(), selection="direct", expires_s=3600, basis=None,
               asked_by=None) -> dict:
    lineage = resolve(db, task, "task")
    row = task_row(db, lineage)
    if not delegates(db, row, key.did):
        raise GmpError("not_allowed", f"only the task's creator (or a steward that took it over) offers task {lineage}")
    if row["status"] in TASK_TERMINAL:
        raise GmpError("not_allowed", f"task {lineage} is {row['status']}: there is nothing to offer")
    rule = row.get("delegation_rule") or "creator"
    contested = rule in ("cogconsensus", "meshconsensus")
    if contested != (basis is not None):
        how = ("--basis RESULT, an approved CogConsensus result on a nomination (task nominate, consensus vote,"
               " consensus result)" if rule == "cogconsensus" else "the binding MeshConsensus decision on a"
               " nomination as basis ({committee, height}; the node requests and offers it by itself)")
        raise GmpError("needs_decision" if basis is None else "bad_args",
                       f"task {lineage} is contested: offer it with {how}" if basis is None else
                       f"task {lineage} is not contested (delegation_rule {rule}): an offer cites no basis")
    extra: tuple[str, ...] = ()
    if rule == "cogconsensus":
        candidates, basis, extra = decided_basis(db, lineage, basis)
        selection = "cogconsensus"
    elif rule == "meshconsensus":
        candidates, basis, extra = decided_mesh_basis(db, lineage, row["container_did"], basis)
        selection = "meshconsensus"
    people = _dids(candidates, "candidate")
    if not 1 <= len(people) <= 16:
        raise GmpError("bad_args", "an offer names 1 to 16 candidates")
    if selection not in ("direct", "interest", "cogconsensus", "meshconsensus"):
        raise GmpError("bad_args", "selection is direct or interest")
    if type(expires_s) is not int or not 60 <= expires_s <= 30 * DAY_S:
        raise GmpError("bad_args", "an offer expires after 60 s to 30 days")
    if people == [key.did]:  # the creator takes its own task: no offer needed
        if key.did in row["assigned_to"]:
            raise GmpError("bad_args", f"you hold task {lineage} already")
        c, row = publish_task_version(db, key, now_ms, row, {"assigned_to": [*row["assigned_to"], key.did],
                                                      "reason": "assigned"}, asked_by=asked_by)
        push = Push(key.did)
        push_task_version(push, db, row, c)
        return {"did": c.did, "lineage": lineage, "assigned": [key.did], "push": push.result()}
    people = [d for d in people if d != key.did]
    holding = [d for d in people if d in row["assigned_to"]]
    if holding:
        raise GmpError("bad_args", f"{', '.join(holding)} already hold(s) task {lineage}")
    expires = now_ms + expires_s * 1000
    fields = {"task_version": row["container_did"], "candidates": people, "selection": selection,
              "expires_at": format_ms(expires)}
    if basis is not None:
        fields["basis"] = basis
    offer = publish(db, build.entry(key, "delegation", fields, now_ms=now_ms, about=lineage, recipients=tuple(people)),
                   now_ms, asked_by)
    push = Push(key.did)
    for peer in people:
        push.add([peer], bundle(db, lineage, extra=(*extra, offer.did)))
    push.add(goal_audience(db, row["goal_lineage"]), [offer.did])  # who is offered it: seen by all at once
    return {"did": offer.did, "lineage": lineage, "offer": offer.did, "candidates": people, "expires_ms": expires,
            "push": push.result()}


def task_nominate(db, key, now_ms, *, task, candidate, asked_by=None) -> dict:
    """Propose ``candidate`` for a contested task: under cogconsensus a nomination the participants
    vote on (``consensus vote``), an approved result on it the basis of the offer; under
    meshconsensus one the committee may bind (the validators' nodes request it by themselves)."""
    lineage = resolve(db, task, "task")
    row = task_row(db, lineage)
    rule = row.get("delegation_rule") or "creator"
    if rule not in ("cogconsensus", "meshconsensus"):
        raise GmpError("bad_args", f"task {lineage} is not contested: its creator offers it")
    if row["status"] in TASK_TERMINAL:
        raise GmpError("not_allowed", f"task {lineage} is {row['status']}: there is nothing to offer")
    person = _dids([candidate], "candidate")[0]
    goal = goal_row(db, row["goal_lineage"])
    cite: tuple[str, ...] = ()
    if key.did != goal["creator_did"]:
        if key.did not in goal["participants"]:
            raise GmpError("not_allowed", f"only the goal's participants nominate for task {lineage}")
        cite = (goal["container_did"],)  # the goal version listing the signer as participant
    e = publish(db, build.entry(key, "delegation", {"task_version": row["container_did"], "candidates": [person],
                                                   "selection": rule, "nomination": True,
                                                   "expires_at": format_ms(now_ms + 30 * DAY_S * 1000)},
                               now_ms=now_ms, about=lineage, see_also=cite), now_ms, asked_by)
    push = Push(key.did)
    push.add(goal_audience(db, row["goal_lineage"]), [*cite, e.did])
    return {"did": e.did, "lineage": lineage, "nomination": e.did, "candidate": person, "push": push.result()}


def _offer_for(db, key, now_ms, lineage: str, offer) -> Container:
    """The offer a candidate answers: the one named, else the newest open one naming it."""
    if offer:
        from meshnode.store import short_ids

        try:
            did = short_ids.resolve_container(db, offer, "offer")
        except short_ids.ShortIdError as exc:
            raise GmpError("unknown_offer", exc.reason) from None
        with sql_errors("reading an offer"):
            row = db.conn.execute("SELECT did, candidates, expires_ms FROM gmp_entries WHERE did = ? AND lineage = ?"
                                  " AND kind = 'delegation'", (did, lineage)).fetchone()
        if row is None:
            raise GmpError("unknown_offer", f"{offer} is no offer of task {lineage} held here")
    else:
        with sql_errors("finding an offer"):
            row = db.conn.execute(
                "SELECT e.did, e.candidates, e.expires_ms FROM gmp_entries e, json_each(e.candidates) c"
                " WHERE e.lineage = ? AND e.kind = 'delegation' AND c.value = ? AND e.expires_ms > ?"
                " ORDER BY e.timestamp_ms DESC, e.did DESC LIMIT 1", (lineage, key.did, now_ms)).fetchone()
        if row is None:
            raise GmpError("no_offer", f"no open offer of task {lineage} names you (an offer arrives by push or sync)")
    did, candidates, expires = row
    if key.did not in json.loads(candidates or "[]"):
        raise GmpError("not_allowed", f"offer {did} does not name you: only its candidates answer it")
    if expires is not None and expires < now_ms:
        raise GmpError("offer_expired", f"offer {did} expired at {format_ms(expires)}")
    return shown_entry(db, did)


def shown_entry(db, did: str) -> Container:
    from meshnode.records.gmp.reads import held

    c = held(db, did)
    if c is None:
        raise GmpError("unknown_offer", f"offer {did} is not held here")
    return c


def _answer(db, key, now_ms, task, offer, kind: str, fields: dict, summary=None, asked_by=None) -> dict:
    lineage = resolve(db, task, "task")
    o = _offer_for(db, key, now_ms, lineage, offer)
    e = publish(db, build.entry(key, kind, {"offer": o.did, **fields}, now_ms=now_ms, about=lineage,
                               summary=summary, recipients=(o.sender_did,)), now_ms, asked_by)
    push = Push(key.did)
    push.add(goal_audience(db, task_row(db, lineage)["goal_lineage"], first=[o.sender_did]), [e.did])
    return {"did": e.did, "lineage": lineage, "offer": o.did, "push": push.result()}


def task_accept(db, key, now_ms, *, task, offer=None, asked_by=None) -> dict:
    if key.did in task_row(db, resolve(db, task, "task"))["assigned_to"]:
        raise GmpError("bad_args", "you hold this task already")
    return _answer(db, key, now_ms, task, offer, "acceptance", {}, asked_by=asked_by)


def task_refuse(db, key, now_ms, *, task, offer=None, reason=None, asked_by=None) -> dict:
    fields = {"reason": _text(reason, "the reason", 1024)} if reason else {}
    return _answer(db, key, now_ms, task, offer, "refusal", fields, asked_by=asked_by)


# --- work -----------------------------------------------------------------------------------------


def task_progress(db, key, now_ms, *, task, progress, summary=None, check_in=False, asked_by=None) -> dict:
    lineage = resolve(db, task, "task")
    value = _unit(progress, "progress")
    row = task_row(db, lineage)
    if key.did not in row["assigned_to"]:
        raise GmpError("not_allowed", f"you are not an assignee of task {lineage}: your progress would not count")
    if row["status"] in TASK_TERMINAL:
        raise GmpError("not_allowed", f"task {lineage} is {row['status']}: it is over")
    e = publish(db, build.entry(key, "progress", {"progress": value, "task_version": row["container_did"]},
                               now_ms=now_ms, about=lineage, summary=_text(summary, "the summary", 4096) if summary
                               else None), now_ms, asked_by)
    push = Push(key.did)
    push.add(task_audience(db, row), [e.did])  # every step, to all who work on the goal (gmp.md 7)
    out = {"did": e.did, "lineage": lineage, "progress": value}
    if check_in:
        changes = {"progress": value, "reason": "check_in",
                   "next_check_at": format_ms(now_ms + check_every_s(shown(db, row).payload) * 1000)}
        if row["status"] == "pending":
            changes.update(status="in_progress", reason="started")
        c, row = publish_task_version(db, key, now_ms, row, changes, asked_by=asked_by)
        push_task_version(push, db, row, c)
        out["version"] = c.did
    out["push"] = push.result()
    return out


def task_done(db, key, now_ms, *, task, summary=None, failed=False, asked_by=None) -> dict:
    lineage = resolve(db, task, "task")
    row = task_row(db, lineage)
    if key.did not in row["assigned_to"]:
        raise GmpError("not_allowed", f"you are not an assignee of task {lineage}: a completion counts only from one")
    end = "failed" if failed else "completed"
    push = Push(key.did)
    versions = []
    if row["status"] in ("pending", "paused"):  # done without saying it started: the start is one version
        c, row = publish_task_version(db, key, now_ms, row, {"status": "in_progress", "reason": "started"},
                                      asked_by=asked_by)
        versions.append(c.did)
        row = task_row(db, lineage)
    if row["status"] != "in_progress":
        raise GmpError("not_allowed", f"task {lineage} is {row['status']}: only a task in progress is completed")
    changes = {"status": end, "reason": end}
    if not failed:
        changes["progress"] = 1.0
    if summary:
        changes["notes"] = _text(summary, "the summary", 65536)
    c, row = publish_task_version(db, key, now_ms + (1 if versions else 0), row, changes, asked_by=asked_by)
    versions.append(c.did)
    push.add(task_audience(db, row), versions)
    return {"did": c.did, "lineage": lineage, "status": end, "versions": versions, "push": push.result()}


# --- the running node's reactions (gmp/reactions.py: receipts, assignment on acceptance, reassignment) ---


def on_admitted(db, key, now_ms, dids: list[str]) -> dict:
    """Reactions to newly admitted GMP containers; {"published": [dids], "push": [...]}."""
    return _on_admitted(db, key, now_ms, dids)


def reassign_stale(db, key, now_ms, *, liveness: dict, dead_grace_ms: int) -> dict:
    """Versions removing dead or overdue holders of the tasks this node created;
    {"reassigned": [{"task", "removed", "why"}], "push": [...]}."""
    return _reassign_stale(db, key, now_ms, liveness=liveness, dead_grace_ms=dead_grace_ms)
