"""Delegation the running node does by itself (gmp.md sections 6.3 and 8): what it decides, in the
store; ``net.mesh_gmp`` runs these from its periodic check and makes the offers (``service.task_offer``).

* **CogConsensus**: for each unheld contested task this node delegates (its creator, or the steward
  that took it over) with no open offer, once a nomination's voting period (``vote_ms``) is over,
  every such nomination is tallied with the standard rule; the best approved one
  (``contest.best_nomination``) gets a signed ``consensus_result``, the offer's ``basis``.
* **MeshConsensus**: the values a validator requests (one per task version with nominations and no
  decision yet: the earliest nomination), and the tasks whose binding decision this node, their
  delegator, has not offered yet.
* **Stewards**: a participant's takeover of an overdue task whose creator did not act, at its rank's
  time; a notice to the person (the inbox) says so.

Nominees already turned down (a refusal of an offer of the task) or removed from it are passed over.
"""

from __future__ import annotations

import json
import logging

from meshnode.base.container import format_ms
from meshnode.domain.consensus.cogvote import ConsensusError, Rule
from meshnode.domain.consensus.result import read_claim
from meshnode.domain.gmp import contest, rules, view
from meshnode.records.consensus import publish_result, tally_stored
from meshnode.records.gmp.publish import Push, publish_task_version, push_task_version
from meshnode.records.gmp.reads import OFFERS_BY_ITSELF, GmpError, goal_row, held, open_offers, task_row
from meshnode.records.gmp.store_admission import DbHeld, first_gmp_delegation
from meshnode.records.reactor import person_lines
from meshnode.store.database import sql_errors

log = logging.getLogger("meshnode.domain.gmp")

MAX_TASKS = 32  # contested tasks looked at per check (the rest at the next)
MAX_NOMINATIONS = 64  # nominations tallied per task


def _delegated(db, me: str, rule: str, now_ms: int) -> list[dict]:
    """Task rows under ``rule`` that ``me`` offers by itself (``OFFERS_BY_ITSELF``: the steward whose
    takeover is shown, else the creator), unheld, open, with no offer still open."""
    with sql_errors("listing contested tasks"):
        lineages = [r[0] for r in db.conn.execute(
            "SELECT t.lineage FROM tasks t WHERE t.lineage IS NOT NULL AND t.delegation_rule = ? AND t.status NOT IN"
            f" ('completed', 'failed', 'abandoned') AND {OFFERS_BY_ITSELF} AND (t.assigned_to IS NULL OR NOT EXISTS"
            " (SELECT 1 FROM json_each(t.assigned_to))) ORDER BY t.timestamp_ms LIMIT ?", (rule, me, MAX_TASKS * 4))]
    open_ = open_offers(db, lineages, now_ms)
    return [task_row(db, lin) for lin in lineages if lin not in open_][:MAX_TASKS]


def _passed_over(db, lineage: str) -> set[str]:
    """Nominees not to offer the task to again: those who refused an offer of it, or held it and left."""
    with sql_errors("reading who turned a task down"):
        refused = {r[0] for r in db.conn.execute(
            "SELECT signer FROM gmp_entries WHERE lineage = ? AND kind = 'refusal' AND counted = 1", (lineage,))}
        left = {r[0] for r in db.conn.execute(
            "SELECT assignee FROM task_holders WHERE lineage = ? AND ended IS NOT NULL", (lineage,))}
    return refused | left


def _nominations(db, lineage: str, *, version: str | None = None, before_ms: int | None = None) -> list[tuple]:
    """(DID, candidate, timestamp) of the counted nominations of ``lineage``, earliest first; only those
    naming ``version``, or signed before ``before_ms``, when given."""
    sql = "SELECT did, candidates, timestamp_ms FROM gmp_entries WHERE lineage = ? AND kind = 'nomination' AND counted = 1"
    args: list = [lineage]
    if version is not None:
        sql += " AND task_version = ?"
        args.append(version)
    if before_ms is not None:
        sql += " AND timestamp_ms <= ?"
        args.append(before_ms)
    with sql_errors("reading nominations"):
        found = db.conn.execute(sql + " ORDER BY timestamp_ms, did LIMIT ?", (*args, MAX_NOMINATIONS)).fetchall()
    out = []
    for did, candidates, ts in found:
        names = json.loads(candidates or "[]")
        if isinstance(names, list) and len(names) == 1 and isinstance(names[0], str):
            out.append((did, names[0], ts))
    return out


# --- CogConsensus (gmp.md 6.3 step 2) -----------------------------------------------------------


