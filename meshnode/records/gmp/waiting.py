"""What waits for one agent in GMP (issue 37), read for its prompt at every tick, not only in a
reactor wake: the open offers naming it (until they expire, are answered by it or taken), the
tasks it holds (status, due), and the results of the tasks it created that someone else finished
and it has not reviewed yet (``gmp.review``). Reads only; every query has a LIMIT.
"""

from __future__ import annotations

from meshnode.records.gmp.reads import _NOT_DONE, _json, due_of, names, rows, shown
from meshnode.store.database import Database, sql_errors

LIMIT = 10
RESULT_DAYS = 30  # a result not reviewed within this leaves the prompt (task_read and task_list still show it)


def offers_to(db: Database, me: str, now_ms: int, limit: int = LIMIT) -> list[dict]:
    """Unexpired counted offers naming ``me`` that it has neither accepted nor refused and nobody
    took: its node's delivery receipt is no answer (it signs one on arrival, gmp.md 6.1)."""
    with sql_errors("reading the offers waiting for an answer"):
        return rows(db.conn.execute(
            "SELECT e.lineage, e.did AS offer, e.signer AS offered_by, e.expires_ms, e.timestamp_ms, t.name AS title,"
            " t.description, t.deadline_ms, t.goal_lineage, g.name AS goal_title FROM gmp_entries e"
            " INDEXED BY gmp_entries_by_expiry LEFT JOIN tasks t ON t.lineage = e.lineage"
            " LEFT JOIN goals g ON g.lineage = t.goal_lineage"
            " WHERE e.kind = 'delegation' AND e.counted = 1 AND e.expires_ms > ?"
            " AND EXISTS (SELECT 1 FROM json_each(e.candidates) c WHERE c.value = ?)"
            " AND NOT EXISTS (SELECT 1 FROM gmp_entries a INDEXED BY gmp_entries_by_offer WHERE a.offer = e.did"
            "   AND a.signer = ? AND a.kind IN ('acceptance', 'refusal'))"
            " AND NOT EXISTS (SELECT 1 FROM gmp_entries a INDEXED BY gmp_entries_by_offer JOIN container_links l ON"
            "   l.target_did = a.did AND l.relation = 'agreed' WHERE a.offer = e.did AND a.kind = 'acceptance')"
            " ORDER BY e.expires_ms LIMIT ?", (now_ms, me, me, limit)))


def held_by(db: Database, me: str, now_ms: int, limit: int = LIMIT) -> list[dict]:
    """The open tasks ``me`` holds, the most pressing first (by due time). From its holdings
    (``task_holders`` by assignee, those not ended), so the read does not grow with the tasks
    others hold."""
    with sql_errors("reading the tasks held"):
        found = rows(db.conn.execute(
            "SELECT DISTINCT t.lineage, t.container_did, t.name AS title, t.description, t.status, t.progress,"
            " t.assigned_to, t.creator_did, t.goal_lineage, t.deadline_ms, t.next_check_ms, t.due_at_ms,"
            " t.overdue_at_ms, t.forks, t.delegation_rule, t.timestamp_ms, g.name AS goal_title,"
            " g.status AS goal_status FROM task_holders h CROSS JOIN tasks t ON t.lineage = h.lineage"
            " LEFT JOIN goals g ON g.lineage = t.goal_lineage"
            f" WHERE h.assignee = ? AND h.to_version IS NULL AND t.lineage IS NOT NULL AND t.{_NOT_DONE}"
            " AND EXISTS (SELECT 1 FROM json_each(t.assigned_to) WHERE value = ?)"
            " ORDER BY coalesce(t.due_at_ms, 9e18), t.timestamp_ms DESC LIMIT ?", (me, me, limit)))
    for r in found:
        r["assigned_to"] = _json(r["assigned_to"], [])
        r["due"] = due_of(r, now_ms=now_ms, liveness={}, offers=[], goal_status=r["goal_status"])
    return found


def results_for(db: Database, me: str, now_ms: int, limit: int = LIMIT) -> tuple[list[dict], int]:
    """The finished tasks (completed or failed) ``me`` created whose finishing version another
    signed in the last RESULT_DAYS and that it has not reviewed: newest first, each with the
    summary its holder wrote and the progress summaries before it; and how many there are in all.
    (A range of the creator's index: a node that created many tasks reads only its recent ones.)"""
    where = ("FROM tasks t INDEXED BY tasks_finished_by_creator WHERE t.creator_did = ? AND t.timestamp_ms > ? AND"
             " t.lineage IS NOT NULL AND t.status IN ('completed', 'failed') AND t.author_did != ? AND NOT EXISTS"
             " (SELECT 1 FROM task_reviews r WHERE r.lineage = t.lineage AND r.version = t.container_did)")
    params = (me, now_ms - RESULT_DAYS * 86_400_000, me)
    with sql_errors("reading the results to review"):
        total = db.conn.execute(f"SELECT count(*) {where}", params).fetchone()[0]
        found = rows(db.conn.execute(
            "SELECT t.lineage, t.container_did, t.name AS title, t.status, t.author_did AS finished_by,"
            " t.goal_lineage, t.timestamp_ms, (SELECT g.name FROM goals g WHERE g.lineage = t.goal_lineage)"
            f" AS goal_title {where} ORDER BY t.timestamp_ms DESC LIMIT ?", (*params, limit)))
        for r in found:
            p = shown(db, r).payload
            r["summary"] = p.get("notes") if isinstance(p, dict) else None
            r["progress_notes"] = [s for (s,) in db.conn.execute(
                "SELECT summary FROM gmp_entries WHERE lineage = ? AND kind = 'progress' AND counted = 1 AND summary"
                " IS NOT NULL ORDER BY timestamp_ms DESC LIMIT 3", (r["lineage"],))][::-1]
    return found, total


def waiting_for(db: Database, me: str, now_ms: int, limit: int = LIMIT) -> dict:
    """Offers to ``me``, tasks it holds and results for it to review, with the names of the peers
    they mention (``names``: DID -> display name)."""
    offers, held = offers_to(db, me, now_ms, limit), held_by(db, me, now_ms, limit)
    results, total = results_for(db, me, now_ms, limit)
    who = names(db, [*(o["offered_by"] for o in offers), *(r["finished_by"] for r in results),
                     *(r["creator_did"] for r in held)])
    return {"offers": offers, "held": held, "results": results, "results_total": total, "names": who}
