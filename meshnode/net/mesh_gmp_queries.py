"""What the running node reads of the GMP views (``store/views_gmp.py``) to act on them.

Functions take a Database and run in the store's worker threads
(``await store.read(fn, ...)``). They only read the tables the views keep
(``tasks``, ``gmp_entries``, ``gmp_pending``, ``gmp_audience``) and the
liveness rows the Mesh writes (``peer_liveness``); the decisions stay in
``meshnode.records.gmp.service`` and ``net.mesh_gmp``.
"""

from __future__ import annotations

import json

from meshnode.records.gmp.reads import OFFERS_BY_ITSELF
from meshnode.store.database import Database, sql_errors
from meshnode.store.trust import trust_scores
from meshnode.domain.sync.versions import DEFAULT_TRUST

TERMINAL = ("completed", "failed", "abandoned")
MAX_AUDIENCE = 256  # peers this node syncs with because they share a goal with it


def liveness_since(db: Database) -> dict[str, tuple[str, int]]:
    """DID -> (liveness state, since when in ms) of every peer the node has heard. Kept in the
    store (``peer_liveness``), so a dead stranger the Mesh has forgotten stays dead here."""
    with sql_errors("reading liveness"):
        rows = db.conn.execute("SELECT did, state, changed_at_ms FROM peer_liveness").fetchall()
    return {did: (state, int(since or 0)) for did, state, since in rows}


def task_tags(db: Database, task: str) -> list[str]:
    """The tags of a task (by lineage), for an interest lookup; [] when unknown."""
    with sql_errors("reading a task's tags"):
        row = db.conn.execute("SELECT tags FROM tasks WHERE lineage = ?", (task,)).fetchone()
    return _json_list(row[0]) if row else []


def goal_people(db: Database, task: str) -> list[str]:
    """The creator and participants of a task's goal (by the task's lineage), for offering a task
    taken back to those who work on the goal first; [] when the task or goal is not held."""
    with sql_errors("reading a goal's participants"):
        row = db.conn.execute("SELECT g.creator_did, g.participants FROM tasks t JOIN goals g"
                              " ON g.lineage = t.goal_lineage WHERE t.lineage = ?", (task,)).fetchone()
    return [row[0], *_json_list(row[1])] if row and row[0] else []


def candidate_facts(db: Database, dids: list[str]) -> dict[str, tuple[float, int]]:
    """DID -> (trust, open tasks it holds in this node's view), for ranking candidates."""
    if not dids:
        return {}
    trust = trust_scores(db.conn, dids)
    placeholders = ",".join("?" * len(dids))
    with sql_errors("counting open tasks"):
        rows = db.conn.execute(
            f"SELECT a.value, count(*) FROM tasks t, json_each(t.assigned_to) a"
            f" WHERE json_valid(t.assigned_to) AND t.status NOT IN {TERMINAL} AND a.value IN ({placeholders})"
            f" GROUP BY a.value", dids).fetchall()
    held = dict(rows)
    return {d: (float(trust.get(d, DEFAULT_TRUST)), int(held.get(d, 0))) for d in dids}


def unanswered_offers(db: Database, me: str, now_ms: int, older_than_ms: int) -> list[tuple[str, str]]:
    """(offer DID, candidate DID) of this node's open offers (not expired, sent before
    ``older_than_ms``) with no receipt, acceptance or refusal signed by that candidate."""
    with sql_errors("listing unanswered offers"):
        rows = db.conn.execute(
            "SELECT did, candidates FROM gmp_entries WHERE kind = 'delegation' AND signer = ?"
            " AND (expires_ms IS NULL OR expires_ms > ?) AND timestamp_ms <= ?",
            (me, now_ms, older_than_ms)).fetchall()
        out = []
        for offer, candidates in rows:
            for candidate in _json_list(candidates):
                answered = db.conn.execute(
                    "SELECT 1 FROM gmp_entries WHERE offer = ? AND signer = ?"
                    " AND kind IN ('receipt', 'acceptance', 'refusal') LIMIT 1", (offer, candidate)).fetchone()
                if not answered and candidate != me:
                    out.append((offer, candidate))
    return out


