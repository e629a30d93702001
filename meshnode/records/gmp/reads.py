"""GMP reads for every face (CLI, control commands, cognition): names, lists, trees, due checks.

Everything here reads the view tables gmp-store draws from admitted containers
(``goals``, ``tasks``, ``task_holders``, ``gmp_entries``) and never writes. Goals and
tasks are named by lineage DID, by the DID of any of their versions, or by the short id a
listing shows; local-only rows (``lineage IS NULL``: fact checks, isolation tasks, aux
loops) are not GMP and are not listed here.
"""

from __future__ import annotations

import json
import sqlite3

from meshnode.base.container import Container, format_ms
from meshnode.base.errors import MeshnodeError
from meshnode.domain.gmp import view
from meshnode.store import lineage as lineage_index
from meshnode.store import names as store_names
from meshnode.store import short_ids
from meshnode.store.database import Database, sql_errors
from meshnode.store.views_cogsync import load_stored

TASK_TERMINAL = ("completed", "failed", "abandoned")
GOAL_TERMINAL = ("completed", "cancelled", "failed")
TASK_STATUSES = ("pending", "in_progress", "paused", "completed", "failed", "abandoned")
GOAL_STATUSES = ("proposed", "active", "paused", "completed", "cancelled", "failed")
_NOT_DONE = "status IN ('pending', 'in_progress', 'paused')"  # the open-task indexes' own predicate


class GmpError(MeshnodeError):
    """A GMP action refused before anything was signed: unknown goal or task, not allowed, bad value."""


def _json(text, default):
    try:
        value = json.loads(text) if text else default
    except ValueError:
        return default
    return value if isinstance(value, type(default)) else default


def rows(cur: sqlite3.Cursor) -> list[dict]:
    names = [d[0] for d in cur.description]
    return [dict(zip(names, r)) for r in cur.fetchall()]


# --- naming -------------------------------------------------------------------------------------


def resolve(db: Database, text: str, noun: str) -> str:
    """The lineage DID of the goal or task ``text`` names (``noun``: "goal" or "task")."""
    table = "goals" if noun == "goal" else "tasks"
    text = str(text or "").strip()
    if not text:
        raise GmpError(f"unknown_{noun}", f"name a {noun}: its lineage DID, a version's DID or its short id")
    try:
        did = short_ids.resolve_container(db, text, noun)
    except short_ids.ShortIdError as exc:
        code = "ambiguous_id" if exc.code == "ambiguous_id" else f"unknown_{noun}"
        raise GmpError(code, exc.reason) from None
    with sql_errors(f"finding a {noun}"):
        row = db.conn.execute(f"SELECT lineage FROM {table} WHERE lineage = ? OR container_did = ?",
                              (did, did)).fetchone()
        if row is None:
            root = lineage_index.root_of(db.conn, did)
            row = db.conn.execute(f"SELECT lineage FROM {table} WHERE lineage = ?", (root,)).fetchone() if root else None
    if row is None:
        raise GmpError(f"unknown_{noun}", f"no {noun} {text[:80]} is held here (`meshnode {noun} list` shows them)")
    return row[0]


def task_row(db: Database, lineage: str) -> dict:
    with sql_errors("reading a task"):
        found = rows(db.conn.execute("SELECT * FROM tasks WHERE lineage = ?", (lineage,)))
    if not found:
        raise GmpError("unknown_task", f"no task {lineage} is held here")
    row = found[0]
    row["assigned_to"] = _json(row.get("assigned_to"), [])
    row["depends_on"] = _json(row.get("depends_on"), [])
    row["tags"] = _json(row.get("tags"), [])
    return row


def goal_row(db: Database, lineage: str) -> dict:
    with sql_errors("reading a goal"):
        found = rows(db.conn.execute("SELECT * FROM goals WHERE lineage = ?", (lineage,)))
    if not found:
        raise GmpError("unknown_goal", f"no goal {lineage} is held here")
    row = found[0]
    for k in ("participants", "tags", "constraints", "success_criteria"):
        row[k] = _json(row.get(k), [])
    return row