def cog_picks(db, me: str, now_ms: int, *, vote_ms: int, rule: Rule = Rule()) -> list[dict]:
    """For each contested task ``me`` delegates that is ripe for a choice, the best approved
    nomination ({"task", "nomination", "candidate", "score"}). Only reads: the tallies run on a reader,
    and the single writer is taken (``cog_choices``) only when there is something to sign."""
    out = []
    for row in _delegated(db, me, "cogconsensus", now_ms):
        lineage, skip = row["lineage"], _passed_over(db, row["lineage"])
        ripe = [n for n in _nominations(db, lineage, before_ms=now_ms - vote_ms) if n[1] not in skip]
        tallied, candidate_of = [], {}
        for did, candidate, ts in ripe:
            try:
                t = tally_stored(db, did, rule=rule, at_ms=now_ms).outcome
            except ConsensusError as exc:
                log.info("nomination %s not tallied: %s", did, exc.reason)
                continue
            tallied.append(contest.Tallied(did, ts, t.state, t.score))
            candidate_of[did] = candidate
        best = contest.best_nomination(tallied)
        if best is not None:
            out.append({"task": lineage, "nomination": best.nomination, "candidate": candidate_of[best.nomination],
                        "score": best.score})
    return out


def cog_choices(db, key, now_ms: int, *, vote_ms: int, rule: Rule = Rule(),
                picks: list[dict] | None = None) -> list[dict]:
    """``picks`` (``cog_picks``'s, made now when not given) with the approved result choosing each
    nominee: this node's earlier one, else one signed now ({"task", "result", "nomination", "candidate",
    "score"}); the caller offers the task with it."""
    if picks is None:
        picks = cog_picks(db, key.did, now_ms, vote_ms=vote_ms, rule=rule)
    return [{**p, "result": _approved_result(db, key.did, p["nomination"])
             or publish_result(db, key, p["nomination"], rule=rule, now_ms=now_ms).did} for p in picks]


def _approved_result(db, me: str, nomination: str) -> str | None:
    """This node's newest approved result on ``nomination``, if it signed one (an offer that expired or
    failed is made again on it: no new result each time)."""
    with sql_errors("looking for a result"):
        rows = db.conn.execute(
            "SELECT c.did FROM container_links l JOIN containers c ON c.did = l.source_did WHERE l.target_did = ?"
            " AND l.relation = 'in_reply_to' AND c.class = 'consensus_result' AND c.sender_did = ?"
            " ORDER BY c.timestamp_ms DESC LIMIT 4", (nomination, me)).fetchall()
    for (did,) in rows:
        c = held(db, did)
        try:
            if c is not None and read_claim(c).state == "approved":
                return did
        except ConsensusError:
            continue
    return None


# --- MeshConsensus (gmp.md 6.3 step 3) -----------------------------------------------------------


def mesh_requests(db, now_ms: int, limit: int = MAX_TASKS) -> list[bytes]:
    """The values a validator requests: for each open, unheld meshconsensus task with no open offer,
    whose shown version has nominations and no decision yet, its earliest nomination's value."""
    with sql_errors("listing tasks to decide"):
        rows = db.conn.execute(
            "SELECT lineage, container_did FROM tasks WHERE lineage IS NOT NULL AND delegation_rule = 'meshconsensus'"
            " AND status NOT IN ('completed', 'failed', 'abandoned') AND (assigned_to IS NULL OR NOT EXISTS"
            " (SELECT 1 FROM json_each(assigned_to))) ORDER BY timestamp_ms LIMIT ?", (limit * 4,)).fetchall()
    open_ = open_offers(db, [r[0] for r in rows], now_ms)
    out = []
    for lineage, version in rows:
        if lineage in open_ or first_gmp_delegation(db.conn, lineage, version) is not None:
            continue
        skip = _passed_over(db, lineage)
        nominations = [n for n in _nominations(db, lineage, version=version) if n[1] not in skip]
        if nominations:
            out.append(contest.delegation_value(lineage, version, nominations[0][0]))
        if len(out) >= limit:
            break
    return out


def value_holds(db, value: bytes) -> bool | None:
    """A validator's rule for a gmp_delegation value: True when this node holds the nomination and the
    version, the nomination is about that task version and counts (signed by the goal's creator or a
    participant: anyone may publish a nomination, and one that does not count must not let a
    stranger, or a validator for itself, bind the task); False otherwise; None: not such a value.
    Raises ``contest.BadValue`` for a value of the kind that is not well formed."""
    parsed = contest.parse_delegation_value(value)
    if parsed is None:
        return None
    h = DbHeld(db.conn)
    n, v = held(db, parsed["nomination"]), held(db, parsed["version"])
    return bool(n is not None and v is not None and v.cls == "task" and h.root(v.did) == parsed["task"]
                and n.cls == "workflow_entry" and n.payload.get("entry_type") == "delegation"
                and n.payload.get("nomination") is True and n.payload.get("task_version") == v.did
                and (n.related.get("in_reply_to") or [None])[0] == parsed["task"] and view.counts(n, h)[0])


def mesh_choices(db, me: str, now_ms: int) -> list[dict]:
    """The meshconsensus tasks ``me`` delegates whose shown version has a binding decision not offered
    yet: {"task", "basis": {committee, height}, "candidate"} each; the caller offers them."""
    out = []
    for row in _delegated(db, me, "meshconsensus", now_ms):
        found = first_gmp_delegation(db.conn, row["lineage"], row["container_did"])
        if found is None:
            continue
        committee, height, _, nomination = found
        n = held(db, nomination)
        candidates = (n.payload.get("candidates") or []) if n is not None else []
        if len(candidates) != 1 or candidates[0] in _passed_over(db, row["lineage"]):
            continue  # a nominee who turned it down: the task waits for its next version's decision
        out.append({"task": row["lineage"], "basis": {"committee": committee, "height": height},
                    "candidate": candidates[0], "nomination": nomination})
    return out


