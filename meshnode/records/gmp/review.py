"""A delegator's review of a task's result (issue 37): accept it, or reject it with a reason and
reopen the task (its holders keep it) or take it back from them to give it to someone else.

The mark itself is this node's own (``task_reviews``, like ``tasks.pinned``: never signed or
synced); a rejection also publishes the task's next version (``reason: reopened``, status
``pending``, the reason in its ``notes``), which reaches the holders like any version, and a
reassignment offers it at once when candidates are given. Only the task's creator reviews: it is
the one that may move a finished task back (gmp.md section 3.2).
"""

from __future__ import annotations

from meshnode.records.gmp.publish import Push, publish_task_version, push_task_version
from meshnode.records.gmp.reads import GmpError, resolve, result_of, task_row
from meshnode.store.database import sql_errors

VERDICTS = ("accept", "reject")


def _mark(db, lineage: str, version: str, verdict: str, reason, actor, now_ms: int) -> None:
    with db.transaction() as conn:
        conn.execute("INSERT OR REPLACE INTO task_reviews (lineage, version, verdict, reason, actor, at_ms)"
                     " VALUES (?, ?, ?, ?, ?, ?)", (lineage, version, verdict, reason, actor, now_ms))


def task_review(db, key, now_ms, *, task, verdict, reason=None, reassign=False, asked_by=None) -> dict:
    """Review the result of ``task`` (its shown, finished version): ``accept`` marks it reviewed;
    ``reject`` (a reason required) also reopens it, and with ``reassign`` takes it from its holders
    (unheld: offer it again, ``task_assign``)."""
    lineage = resolve(db, task, "task")
    row = task_row(db, lineage)
    if verdict not in VERDICTS:
        raise GmpError("bad_args", "a review's verdict is accept or reject")
    if row["creator_did"] != key.did:
        raise GmpError("not_allowed", f"only the task's creator reviews the result of task {lineage}")
    result = result_of(db, row)
    if result is None:
        raise GmpError("not_finished", f"task {lineage} is {row['status']}: there is no result to review yet")
    actor = (asked_by or {}).get("kind") if isinstance(asked_by, dict) else None
    out = {"lineage": lineage, "reviewed": result["version"], "verdict": "accepted" if verdict == "accept"
           else "rejected"}
    if verdict == "accept":
        if reassign:
            raise GmpError("bad_args", "an accepted result is not reassigned")
        _mark(db, lineage, result["version"], "accepted", reason, actor, now_ms)
        return {**out, "push": []}
    if not isinstance(reason, str) or not reason.strip() or len(reason) > 4096:
        raise GmpError("bad_args", "rejecting a result needs a reason (1 to 4096 characters) for its holder")
    changes = {"status": "pending", "reason": "reopened", "notes": f"result rejected: {reason}"}
    if reassign:
        changes.update(assigned_to=None, next_check_at=None)
    c, row = publish_task_version(db, key, now_ms, row, changes, asked_by=asked_by)
    _mark(db, lineage, result["version"], "rejected", reason, actor, now_ms)
    push = Push(key.did)
    push_task_version(push, db, row, c)  # the version before's holders too: they learn why
    return {**out, "did": c.did, "status": "pending", "holders": [] if reassign else row["assigned_to"],
            "push": push.result()}