def shown(db: Database, row: dict) -> Container:
    """The shown version of a goal or task row (its ``container_did``)."""
    with sql_errors("reading a container"):
        return load_stored(db.conn, row["container_did"])


# Whose node offers an unheld task by itself (gmp.md 6.3 and 8), as SQL over ``tasks t`` compared with
# one DID: the steward whose takeover is the shown version, else the creator. One of them, never both:
# a creator back online that had not yet received the steward's offer offered it too, and two offers
# answered by two peers gave the task to both (or forked it).
OFFERS_BY_ITSELF = ("(CASE WHEN t.reason = 'reassigned_overdue' AND t.author_did != t.creator_did THEN t.author_did"
                    " ELSE t.creator_did END) = ?")


def delegates(db: Database, row: dict, did: str) -> bool:
    """Whether ``did`` may offer the task of ``row``: its creator, or a steward whose takeover is in
    the shown version's ancestry (gmp.md 4.2)."""
    if row["creator_did"] == did:
        return True
    from meshnode.domain.gmp.rules import delegators
    from meshnode.records.gmp.store_admission import DbHeld

    head = shown(db, row)
    with sql_errors("reading a task's versions"):
        return did in delegators([head], row["creator_did"], DbHeld(db.conn))


def held(db: Database, did: str) -> Container | None:
    with sql_errors("reading a container"):
        if db.conn.execute("SELECT 1 FROM containers WHERE did = ?", (did,)).fetchone() is None:
            return None
        return load_stored(db.conn, did)


def names(db: Database, dids) -> dict[str, str]:
    """Display names (the person's petnames, peers' announces, this node's own name) of the agents
    that have one (store.names)."""
    return store_names.named(db, dids)


def bundle(db: Database, task_lineage: str, *, extra: tuple[str, ...] = ()) -> list[str]:
    """What a peer that has never seen the task needs to admit it (and ``extra``), in dependency
    order: the goal's versions (not its parent goals': they have audiences of their own), the
    parent tasks', the task's, and the offers and acceptances its versions rely on."""
    conn = db.conn
    want: list[str] = []
    with sql_errors("collecting a task's containers"):
        task = conn.execute("SELECT goal_lineage, parent_task FROM tasks WHERE lineage = ?", (task_lineage,)).fetchone()
        tasks = [task_lineage]
        goal, parent = (task or (None, None))
        for _ in range(16):  # parent tasks, nearest last
            if not parent or parent in tasks:
                break
            tasks.insert(0, parent)
            row = conn.execute("SELECT parent_task FROM tasks WHERE lineage = ?", (parent,)).fetchone()
            parent = row[0] if row else None
        # the goal only: admission never reads a subgoal's parent goals, and their audience (who may
        # be given them, store.sharing) is theirs, not this goal's
        goals = [goal] if goal else []
        for root in goals + tasks:
            want += lineage_index.members(conn, root) or [root]
        for root in tasks:
            want += [r[0] for r in conn.execute("SELECT did FROM gmp_entries WHERE lineage = ? AND kind IN"
                                                " ('delegation', 'acceptance')", (root,))]
        want += [d for d in extra if d]
        return ordered(conn, want)


def ordered(conn: sqlite3.Connection, dids: list[str]) -> list[str]:
    """``dids`` (held ones, each once) so that what a container names comes before it: by
    time, then every container after those it links to (``related``) within the set."""
    seen = list(dict.fromkeys(dids))
    if not seen:
        return []
    marks = ",".join("?" * len(seen))
    times = dict(conn.execute(f"SELECT did, timestamp_ms FROM containers WHERE did IN ({marks})", seen).fetchall())
    links: dict[str, set[str]] = {}
    for source, target in conn.execute(f"SELECT source_did, target_did FROM container_links WHERE source_did IN"
                                       f" ({marks}) AND target_did IN ({marks})", seen * 2):
        links.setdefault(source, set()).add(target)
    out: list[str] = []
    placed: set[str] = set()

    def place(did: str, depth: int = 0) -> None:
        if did in placed or depth > 64:
            return
        placed.add(did)
        for target in sorted(links.get(did, ()), key=lambda d: (times.get(d, 0), d)):
            place(target, depth + 1)
        out.append(did)

    for did in sorted((d for d in seen if d in times), key=lambda d: (times[d], d)):
        place(did)
    return [d for d in out if d in times]