def decided_mesh_basis(db, lineage: str, version: str, basis) -> tuple[list[str], dict, tuple[str, ...]]:
    """The candidate the binding MeshConsensus decision for (task, version) names, the ``basis``
    checked against it, and what a candidate needs to check it (the nomination)."""
    if type(basis) is not dict or type(basis.get("committee")) is not str or type(basis.get("height")) is not int:
        raise GmpError("bad_basis", "a MeshConsensus basis is {committee, height}")
    found = first_gmp_delegation(db.conn, lineage, version)
    if found is None or (found[0], found[1]) != (basis["committee"], basis["height"]):
        raise GmpError("bad_basis", f"no binding MeshConsensus decision for task {lineage} at committee"
                                    f" {basis['committee']} height {basis['height']}")
    n = held(db, found[3])
    if n is None:
        raise GmpError("bad_basis", f"the decided nomination {found[3]} is not held here")
    return list(n.payload["candidates"]), {"committee": found[0], "height": found[1]}, (n.did,)


# --- stewards (gmp.md section 8) -----------------------------------------------------------------


def take_over(db, key, now_ms: int, limit: int = MAX_TASKS) -> dict:
    """Takeovers due from this node as a steward: for each overdue, held, open task of a goal it
    takes part in (not its own task, not one it holds), when its rank's time has come and nothing
    replaced the shown version; each version removes the holders, sets ``pending`` and ``reason:
    reassigned_overdue``, cites the goal version listing this node, and is told to the person."""
    me, push, out = key.did, Push(key.did), []
    with sql_errors("looking for tasks to take over"):
        rows = db.conn.execute(
            "SELECT t.lineage FROM tasks t JOIN goals g ON g.lineage = t.goal_lineage, json_each(g.participants) p"
            " WHERE p.value = ? AND t.creator_did != ? AND t.status NOT IN ('completed', 'failed', 'abandoned')"
            " AND t.overdue_at_ms IS NOT NULL AND t.overdue_at_ms <= ? AND g.status NOT IN"
            " ('completed', 'cancelled', 'failed') AND t.forks = 0 AND EXISTS (SELECT 1 FROM json_each(t.assigned_to))"
            " AND NOT EXISTS (SELECT 1 FROM json_each(t.assigned_to) a WHERE a.value = ?)"
            " ORDER BY t.overdue_at_ms LIMIT ?", (me, me, now_ms, me, limit)).fetchall()
    for (lineage,) in rows:
        row = task_row(db, lineage)
        goal = goal_row(db, row["goal_lineage"])
        order = contest.stewards(lineage, row["container_did"], goal["participants"], row["assigned_to"],
                                 row["creator_did"])
        grace_s = int(row.get("check_grace_s") or 0)
        if me not in order or not grace_s or now_ms < contest.steward_acts_at(row["overdue_at_ms"], grace_s,
                                                                            order.index(me)):
            continue
        v = held(db, row["container_did"])
        if v is None or v.timestamp_ms >= now_ms:
            continue
        try:
            c, row = _takeover(db, key, now_ms, row, goal["container_did"])
        except rules.GmpRefused as exc:  # e.g. the version the goal cites is not the one listing us
            log.info("no takeover of task %s: %s: %s", lineage, exc.code, exc.reason)
            continue
        push_task_version(push, db, row, c)
        push.add(row["assigned_to"], [goal["container_did"]])
        removed = list(row["assigned_to"])
        log.warning("steward: took task %s (%r) over from %s, overdue since %s: its creator did not act",
                    lineage, row["name"], ", ".join(removed), format_ms(row["overdue_at_ms"]))
        _tell_person(db, me, now_ms, lineage, row["name"], removed, c.did)
        out.append({"task": lineage, "removed": removed, "why": "reassigned_overdue", "did": c.did,
                    "rank": order.index(me)})
    return {"taken": out, "push": push.result()}


def _takeover(db, key, now_ms: int, row: dict, goal_version: str):
    """The takeover version: the shown one without holders or next check, ``pending``, citing in
    ``see_also`` the goal version that lists this node as participant."""
    return publish_task_version(db, key, now_ms, row, {"assigned_to": None, "next_check_at": None,
                                                       "status": "pending", "reason": "reassigned_overdue"},
                                see_also=(goal_version,))


def _tell_person(db, me: str, now_ms: int, lineage: str, title: str, removed: list[str], version: str) -> None:
    names = ", ".join(removed)
    person_lines.add(db, event_key=f"gmp.takeover:{version}", agent=me, event_type="gmp.takeover",
                     subject=lineage, summary=f"This node took task \"{title}\" over as a steward: {names} did not"
                     " check in by the time it was overdue and its creator did not act. It is offered again.",
                     refs={"task": lineage, "version": version, "removed": removed}, at_ms=now_ms, now_ms=now_ms)