def owed_receipts(db: Database, me: str, now_ms: int, limit: int = 64) -> list[str]:
    """What this node holds and owes a receipt for (gmp.md 6.1 steps 2 and 5), none made yet: the
    open counted offers of others naming it among their candidates, and the version that began
    each holding of its of an open task (signed by another). ``service.on_admitted`` decides, as
    for any arrival (a nomination, or a version an earlier one named it in, gets none)."""
    with sql_errors("listing receipts owed"):
        rows = db.conn.execute(
            "SELECT e.did, e.timestamp_ms FROM gmp_entries e, json_each(e.candidates) j WHERE e.kind = 'delegation'"
            " AND e.counted = 1 AND e.signer != :me AND j.value = :me AND e.expires_ms > :now"
            " AND NOT EXISTS (SELECT 1 FROM gmp_entries r WHERE r.kind = 'receipt' AND r.signer = :me"
            "                 AND r.offer = e.did)"
            " UNION SELECT h.from_version, h.since_ms FROM task_holders h JOIN tasks t ON t.lineage = h.lineage"
            " JOIN containers c ON c.did = h.from_version WHERE h.assignee = :me AND h.to_version IS NULL"
            " AND c.sender_did != :me AND t.status NOT IN ('completed', 'failed', 'abandoned')"
            " AND NOT EXISTS (SELECT 1 FROM gmp_entries r WHERE r.kind = 'receipt' AND r.signer = :me"
            "                 AND r.offer = h.from_version)"
            " ORDER BY 2 DESC LIMIT :limit", {"me": me, "now": now_ms, "limit": limit}).fetchall()
    return [r[0] for r in rows]


def receipts_made(db: Database, me: str, dids: list[str]) -> list[tuple[str, str]]:
    """(receipt DID, to whom) of the receipts this node made for any of ``dids``, each to the signer
    of what it receipts."""
    with sql_errors("reading receipts made"):
        rows = db.conn.execute(
            "SELECT r.did, c.sender_did FROM gmp_entries r JOIN containers c ON c.did = r.offer WHERE r.kind = 'receipt'"
            " AND r.signer = ? AND r.offer IN (SELECT value FROM json_each(?))", (me, json.dumps(dids))).fetchall()
    return [(r, to) for r, to in rows]


def unreceipted_assignments(db: Database, me: str, older_than_ms: int, limit: int = 64) -> list[tuple[str, str, str]]:
    """(version DID, assignee DID, task lineage) of the holdings this node's versions began (sent
    before ``older_than_ms``) of tasks still open, with no receipt from the assignee for that version:
    the push assigning it may have been lost (gmp.md 6.1 step 5). Newest first: those pushed again
    twice already stay listed while the holding lasts, and oldest first they would take every place
    and leave a newer assignment never pushed again."""
    with sql_errors("listing assignments without a receipt"):
        rows = db.conn.execute(
            "SELECT h.from_version, h.assignee, h.lineage FROM task_holders h JOIN tasks t ON t.lineage = h.lineage"
            " JOIN containers c ON c.did = h.from_version WHERE c.sender_did = :me AND h.assignee != :me"
            " AND h.to_version IS NULL AND h.since_ms <= :older AND t.status NOT IN ('completed', 'failed', 'abandoned')"
            " AND NOT EXISTS (SELECT 1 FROM gmp_entries r WHERE r.kind = 'receipt' AND r.signer = h.assignee"
            "                 AND r.offer = h.from_version)"
            " ORDER BY h.since_ms DESC LIMIT :limit", {"me": me, "older": older_than_ms, "limit": limit}).fetchall()
    return [(v, who, lineage) for v, who, lineage in rows]


def uncited_acceptances(db: Database, me: str, now_ms: int, limit: int = 64) -> list[str]:
    """Acceptances of this node's open offers that no task version cites in ``related.agreed``."""
    with sql_errors("listing acceptances"):
        rows = db.conn.execute(
            "SELECT e.did FROM gmp_entries e JOIN gmp_entries o ON o.did = e.offer WHERE e.kind = 'acceptance'"
            " AND o.kind = 'delegation' AND o.signer = ? AND o.expires_ms > ? AND NOT EXISTS (SELECT 1 FROM"
            " container_links l WHERE l.relation = 'agreed' AND l.target_did = e.did) LIMIT ?",
            (me, now_ms, limit)).fetchall()
    return [r[0] for r in rows]


def open_offer_for(db: Database, task: str, now_ms: int) -> bool:
    """Whether ``task`` (lineage) has an offer still open made since its shown version (an older
    one was answered, or offered the task to a holder since removed)."""
    with sql_errors("looking for an open offer"):
        return db.conn.execute(
            "SELECT 1 FROM gmp_entries e JOIN tasks t ON t.lineage = e.lineage WHERE e.kind = 'delegation'"
            " AND e.lineage = ? AND e.counted = 1 AND (e.expires_ms IS NULL OR e.expires_ms > ?)"
            " AND e.timestamp_ms >= t.timestamp_ms LIMIT 1", (task, now_ms)).fetchone() is not None