# --- listings -------------------------------------------------------------------------------------


def goal_list(db: Database, *, status: str | None = None, me: str | None = None) -> list[dict]:
    """One row per goal: status, title, priority, tasks open and total; ``me``: only the goals that
    DID creates, takes part in, or holds a task of."""
    if status is not None and status not in GOAL_STATUSES:
        raise GmpError("bad_status", f"a goal's status is one of {', '.join(GOAL_STATUSES)}")
    where, params = ["g.lineage IS NOT NULL"], []
    if status:
        where.append("g.status = ?")
        params.append(status)
    if me:
        where.append("(g.creator_did = ? OR EXISTS (SELECT 1 FROM json_each(g.participants) WHERE value = ?)"
                     " OR EXISTS (SELECT 1 FROM tasks t, json_each(t.assigned_to) a WHERE t.goal_lineage = g.lineage"
                     " AND a.value = ?))")
        params += [me, me, me]
    with sql_errors("listing goals"):
        found = rows(db.conn.execute(
            "SELECT g.lineage, g.container_did, g.name AS title, g.description, g.status, g.priority, g.creator_did,"
            " g.participants, g.audience, g.forks, g.parent_goal, g.timestamp_ms,"
            " (SELECT count(*) FROM tasks t WHERE t.goal_lineage = g.lineage) AS tasks_total,"
            f" (SELECT count(*) FROM tasks t WHERE t.goal_lineage = g.lineage AND t.{_NOT_DONE}) AS tasks_open"
            f" FROM goals g WHERE {' AND '.join(where)} ORDER BY g.priority DESC, g.timestamp_ms DESC LIMIT 10000",
            params))
    who = names(db, [r["creator_did"] for r in found])
    for r in found:
        r["participants"] = _json(r["participants"], [])
        r["creator_name"] = who.get(r["creator_did"])
    return found


def _task_fields(r: dict) -> dict:
    for k, default in (("assigned_to", []), ("depends_on", []), ("tags", [])):
        r[k] = _json(r.get(k), default)
    return r


_TASK_COLUMNS = ("t.lineage, t.container_did, t.name AS title, t.status, t.priority, t.progress, t.assigned_to,"
                 " t.creator_did, t.author_did, t.goal_lineage, t.parent_task, t.depends_on, t.deadline_ms,"
                 " t.next_check_ms, t.due_at_ms, t.overdue_at_ms, t.check_grace_s, t.delegation_rule, t.reason,"
                 " t.forks, t.tags, t.timestamp_ms")


def task_list(db: Database, *, goal: str | None = None, me: str | None = None, status: str | None = None) -> list[dict]:
    """GMP tasks (not the local-only ones), newest first; ``me``: created or held by that DID."""
    if status is not None and status not in TASK_STATUSES:
        raise GmpError("bad_status", f"a task's status is one of {', '.join(TASK_STATUSES)}")
    where, params = ["t.lineage IS NOT NULL"], []
    if goal:
        where.append("t.goal_lineage = ?")
        params.append(resolve(db, goal, "goal"))
    if status:
        where.append("t.status = ?")
        params.append(status)
    if me:
        where.append("(t.creator_did = ? OR EXISTS (SELECT 1 FROM json_each(t.assigned_to) WHERE value = ?))")
        params += [me, me]
    with sql_errors("listing tasks"):
        found = [_task_fields(r) for r in rows(db.conn.execute(
            f"SELECT {_TASK_COLUMNS}, t.description FROM tasks t WHERE {' AND '.join(where)}"
            " ORDER BY t.timestamp_ms DESC LIMIT 10000", params))]
    who = names(db, [d for r in found for d in r["assigned_to"]])
    for r in found:
        r["assignee_names"] = [who.get(d) for d in r["assigned_to"]]
    return found


