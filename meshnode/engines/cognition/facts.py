"""Unverified facts and their checks (seed 000, "UnverifiedFacts"): pending -> verified | rejected.

Each tick keeps the facts an answer flagged (``unverified_facts``, status
``pending``); one below the confidence threshold also gets a fact-check task
(cycle._fact_checks). The check's result is the task's: ``task_update`` with
``verdict`` (``verified`` or ``rejected``, and ``evidence``) on a fact-check
task marks every fact assigned to it, and the task done. The main loop or an
auxiliary loop working on that task may give it.
"""

from __future__ import annotations

import json
import time

from meshnode.base.errors import MeshnodeError

VERDICTS = ("verified", "rejected")


def resolve(conn, task_id: int, verdict: str, evidence: str | None, checker: str, now_ms: int) -> list[str]:
    """Mark the facts of fact-check task ``task_id`` (in the caller's transaction); returns their ids."""
    if verdict not in VERDICTS:
        raise MeshnodeError("bad_args", f"verdict is one of {', '.join(VERDICTS)}")
    facts = [r[0] for r in conn.execute("SELECT id FROM unverified_facts WHERE assigned_task_id = ?", (task_id,))]
    if not facts:
        raise MeshnodeError("not_fact_check", f"task {task_id} checks no unverified fact; a verdict belongs to a"
                                              " fact-check task (task_list shows them)")
    at = time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime(now_ms / 1000))
    resolution = json.dumps({"status": verdict, "evidence": evidence or "", "task_id": task_id}, ensure_ascii=False)
    conn.execute("UPDATE unverified_facts SET status = ?, resolution_json = ?, checker_agent = ?, last_checked_at = ?"
                 " WHERE assigned_task_id = ?", (verdict, resolution, checker, at, task_id))
    return facts


def listing(db, status: str | None = None, limit: int = 20) -> list[dict]:
    where, params = ("WHERE status = ?", [status]) if status else ("", [])
    cur = db.conn.execute(f"SELECT id, claim, confidence, status, assigned_task_id, resolution_json, created_at"
                          f" FROM unverified_facts {where} ORDER BY created_at DESC, id LIMIT ?", (*params, limit))
    names = [d[0] for d in cur.description]
    return [dict(zip(names, r)) for r in cur.fetchall()]
