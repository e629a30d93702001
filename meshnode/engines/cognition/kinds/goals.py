"""The types of the commands over goals and tasks: shared ones (GMP, signed) and the agent's local rows."""

from __future__ import annotations

from meshnode.engines.cognition.command_kind import LIMIT, LONG, TAGS, kind, named
from meshnode.base.container.schema import (WrongValue, boolean, described, did, integer, list_of, number, one_of,
                                       text)
from meshnode.records.gmp.reads import GOAL_STATUSES, TASK_STATUSES

_ID = {"id": (integer(0), True)}
_REF = text(128)  # a lineage DID, a version's DID or a short id


def _ref_or_id(v):
    """What the prompt shows for a goal or task: a shared one's short id (or any DID naming it),
    a local one's row number."""
    if type(v) is int:
        return integer(0)(v)
    return _REF(v)


described(_ref_or_id, {"anyOf": [{"type": "string", "maxLength": 128}, {"type": "integer", "minimum": 0}]})
_GOAL = {"goal": (_ref_or_id, False), "id": (integer(0), False)}  # one of them
_TASK = {"task": (_ref_or_id, False), "id": (integer(0), False)}
_DIDS = list_of(did, max_items=255)
_TEXTS = list_of(text(4096), max_items=64)


def _goal_priority(v):
    if type(v) is str and v in ("low", "normal", "high"):
        return None
    return number(0, 1)(v) and WrongValue("must be low, normal, high or a number in [0, 1]")


described(_goal_priority, {"anyOf": [{"type": "string", "enum": ["low", "normal", "high"]},
                                     {"type": "number", "minimum": 0, "maximum": 1}]})

TYPES = (
    kind("goal_add", "create a goal shared with its participants (signed by this node)",
         {"title": (named(256), True), "description": (text(LONG), False), "priority": (number(0, 1), False),
          "criteria": (_TEXTS, False), "constraints": (_TEXTS, False), "participants": (_DIDS, False),
          "parent": (_REF, False), "tags": (TAGS, False), "public": (boolean, False)}, closed=True),
    kind("goal_list", "goals with their open/total tasks", {**LIMIT, "status": (one_of(*GOAL_STATUSES), False)},
         mutating=False, closed=True),
    kind("goal_read", "a goal in full: description, criteria, participants, its tasks as a tree",
         {"goal": (_ref_or_id, True)}, mutating=False, closed=True),
    kind("goal_update", "change a goal (status completed closes it); participants added or removed",
         {**_GOAL, "title": (named(256), False), "description": (text(LONG), False),
          "status": (one_of(*GOAL_STATUSES), False), "priority": (_goal_priority, False),
          "add_participants": (_DIDS, False), "remove_participants": (_DIDS, False)}, closed=True),
    kind("goal_cancel", "cancel a goal you created; its open tasks are abandoned",
         {"goal": (_ref_or_id, True), "reason": (text(1024), False)}, closed=True),
    kind("goal_delete", "delete a local goal; its tasks stay, without a goal", _GOAL, closed=True),
    kind("task_add", "add a task under a goal (shared, signed); without goal, a local task of your own",
         {"title": (named(256), True), "goal": (_REF, False), "description": (text(LONG), False),
          "parent": (_REF, False), "depends": (list_of(_REF, max_items=64), False), "deadline_ms": (integer(0), False),
          "check_every_s": (integer(60, 365 * 86400), False), "grace_s": (integer(600, 2_592_000), False),
          "rule": (one_of("creator", "cogconsensus", "meshconsensus"), False), "priority": (number(0, 1), False),
          "tags": (TAGS, False)}, closed=True),
    kind("task_update", "change a task: a shared one by a new signed version (title, description: its creator);"
         " a local one (id) in place; a fact-check's verdict verified|rejected (+ evidence) settles its facts",
         {**_TASK, "status": (one_of(*TASK_STATUSES), False), "title": (named(256), False),
          "description": (text(LONG), False), "pinned": (boolean, False),
          "verdict": (one_of("verified", "rejected"), False), "evidence": (text(4096), False),
          "progress": (number(0, 1), False), "notes": (text(LONG), False), "next_check_ms": (integer(0), False)},
         closed=True),
    kind("task_list", "tasks: shared ones (with assignees) and your local ones, pinned first",
         {**LIMIT, "goal": (_REF, False), "mine": (boolean, False), "status": (one_of(*TASK_STATUSES), False)},
         mutating=False, closed=True),
    kind("task_read", "a task in full: result, holders, progress entries, offers", {"task": (_ref_or_id, True)},
         mutating=False, closed=True),
    kind("task_due", "shared tasks needing a check: overdue, holder dead, unassigned, offer open",
         {"all": (boolean, False)}, mutating=False, closed=True),
    kind("task_delete", "delete a local task (not while an auxiliary loop runs it)", _TASK, closed=True),
    kind("task_delegate", "offer a task you created: to agents, or to the best peers announcing an interest"
         " (candidates: how many); they accept or refuse",
         {"task": (_REF, True), "to": (list_of(did, max_items=16, non_empty=True), False),
          "interest": (text(64), False), "candidates": (integer(1, 16), False),
          "expires_s": (integer(60, 30 * 86400), False)}, closed=True),
    kind("task_nominate", "propose a peer for a contested task (cogconsensus): participants vote on it",
         {"task": (_REF, True), "candidate": (did, True)}, closed=True),
    kind("task_accept", "accept an offer of a task (the delegator then assigns it to you)",
         {"task": (_REF, True), "offer": (_REF, False)}, closed=True),
    kind("task_refuse", "refuse an offer of a task",
         {"task": (_REF, True), "offer": (_REF, False), "reason": (text(1024), False)}, closed=True),
    kind("task_progress", "report progress (0..1) on a task you hold; check_in also moves its next check on",
         {"task": (_REF, True), "progress": (number(0, 1), True), "summary": (text(4096), False),
          "check_in": (boolean, False)}, closed=True),
    kind("task_done", "complete a task you hold (failed: true if it could not be done)",
         {"task": (_REF, True), "summary": (text(LONG), False), "failed": (boolean, False)}, closed=True),
    kind("task_release", "give back a task you hold (it becomes unheld)", {"task": (_REF, True)}, closed=True),
    kind("task_review", "review the result of a task you created: accept, or reject with a reason (reopens it;"
         " reassign: taken from its holders, offer it again)",
         {"task": (_REF, True), "verdict": (one_of("accept", "reject"), True), "reason": (text(4096), False),
          "reassign": (boolean, False)}, closed=True),
)
