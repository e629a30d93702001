"""The GMP payload classes at class_version 1.1: goal, task, workflow_entry (protocols/gmp.md section 2).

Field tables as in schema.py, plus the cross-field rules a field-by-field check cannot
express (a held task needs ``next_check_at``, no duplicate DIDs, the closed list of entry
kinds and each kind's own fields). Rules on ``related`` are not here: the class check sees
only the payload, so they belong to GMP admission (meshnode.domain.gmp.rules, ``gmp_bad_related``).
The 1.0 registrations stay in schema.py, unchanged; its registry takes :data:`SCHEMAS` from here
(this module is a table, it registers nothing itself).
"""

from __future__ import annotations

from typing import Any, Callable

from meshnode.base.container.fields import (
    Schema,
    WrongValue,
    anything,
    boolean,
    did,
    integer,
    list_of,
    mapping,
    number,
    one_of,
    payload_schema,
    text,
    time_text,
)

VERSION = "1.1"
_LONG = 64 * 1024

GOAL_STATUSES = ("proposed", "active", "paused", "completed", "cancelled", "failed")
TASK_STATUSES = ("pending", "in_progress", "paused", "completed", "failed", "abandoned")
TASK_TERMINAL = frozenset({"completed", "failed", "abandoned"})
DELEGATION_RULES = ("creator", "cogconsensus", "meshconsensus")
TASK_REASONS = ("created", "edited", "assigned", "started", "check_in", "paused", "released", "reassigned_dead",
                "reassigned_overdue", "completed", "failed", "abandoned", "reopened", "merged")
SELECTIONS = ("direct", "interest", "cogconsensus", "meshconsensus")
ENTRY_KINDS = ("delegation", "acceptance", "refusal", "receipt", "progress", "execution_log", "reflection",
               "blocker", "rollback", "ethical_result")
GOAL_ENTRY_KINDS = frozenset({"reflection", "blocker", "execution_log", "ethical_result"})


def _unique(check: Callable[[Any], str | None]) -> Callable[[Any], str | None]:
    """``check`` (a list check) plus: no item twice."""
    def unique(v: Any) -> str | None:
        err = check(v)
        if err:
            return err
        seen: set = set()
        for x in v:
            if x in seen:
                return WrongValue(f"names {str(x)[:80]} twice")
            seen.add(x)
        return None

    unique.json = dict(getattr(check, "json", {}), uniqueItems=True)  # type: ignore[attr-defined]
    return unique


def _basis(v: Any) -> str | None:
    """A consensus_result DID (CogConsensus) or {committee, height} (MeshConsensus)."""
    if type(v) is str:
        return did(v)
    if type(v) is not dict:
        return "must be a DID or a {committee, height} map"
    for name, check in (("committee", text(128)), ("height", integer(0))):
        if name not in v:
            return f"needs {name}"
        err = check(v[name])
        if err:
            return type(err)(f"{name} {err}")
    return None


_texts = list_of(text(4096), max_items=64)

GOAL = payload_schema("goal", {
    "title": (text(), True),
    "status": (one_of(*GOAL_STATUSES), True),
    "description": (text(_LONG), False),
    "priority": (number(0, 1), False),
    "success_criteria": (_texts, False),
    "constraints": (_texts, False),
    "expected_outcome": (text(4096), False),
    "ethical_context": (text(4096), False),
    "participants": (_unique(list_of(did, max_items=256)), False),
    "audience": (one_of("participants", "public"), False),
    "creator": (did, False),
})


def _task_whole(p: dict) -> str | None:
    if p.get("assigned_to") and p["status"] not in TASK_TERMINAL and "next_check_at" not in p:
        return WrongValue("needs next_check_at: a task held by someone and not finished says when it is looked at next")
    return None


TASK = payload_schema("task", {
    "title": (text(), True),
    "status": (one_of(*TASK_STATUSES), True),
    "description": (text(_LONG), False),
    "assigned_to": (_unique(list_of(did, max_items=64)), False),
    "progress": (number(0, 1), False),
    "priority": (number(0, 1), False),
    "deadline": (time_text, False),
    "next_check_at": (time_text, False),
    "check_grace_s": (integer(600, 2_592_000), False),
    "delegation_rule": (one_of(*DELEGATION_RULES), False),
    "reason": (one_of(*TASK_REASONS), False),
    "metrics": (mapping, False),
    "notes": (text(_LONG), False),
}, _task_whole)

# each entry kind's own fields: name -> (check, required)
KIND_FIELDS: dict[str, dict[str, tuple[Callable[[Any], str | None], bool]]] = {
    "delegation": {"task_version": (did, True),
                   "candidates": (_unique(list_of(did, max_items=16, non_empty=True)), True),
                   "selection": (one_of(*SELECTIONS), True), "expires_at": (time_text, True),
                   "basis": (_basis, False), "nomination": (boolean, False)},
    "acceptance": {"offer": (did, True)},
    "refusal": {"offer": (did, True), "reason": (text(1024), False)},
    "receipt": {"received": (did, True), "received_at": (time_text, True)},
    "progress": {"progress": (number(0, 1), True), "task_version": (did, True)},
    "execution_log": {"task_version": (did, False)},
    "reflection": {},
    "blocker": {"blocking": (list_of(did, max_items=64), False), "resolved": (boolean, False),
                "task_version": (did, False)},
    "rollback": {},
    "ethical_result": {},
}


def _entry_kind(v: Any) -> str | None:
    if type(v) is not str:
        return "must be text"
    if v in KIND_FIELDS or (v.startswith("x-") and 2 < len(v) <= 64):
        return None
    return WrongValue(f"must be one of {', '.join(ENTRY_KINDS)}, or x-<name> (at most 64 characters)")


def _entry_whole(p: dict) -> str | None:
    kind = p["entry_type"]
    for name, (check, required) in KIND_FIELDS.get(kind, {}).items():
        if name not in p:
            if required:
                return f"{name} is required for a {kind} entry"
            continue
        err = check(p[name])
        if err:
            return type(err)(f"{name} {err}")
    if kind == "delegation" and p.get("nomination") is True and len(p["candidates"]) != 1:
        return WrongValue("a nomination names exactly one candidate")
    return None


WORKFLOW_ENTRY = payload_schema("workflow_entry", {
    "entry_type": (_entry_kind, True),
    "summary": (text(4096), False),
    "details": (anything, False),
}, _entry_whole)

CLASSES = ("goal", "task", "workflow_entry")
SCHEMAS: dict[tuple[str, str], Schema] = {("goal", VERSION): GOAL, ("task", VERSION): TASK,
                                          ("workflow_entry", VERSION): WORKFLOW_ENTRY}

# Step 8 (admission against what a node holds, with a pending set) and the goal, task and entry views
# are GMP's own rules: the store runs them through hooks this installer registers (meshnode.store.hooks),
# and a store without them stores no container (container.schema.hooked_classes says which classes).
STORE_HOOKS = "meshnode.records.gmp.store_hooks.install"
