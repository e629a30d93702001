"""The types of the commands over goals and tasks: shared ones (GMP, signed) and the agent's local rows."""

from __future__ import annotations

from meshnode.engines.cognition.command_kind import LIMIT, LONG, TAGS, kind, named
from meshnode.base.container.schema import (WrongValue, boolean, described, did, integer, list_of, number, one_of,
                                       text)
from meshnode.records.gmp.reads import GOAL_STATUSES, TASK_STATUSES

_ID = {"id": (integer(0), True)}
_REF = text(128)  # a lineage DID, a version's DID or a short id


def _goal_priority(v):
    if type(v) is str and v in ("low", "normal", "high"):
        return None
    return number(0, 1)(v) and WrongValue("must be low, normal, high or a number in [0, 1]")


described(_goal_priority, {"anyOf": [{"type": "string", "enum": ["low", "normal", "high"]},
                                     {"type": "number", "minimum": 0, "maximum": 1}]})

TYPES = (
    kind("goal_add", "create a goal shared with its participants (signed by this node)",
         {"title": (named(256), True), "description": (text(LONG), False), "priority": (number(0, 1), False),
          "participants": (list_of(did, max_items=255), False), "tags": (TAGS, False),
          "public": (boolean, False)}, closed=True),
    kind("goal_list", "goals with their open/total tasks", {**LIMIT, "status": (one_of(*GOAL_STATUSES), False)},
         mutating=False, closed=True),
    kind("goal_read", "a goal in full, with its tasks", _ID, mutating=False, closed=True),
    kind("goal_update", "change a goal's title, description, status or priority",
         {"id": (integer(0), True), "title": (named(256), False), "description": (text(LONG), False),
          "status": (one_of("proposed", "active", "paused", "completed", "cancelled", "failed"), False),
          "priority": (_goal_priority, False)}, closed=True),
    kind("goal_delete", "delete a goal; its tasks stay, without a goal", _ID, closed=True),
    kind("task_add", "add a task under a goal (shared, signed); without goal, a local task of your own",
         {"title": (named(256), True), "goal": (_REF, False), "description": (text(LONG), False),
          "parent": (_REF, False), "deadline_ms": (integer(0), False),
          "check_every_s": (integer(60, 365 * 86400), False), "priority": (number(0, 1), False),
          "tags": (TAGS, False)}, closed=True),
    kind("task_update", "change a task: a shared one (task: id) by a new signed version; a local one (id: n)"
         " in place; on a fact-check task, verdict verified|rejected (+ evidence) settles its facts",
         {"id": (integer(0), False), "task": (_REF, False), "status": (one_of(*TASK_STATUSES), False),
          "pinned": (boolean, False), "verdict": (one_of("verified", "rejected"), False),
          "evidence": (text(4096), False), "progress": (number(0, 1), False), "notes": (text(LONG), False),
          "next_check_ms": (integer(0), False)}, closed=True),
    kind("task_list", "tasks: shared ones (with assignees) and your local ones, pinned first",
         {**LIMIT, "goal": (_REF, False), "mine": (boolean, False), "status": (one_of(*TASK_STATUSES), False)},
         mutating=False, closed=True),
    kind("task_read", "a task in full", _ID, mutating=False, closed=True),
    kind("task_delete", "delete a task (not while an auxiliary loop runs it)", _ID, closed=True),
    kind("task_delegate", "offer a shared task you created to agents (they accept or refuse)",
         {"task": (_REF, True), "to": (list_of(did, max_items=16, non_empty=True), True),
          "expires_s": (integer(60, 30 * 86400), False)}, closed=True),
    kind("task_accept", "accept an offer of a task (the delegator then assigns it to you)",
         {"task": (_REF, True), "offer": (_REF, False)}, closed=True),
    kind("task_refuse", "refuse an offer of a task",
         {"task": (_REF, True), "offer": (_REF, False), "reason": (text(1024), False)}, closed=True),
    kind("task_progress", "report progress (0..1) on a task you hold; check_in also moves its next check on",
         {"task": (_REF, True), "progress": (number(0, 1), True), "summary": (text(4096), False),
          "check_in": (boolean, False)}, closed=True),
    kind("task_done", "complete a task you hold (failed: true if it could not be done)",
         {"task": (_REF, True), "summary": (text(LONG), False), "failed": (boolean, False)}, closed=True),
)