# --- due states -------------------------------------------------------------------------------------


def open_offers(db: Database, lineages: list[str], now_ms: int) -> dict[str, list[dict]]:
    """Open offers per task lineage: counted, unexpired, not yet taken (no task version cites an
    acceptance of it), of a task not held or finished here (a creator's node and its agent may
    both offer a task taken back: once one offer is taken the other is moot), with the candidates
    that have not refused it (none left: closed)."""
    if not lineages:
        return {}
    out: dict[str, list[dict]] = {}
    for i in range(0, len(lineages), 500):
        part = lineages[i:i + 500]
        found = db.conn.execute(
            "SELECT e.lineage, e.did, e.candidates, e.expires_ms, e.timestamp_ms FROM gmp_entries e WHERE e.kind ="
            f" 'delegation' AND e.counted = 1 AND e.expires_ms > ? AND e.lineage IN ({','.join('?' * len(part))})"
            " AND NOT EXISTS (SELECT 1 FROM gmp_entries a JOIN container_links l ON l.target_did = a.did AND"
            " l.relation = 'agreed' WHERE a.offer = e.did AND a.kind = 'acceptance')"
            f" AND NOT EXISTS (SELECT 1 FROM tasks t WHERE t.lineage = e.lineage AND NOT (t.{_NOT_DONE}"
            " AND coalesce(json_array_length(t.assigned_to), 0) = 0))", (now_ms, *part)).fetchall()
        refused: dict[str, set[str]] = {}
        dids = [r[1] for r in found]
        for j in range(0, len(dids), 500):
            for offer, signer in db.conn.execute(
                    f"SELECT offer, signer FROM gmp_entries WHERE kind = 'refusal' AND counted = 1 AND offer IN"
                    f" ({','.join('?' * len(dids[j:j + 500]))})", dids[j:j + 500]):
                refused.setdefault(offer, set()).add(signer)
        for lin, did, cands, expires, ts in found:
            left = [c for c in _json(cands, []) if c not in refused.get(did, ())]
            if left:
                out.setdefault(lin, []).append({"did": did, "candidates": left, "expires_ms": expires,
                                                "timestamp_ms": ts})
    return out


def due_of(row: dict, *, now_ms: int, liveness: dict[str, str], offers: list[dict], goal_status: str | None) -> str | None:
    """The due state of one task row (``gmp.view.due_state``): what it needs, or None."""
    return view.due_state(status=row["status"], assigned_to=tuple(row["assigned_to"]), due_at_ms=row.get("due_at_ms"),
                          overdue_at_ms=row.get("overdue_at_ms"), liveness=liveness, offer_open=bool(offers),
                          forks=row.get("forks") or 0, goal_status=goal_status,
                          rule=row.get("delegation_rule") or "creator", now_ms=now_ms)