def taken_back(db: Database, me: str, now_ms: int, limit: int) -> list[tuple[str, list[str]]]:
    """(task lineage, holders it was taken from) of the tasks this node took back (a ``reassigned_*``
    version is shown: its own task, or one it took over as a steward; a task of its own that a steward
    took over is the steward's to offer, ``OFFERS_BY_ITSELF``), unheld, with no offer since:
    to be offered again. Contested tasks are left out: a decision offers them (``gmp.delegate``).
    Read from the views, so a restart between taking a task back and offering it loses nothing."""
    with sql_errors("listing tasks taken back"):
        rows = db.conn.execute(
            f"SELECT t.lineage, t.timestamp_ms FROM tasks t WHERE {OFFERS_BY_ITSELF} AND t.status = 'pending'"
            " AND t.reason IN ('reassigned_dead', 'reassigned_overdue') AND COALESCE(t.delegation_rule, 'creator')"
            " = 'creator' AND (t.assigned_to IS NULL OR NOT EXISTS (SELECT 1 FROM json_each(t.assigned_to)))"
            " ORDER BY t.timestamp_ms LIMIT ?", (me, limit * 4)).fetchall()
        out = []
        for lineage, _ in rows:
            if open_offer_for(db, lineage, now_ms):
                continue
            removed = [r[0] for r in db.conn.execute(
                "SELECT DISTINCT assignee FROM task_holders WHERE lineage = ? AND ended IN"
                " ('reassigned_dead', 'reassigned_overdue')", (lineage,))]
            out.append((lineage, removed))
            if len(out) >= limit:
                break
    return out


def audience_peers(db: Database, me: str) -> list[str]:
    """Peers that share a goal with this node (its goals' audiences): the sync sessions must
    run with them even when they are neither connected nor friends. Those last heard stale or
    dead are left out (the Mesh forgets dead strangers; the stored row remembers them) until
    their heartbeats are heard again."""
    with sql_errors("listing goal audiences"):
        rows = db.conn.execute(
            "SELECT DISTINCT other.did FROM gmp_audience mine JOIN gmp_audience other"
            " ON other.goal_lineage = mine.goal_lineage LEFT JOIN peer_liveness l ON l.did = other.did"
            " WHERE mine.did = ? AND other.did != ? AND COALESCE(l.state, 'ok') NOT IN ('stale', 'dead')"
            " ORDER BY other.did LIMIT ?", (me, me, MAX_AUDIENCE)).fetchall()
    return [r[0] for r in rows]


def coworkers(db: Database, me: str) -> list[str]:
    """Peers this node chose to work with: the audience of the goals it created (participants it
    named, assignees whose acceptance it took), the creators of tasks it holds (it accepted their
    offer) and of goals under which it signed anything but a receipt (signed on its own for any offer naming
    it: delivery, not a choice) or a refusal. Their containers are not a stranger's
    (store.known); a goal naming this node that someone else created makes no one known until
    this node signs something under it, so strangers cannot use one to skip the quotas."""
    with sql_errors("listing coworkers"):
        rows = db.conn.execute(
            "SELECT a.did FROM gmp_audience a JOIN goals g ON g.lineage = a.goal_lineage WHERE g.creator_did = :me"
            " UNION SELECT t.creator_did FROM tasks t, json_each(t.assigned_to) h"
            " WHERE json_valid(t.assigned_to) AND h.value = :me AND t.creator_did IS NOT NULL"
            " UNION SELECT g.creator_did FROM goals g WHERE g.creator_did IS NOT NULL AND EXISTS (SELECT 1 FROM"
            " gmp_members m JOIN containers c ON c.did = m.did WHERE m.goal_lineage = g.lineage AND c.sender_did = :me"
            " AND NOT EXISTS (SELECT 1 FROM gmp_entries e WHERE e.did = c.did AND e.kind IN ('receipt', 'refusal')))"
            " LIMIT :limit", {"me": me, "limit": MAX_AUDIENCE * 4}).fetchall()
    return [r[0] for r in rows if r[0] != me]


def pending_state(db: Database, dids: list[str]) -> dict[str, dict]:
    """For each DID: {"admitted": bool} when held in ``containers``, or {"pending": True,
    "from": peer, "missing": [...]} while it waits in ``gmp_pending``; absent: neither."""
    out: dict[str, dict] = {}
    with sql_errors("reading pending containers"):
        for did in dids:
            if db.conn.execute("SELECT 1 FROM containers WHERE did = ?", (did,)).fetchone():
                out[did] = {"admitted": True}
                continue
            row = db.conn.execute("SELECT received_from, missing FROM gmp_pending WHERE did = ?", (did,)).fetchone()
            if row:
                out[did] = {"pending": True, "from": row[0], "missing": _json_list(row[1])}
    return out


def _json_list(text) -> list[str]:
    try:
        items = json.loads(text) if text else []
    except (TypeError, ValueError):
        return []
    return [x for x in items if isinstance(x, str)] if isinstance(items, list) else []