def task_due(db: Database, now_ms: int, *, liveness: dict[str, str] | None = None, include_all: bool = False) -> list[dict]:
    """Tasks that need a check now: unassigned, holder dead, overdue, due, offer open, needing a
    decision, or under a closed goal (``include_all``: every open task, with its state, forks
    included: a fork whose holder is on time is not looked for by the quick path)."""
    liveness = dict(liveness or {})
    dead = sorted(d for d, s in liveness.items() if s == "dead")
    open_rows = f"t.{_NOT_DONE} AND t.lineage IS NOT NULL"
    if include_all:
        picked, params = f"SELECT t.id FROM tasks t WHERE {open_rows}", []
    else:  # each part a range scan on an index (the open-task due index, goals, holders), never the whole table
        parts = [f"SELECT t.id FROM tasks t WHERE {open_rows} AND t.due_at_ms <= ?",
                 f"SELECT t.id FROM tasks t WHERE {open_rows} AND t.due_at_ms IS NULL",  # nobody holds it
                 f"SELECT t.id FROM goals g CROSS JOIN tasks t ON t.goal_lineage = g.lineage WHERE g.status IN"
                 f" {GOAL_TERMINAL} AND t.{_NOT_DONE}"]  # CROSS: closed goals first, then their tasks
        params = [now_ms]
        if dead:
            parts.append(f"SELECT t.id FROM task_holders h CROSS JOIN tasks t ON t.lineage = h.lineage WHERE h.assignee IN"
                         f" ({','.join('?' * len(dead))}) AND h.to_version IS NULL AND {open_rows}")
            params += dead
        picked = " UNION ".join(parts)
    with sql_errors("listing due tasks"):
        found = [_task_fields(r) for r in rows(db.conn.execute(
            f"SELECT {_TASK_COLUMNS}, t.description, (SELECT g.status FROM goals g WHERE g.lineage = t.goal_lineage)"
            " AS goal_status"
            f" FROM tasks t WHERE t.id IN ({picked}) ORDER BY coalesce(t.overdue_at_ms, 0), t.timestamp_ms"
            " LIMIT 10000", params))]
        offers = open_offers(db, [r["lineage"] for r in found], now_ms)
    who = names(db, [d for r in found for d in r["assigned_to"]]
                + [c for os_ in offers.values() for o in os_ for c in o["candidates"]])
    out = []
    for r in found:
        state = due_of(r, now_ms=now_ms, liveness=liveness, offers=offers.get(r["lineage"], []),
                       goal_status=r["goal_status"])
        if state is None and not include_all:
            continue
        r["due"] = state
        r["assignee_names"] = [who.get(d) for d in r["assigned_to"]]
        r["dead"] = [d for d in r["assigned_to"] if liveness.get(d) == "dead"]
        r["offers"] = [{**o, "candidate_names": [who.get(c) for c in o["candidates"]]}
                       for o in offers.get(r["lineage"], [])]
        out.append(r)
    return out


def open_tasks_of(db: Database, me: str, now_ms: int, limit: int = 20) -> dict:
    """The open tasks ``me`` created or holds, held ones first, each with its due state and
    its assignees' names (context 3; the offers to ``me``: ``gmp.waiting``)."""
    with sql_errors("reading the agent's tasks"):
        found = [_task_fields(r) for r in rows(db.conn.execute(
            f"SELECT {_TASK_COLUMNS}, t.description, (SELECT g.status FROM goals g WHERE g.lineage = t.goal_lineage)"
            " AS goal_status"
            f" FROM tasks t WHERE t.lineage IS NOT NULL AND t.{_NOT_DONE} AND (t.creator_did = ? OR EXISTS"
            " (SELECT 1 FROM json_each(t.assigned_to) WHERE value = ?)) ORDER BY t.timestamp_ms DESC LIMIT ?",
            (me, me, limit * 4)))]
        offers = open_offers(db, [r["lineage"] for r in found], now_ms)
    who = names(db, [d for r in found for d in r["assigned_to"]])
    for r in found:
        r["due"] = due_of(r, now_ms=now_ms, liveness={}, offers=offers.get(r["lineage"], []),
                          goal_status=r["goal_status"])
        r["assignee_names"] = [who.get(d) for d in r["assigned_to"]]
    found.sort(key=lambda r: (me not in r["assigned_to"], r["due"] is None))
    return {"tasks": found[:limit]}


# --- one goal, one task -------------------------------------------------------------------------------


def goal_show(db: Database, *, goal: str, now_ms: int, liveness: dict[str, str] | None = None) -> dict:
    """A goal with its tasks as a tree (subtasks under their parent), each with its due state and
    the names of its assignees."""
    lin = resolve(db, goal, "goal")
    g = goal_row(db, lin)
    with sql_errors("reading a goal's tasks"):
        tasks = [_task_fields(r) for r in rows(db.conn.execute(
            f"SELECT {_TASK_COLUMNS} FROM tasks t WHERE t.goal_lineage = ?"  # in the order they were created
            " ORDER BY (SELECT c.timestamp_ms FROM containers c WHERE c.did = t.lineage), t.lineage", (lin,)))]
        offers = open_offers(db, [t["lineage"] for t in tasks], now_ms)
        dead_since = dict(db.conn.execute(
            "SELECT assignee, max(until_ms) FROM task_holders WHERE ended = 'reassigned_dead' AND lineage IN"
            f" (SELECT lineage FROM tasks WHERE goal_lineage = ?) GROUP BY assignee", (lin,)).fetchall())
    who = names(db, [g["creator_did"], *g["participants"], *(d for t in tasks for d in t["assigned_to"]),
                     *(c for os_ in offers.values() for o in os_ for c in o["candidates"])])
    by_parent: dict[str | None, list[dict]] = {}
    known = {t["lineage"] for t in tasks}
    for t in tasks:
        t["due"] = due_of(t, now_ms=now_ms, liveness=liveness or {}, offers=offers.get(t["lineage"], []),
                          goal_status=g["status"])
        t["assignee_names"] = [who.get(d) for d in t["assigned_to"]]
        t["offers"] = [{**o, "candidate_names": [who.get(c) for c in o["candidates"]]}
                       for o in offers.get(t["lineage"], [])]
        t["subtasks"] = []
        by_parent.setdefault(t["parent_task"] if t["parent_task"] in known else None, []).append(t)
    for t in tasks:
        t["subtasks"] = by_parent.get(t["lineage"], [])
    done = sum(1 for t in tasks if t["status"] == "completed")
    return {"lineage": lin, "container_did": g["container_did"], "title": g["name"], "status": g["status"],
            "priority": g["priority"], "description": g.get("description"), "creator_did": g["creator_did"],
            "creator_name": who.get(g["creator_did"]), "participants": g["participants"],
            "participant_names": [who.get(d) for d in g["participants"]], "audience": g.get("audience"),
            "forks": g.get("forks") or 0, "tags": g["tags"], "success_criteria": g["success_criteria"],
            "constraints": g["constraints"], "tasks_total": len(tasks), "tasks_completed": done,
            "dead_since": dead_since, "tasks": by_parent.get(None, []), "names": who}


def task_show(db: Database, *, task: str, now_ms: int) -> dict:
    """A task's shown version, its heads when forked, who held it and why it moved, and every
    workflow entry about it with whether it counts (and why not)."""
    lin = resolve(db, task, "task")
    r = task_row(db, lin)
    c = shown(db, r)
    with sql_errors("reading a task's history"):
        heads = lineage_index.heads(db.conn, lin)
        holders = rows(db.conn.execute(  # ended_by: who signed the version that ended it (a steward's takeover)
            "SELECT h.assignee, h.from_version, h.to_version, h.since_ms, h.until_ms, h.ended, c.sender_did AS"
            " ended_by FROM task_holders h LEFT JOIN containers c ON c.did = h.to_version WHERE h.lineage = ?"
            " ORDER BY h.since_ms, h.assignee", (lin,)))
        entries = rows(db.conn.execute(
            "SELECT did, kind, signer, counted, reason, task_version, progress, offer, candidates, expires_ms,"
            " timestamp_ms, summary FROM gmp_entries WHERE lineage = ? ORDER BY timestamp_ms, did", (lin,)))
        goal_status = db.conn.execute("SELECT status FROM goals WHERE lineage = ?", (r["goal_lineage"],)).fetchone()
        offers = open_offers(db, [lin], now_ms).get(lin, [])
    for e in entries:
        e["candidates"] = _json(e["candidates"], [])
        e["counted"] = bool(e["counted"])
    who = names(db, [r["creator_did"], *r["assigned_to"], *(h["assignee"] for h in holders),
                     *(h["ended_by"] for h in holders if h["ended_by"]),
                     *(e["signer"] for e in entries), *(d for e in entries for d in e["candidates"])])
    p = c.payload if isinstance(c.payload, dict) else {}
    result = result_of(db, r)
    review = reviewed(db, lin, r["container_did"]) if result else None
    return {"lineage": lin, "container_did": r["container_did"], "title": r["name"], "status": r["status"],
            "description": r.get("description"), "notes": p.get("notes"), "goal_lineage": r["goal_lineage"],
            "parent_task": r["parent_task"], "depends_on": r["depends_on"], "creator_did": r["creator_did"],
            "author_did": r["author_did"], "assigned_to": r["assigned_to"], "progress": r["progress"],
            "priority": r["priority"], "tags": r["tags"], "deadline_ms": r["deadline_ms"],
            "next_check_ms": r["next_check_ms"], "due_at_ms": r["due_at_ms"], "overdue_at_ms": r["overdue_at_ms"],
            "check_grace_s": r["check_grace_s"], "delegation_rule": r["delegation_rule"], "reason": r["reason"],
            "due": due_of(r, now_ms=now_ms, liveness={}, offers=offers, goal_status=goal_status[0] if goal_status else None),
            "forks": r["forks"] or 0, "heads": heads, "holders": holders, "entries": entries, "names": who,
            "timestamp": format_ms(c.timestamp_ms), "result": result, "review": review}


def reviewed(db, lineage: str, version: str) -> dict | None:
    """The review of one task version, or None."""
    with sql_errors("reading a review"):
        row = db.conn.execute("SELECT verdict, reason, actor, at_ms FROM task_reviews WHERE lineage = ? AND"
                              " version = ?", (lineage, version)).fetchone()
    return None if row is None else dict(zip(("verdict", "reason", "actor", "at_ms"), row))


def result_of(db, row: dict) -> dict | None:
    """What a finished task (completed or failed) gave: its status, the summary its holder wrote
    (the finishing version's notes), who finished it and when; None for an open task."""
    if row["status"] not in ("completed", "failed"):
        return None
    c = shown(db, row)
    p = c.payload if isinstance(c.payload, dict) else {}
    return {"status": row["status"], "summary": p.get("notes"), "by": c.sender_did, "at_ms": c.timestamp_ms,
            "version": c.did}


def decided_basis(db, lineage: str, basis) -> tuple[list[str], str, tuple[str, ...]]:
    """The candidate an approved CogConsensus result on a nomination of this task selects, the
    result's DID, and what a candidate needs to check it (nomination, votes, result)."""
    from meshnode.domain.consensus.cogvote import ConsensusError
    from meshnode.domain.consensus.result import read_claim

    try:
        did = short_ids.resolve_container(db, str(basis), "result")
    except short_ids.ShortIdError as exc:
        raise GmpError("unknown_result", exc.reason) from None
    result = db.load_container(did, now_ms=2**62)
    if result is None:
        raise GmpError("unknown_result", f"no consensus_result {did} here")
    try:
        claim = read_claim(result)
    except ConsensusError as exc:
        raise GmpError("bad_basis", exc.reason) from None
    if claim.state != "approved":
        raise GmpError("bad_basis", f"the result's state is {claim.state}, not approved")
    with sql_errors("reading a nomination"):
        n = db.conn.execute("SELECT candidates FROM gmp_entries WHERE did = ? AND lineage = ? AND kind = 'nomination'",
                            (claim.target, lineage)).fetchone()
    nomination = db.load_container(claim.target, now_ms=2**62) if n else None
    if nomination is None or nomination.payload.get("nomination") is not True:
        raise GmpError("bad_basis", f"result {did} is not about a nomination for task {lineage}")
    return list(nomination.payload["candidates"]), did, (claim.target, *claim.vote_dids, did)
