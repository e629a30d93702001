"""GMP goals, tasks and workflow entries as views (protocols/gmp.md sections 5, 7, 8, 9).

Runs for admitted goal/task/workflow_entry 1.1 containers only (``store_admission.admit`` judged
them first), through the store's hooks (``gmp.store_hooks``). Goal and task versions join the lineage index (``store.lineage``); each lineage
is one ``goals``/``tasks`` row drawn from its shown head (``gmp.view.shown_head``: no trust,
so every node shows the same one) with its fork count, upserted by ``lineage`` so the local
columns (pinned, repl_*, llm_id) are never touched. ``task_holders`` follows the path to the
shown head (``gmp.view.path_to``); ``gmp_entries`` keeps every entry with whether it counts and why not, counted
again whenever something of its lineage arrives (a named version may arrive after it).
``gmp_members`` maps every container to its goal and ``gmp_audience`` lists who is given
the goal (``store.sharing``): its creator, the participants of the shown goal version,
everyone ever assigned to one of its tasks, and the candidates of counted offers whose
``expires_at`` is not before the newest ``head.timestamp`` among the goal's containers
(a signed time every holder of the same containers agrees on, not the local clock).
"""

from __future__ import annotations

import json
import sqlite3
import time
from typing import Sequence

from meshnode.base.container import Container, parse_ms
from meshnode.base.container.gmp_classes import KIND_FIELDS
from meshnode.domain.gmp import view
from meshnode.records.gmp.store_admission import DbHeld
from meshnode.domain.gmp.task_state import TaskState, task_state
from meshnode.store import lineage, views_cogsync

GOAL_REL = (("in_reply_to", "subgoal"), ("depends_on", "dependency"), ("see_also", "related"))
VERSIONED = ("goal", "task")  # their versions join the store's lineage index (at class_version 1.1 only)


def refresh(conn: sqlite3.Connection, c: Container, held: DbHeld | None = None) -> None:
    """Index an admitted GMP container and redraw the rows it changes."""
    held = held or DbHeld(conn)
    held.add(c)
    if c.cls in VERSIONED:
        redraw, gone = lineage.index_version(conn, c)
        table = "goals" if c.cls == "goal" else "tasks"
        for root in gone:
            conn.execute(f"UPDATE {table} SET lineage = NULL, container_did = NULL WHERE lineage = ?", (root,))
        root = lineage.root_of(conn, c.did) or c.did
        goal = root if c.cls == "goal" else _lineage(held, c.related["in_reply_to"][0])
        _member(conn, c, goal)
        if c.cls == "task":
            _assignees(conn, goal, c.payload.get("assigned_to", []))
        for r in redraw:
            if c.cls == "goal":
                _draw_goal(conn, r, held)
            else:
                _draw_task(conn, r, held, c)
        _audience(conn, goal, c.timestamp_ms, full=c.cls == "goal")
        return
    about = _lineage(held, c.related["in_reply_to"][0])
    kind = conn.execute("SELECT class FROM container_versions WHERE did = ?", (about,)).fetchone()
    if kind and kind[0] == "goal":
        goal = about
    else:
        row = conn.execute("SELECT goal_lineage FROM gmp_members WHERE did = ?", (about,)).fetchone()
        goal = row[0] if row else about
    _member(conn, c, goal)
    _entry(conn, c, about, held)
    _recount(conn, about, held, naming=c.did)  # answers to an offer that came after them
    if kind and kind[0] == "task" and c.payload.get("entry_type") == "progress":
        _show_progress(conn, about, held)
    _audience(conn, goal, c.timestamp_ms, full=False)
    if c.payload["entry_type"] == "delegation" and c.payload.get("nomination") is not True:  # an offer's
        # candidates join the audience while it is counted and open (a nomination's do not)
        conn.execute(
            "INSERT OR IGNORE INTO gmp_audience (goal_lineage, did) SELECT :goal, j.value FROM gmp_entries e,"
            " json_each(e.candidates) j WHERE e.did = :did AND e.counted = 1 AND e.expires_ms >="
            " (SELECT newest_ms FROM gmp_goal_clock WHERE goal_lineage = :goal)", {"goal": goal, "did": c.did})


def _lineage(held: DbHeld, did: str) -> str:
    """A named goal or task, as its lineage id (it should already be one)."""
    return held.root(did) or did


def _member(conn: sqlite3.Connection, c: Container, goal: str) -> None:
    conn.execute("INSERT OR REPLACE INTO gmp_members (did, goal_lineage) VALUES (?, ?)", (c.did, goal))


def _assignees(conn: sqlite3.Connection, goal: str, dids: Sequence[str]) -> None:
    rows = [(goal, d) for d in dids]
    conn.executemany("INSERT OR IGNORE INTO gmp_assignees (goal_lineage, did) VALUES (?, ?)", rows)
    conn.executemany("INSERT OR IGNORE INTO gmp_audience (goal_lineage, did) VALUES (?, ?)", rows)


def _sql_time(ms: int) -> str:
    """The format of SQLite's CURRENT_TIMESTAMP, which local rows' created_at use."""
    return time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime(ms // 1000))


def _heads(conn: sqlite3.Connection, root: str, held: DbHeld) -> tuple[Container, Container, int]:
    """(first version, shown head, forks) of a lineage."""
    first = held.get(root)
    heads = [h for h in (held.get(d) for d in sorted(lineage.heads(conn, root))) if h is not None]
    shown = view.shown_head(heads, first.sender_did)
    return first, shown, len(heads) - 1


# --- goals ----------------------------------------------------------------------------------

def _draw_goal(conn: sqlite3.Connection, root: str, held: DbHeld) -> None:
    first, shown, forks = _heads(conn, root, held)
    f = view.goal_fields(shown, first.sender_did)
    parent = (first.related.get("in_reply_to") or [None])[0]  # fixed by the first version
    conn.execute(
        """
        INSERT INTO goals (name, description, tags, status, priority, constraints, success_criteria, created_at,
                           updated_at, lineage, container_did, author_did, creator_did, forks, audience,
                           participants, parent_goal, timestamp_ms)
        VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
        ON CONFLICT (lineage) DO UPDATE SET name = excluded.name, description = excluded.description,
            tags = excluded.tags, status = excluded.status, priority = excluded.priority,
            constraints = excluded.constraints, success_criteria = excluded.success_criteria,
            updated_at = excluded.updated_at, container_did = excluded.container_did,
            author_did = excluded.author_did, creator_did = excluded.creator_did, forks = excluded.forks,
            audience = excluded.audience, participants = excluded.participants,
            parent_goal = excluded.parent_goal, timestamp_ms = excluded.timestamp_ms
        """,
        (f["title"], f["description"], json.dumps(f["tags"]), f["status"], f["priority"], json.dumps(f["constraints"]),
         json.dumps(f["success_criteria"]), _sql_time(first.timestamp_ms), _sql_time(shown.timestamp_ms), root,
         shown.did, shown.sender_did, first.sender_did, forks, f["audience"], json.dumps(f["participants"]),
         _lineage(held, parent) if parent else None, shown.timestamp_ms))
    gid = conn.execute("SELECT id FROM goals WHERE lineage = ?", (root,)).fetchone()[0]
    conn.execute("UPDATE tasks SET goal_id = ? WHERE goal_lineage = ? AND goal_id IS NOT ?", (gid, root, gid))
    _goal_links(conn, gid, shown, held)
    naming = conn.execute(  # goals drawn before this one arrived may name it
        "SELECT DISTINCT g.id, g.container_did FROM container_links l JOIN goals g ON g.container_did = l.source_did"
        " WHERE l.target_did = ? AND l.relation IN ('in_reply_to', 'depends_on', 'see_also') AND g.id != ?",
        (root, gid)).fetchall()
    for other, did in naming:
        version = held.get(did)
        if version is not None:
            _goal_links(conn, other, version, held)


def _goal_links(conn: sqlite3.Connection, gid: int, shown: Container, held: DbHeld) -> None:
    """goal_links rows naming ``gid`` as the child, from its shown version's ``related``."""
    conn.execute("DELETE FROM goal_links WHERE child_goal_id = ?", (gid,))
    for relation, kind in GOAL_REL:
        for target in shown.related.get(relation, []):
            row = conn.execute("SELECT id FROM goals WHERE lineage = ?", (_lineage(held, target),)).fetchone()
            if row and row[0] != gid:
                conn.execute("INSERT OR IGNORE INTO goal_links (parent_goal_id, child_goal_id, relation_type)"
                             " VALUES (?, ?, ?)", (row[0], gid, kind))


# --- tasks ----------------------------------------------------------------------------------

def _draw_task(conn: sqlite3.Connection, root: str, held: DbHeld, new: Container | None = None) -> None:
    """The task row and its holders. ``new``: the version just indexed; when it is the shown head and
    its one parent was, the holders are extended by it (the path is the old one plus it) instead of
    walking the whole path again, which made every version cost O(versions)."""
    was = conn.execute("SELECT container_did FROM tasks WHERE lineage = ?", (root,)).fetchone()
    first, shown, forks = _heads(conn, root, held)
    creator = first.sender_did
    p, state = shown.payload, task_state(shown)
    links = first.related.get("in_reply_to", [])
    goal = _lineage(held, links[0])
    _recount(conn, root, held, unresolved=True)
    progress = _progress(conn, root, shown, state)
    conn.execute(
        """
        INSERT INTO tasks (goal_id, name, description, tags, status, priority, created_at, updated_at, lineage,
                           container_did, author_did, creator_did, forks, goal_lineage, parent_task, depends_on,
                           assigned_to, progress, deadline_ms, next_check_ms, check_grace_s, due_at_ms,
                           overdue_at_ms, delegation_rule, reason, timestamp_ms)
        VALUES ((SELECT id FROM goals WHERE lineage = ?), ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?,
                ?, ?, ?, ?, ?)
        ON CONFLICT (lineage) DO UPDATE SET goal_id = excluded.goal_id, name = excluded.name,
            description = excluded.description, tags = excluded.tags, status = excluded.status,
            priority = excluded.priority, updated_at = excluded.updated_at, container_did = excluded.container_did,
            author_did = excluded.author_did, creator_did = excluded.creator_did, forks = excluded.forks,
            goal_lineage = excluded.goal_lineage, parent_task = excluded.parent_task,
            depends_on = excluded.depends_on, assigned_to = excluded.assigned_to, progress = excluded.progress,
            deadline_ms = excluded.deadline_ms, next_check_ms = excluded.next_check_ms,
            check_grace_s = excluded.check_grace_s, due_at_ms = excluded.due_at_ms,
            overdue_at_ms = excluded.overdue_at_ms, delegation_rule = excluded.delegation_rule,
            reason = excluded.reason, timestamp_ms = excluded.timestamp_ms
        """,
        (goal, p["title"], p.get("description"), json.dumps(shown.head.get("tags", [])), state.status,
         p.get("priority", 0), _sql_time(first.timestamp_ms), _sql_time(shown.timestamp_ms), root, shown.did,
         shown.sender_did, creator, forks, goal, _lineage(held, links[1]) if len(links) > 1 else None,
         json.dumps([_lineage(held, d) for d in shown.related.get("depends_on", [])]),
         json.dumps(list(state.assigned_to)), progress, state.deadline_ms, state.next_check_ms,
         state.grace_ms // 1000, state.due_at_ms, state.overdue_at_ms, state.rule, state.reason, shown.timestamp_ms))
    _holders(conn, root, shown, held, extend=new is not None and new.did == shown.did and was is not None
             and was[0] is not None and list(new.related.get("previous_version", ())) == [was[0]])


def _holders(conn: sqlite3.Connection, root: str, shown: Container, held: DbHeld, extend: bool) -> None:
    """task_holders along the path to ``shown``: drawn again, or (``extend``) the stored spans of the
    path to its parent extended by ``shown``."""
    insert = ("INSERT OR REPLACE INTO task_holders (lineage, assignee, from_version, to_version, since_ms, until_ms,"
              " ended) VALUES (?, ?, ?, ?, ?, ?, ?)")
    if not extend:
        conn.execute("DELETE FROM task_holders WHERE lineage = ?", (root,))
        spans = view.holder_spans(view.path_to(shown, held))
    else:
        open_ = {who: (start, since) for who, start, since in conn.execute(
            "SELECT assignee, from_version, since_ms FROM task_holders WHERE lineage = ? AND to_version IS NULL",
            (root,))}
        ended = view.holder_step(open_, shown)
        conn.execute("DELETE FROM task_holders WHERE lineage = ? AND to_version IS NULL", (root,))
        spans = ended + [view.HolderSpan(who, start, None, since, None, None) for who, (start, since) in open_.items()]
    conn.executemany(insert, [(root, s.assignee, s.from_version, s.to_version, s.since_ms, s.until_ms, s.ended)
                              for s in spans])


def _show_progress(conn: sqlite3.Connection, root: str, held: DbHeld) -> None:
    row = conn.execute("SELECT container_did FROM tasks WHERE lineage = ?", (root,)).fetchone()
    shown = held.get(row[0]) if row and row[0] else None
    if shown is not None:
        conn.execute("UPDATE tasks SET progress = ? WHERE lineage = ?",
                     (_progress(conn, root, shown, task_state(shown)), root))


def _progress(conn: sqlite3.Connection, root: str, shown: Container, state: TaskState) -> float | None:
    """The newer of the shown version's progress and the counted progress entries by its assignees."""
    best = (shown.timestamp_ms, state.progress) if state.progress is not None else None
    if state.assigned_to:
        marks = ",".join("?" * len(state.assigned_to))
        row = conn.execute(
            f"SELECT timestamp_ms, progress FROM gmp_entries WHERE lineage = ? AND kind = 'progress' AND counted = 1"
            f" AND signer IN ({marks}) ORDER BY timestamp_ms DESC, did DESC LIMIT 1",
            (root, *state.assigned_to)).fetchone()
        if row and (best is None or row[0] > best[0]):
            best = (row[0], row[1])
    return best[1] if best else None


# --- entries --------------------------------------------------------------------------------

def _entry(conn: sqlite3.Connection, c: Container, about: str, held: DbHeld) -> None:
    """The entry's row. Only the fields its kind defines are read (the schema checked those); a kind
    may carry others of any type (unknown fields are allowed), which must not reach the columns."""
    p, kind = c.payload, c.payload["entry_type"]
    own = KIND_FIELDS.get(kind, {})
    counted, why = view.counts(c, held)

    def field(name: str):
        return p.get(name) if name in own else None

    offer = field("offer") or field("received")
    if kind == "delegation" and p.get("nomination") is True:
        kind = "nomination"  # a proposal to vote on, not an offer: nobody answers it (gmp.md 6.3)
    conn.execute(
        "INSERT OR REPLACE INTO gmp_entries (did, lineage, kind, signer, counted, reason, task_version, progress,"
        " offer, candidates, expires_ms, timestamp_ms, summary) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        (c.did, about, kind, c.sender_did, int(counted), why, field("task_version"), field("progress"), offer,
         json.dumps(p["candidates"]) if "candidates" in own else None,
         parse_ms(p["expires_at"], "expires_at") if "expires_at" in own else None, c.timestamp_ms, p.get("summary")))


# Why an entry may not count only until the version it names is in the lineage index: admission
# holds an entry until what it names is held, so on arrival it is counted for good, but a full
# rebuild (containers in arrival order) or an eviction can index a version after entries naming it.
UNRESOLVED = ("no_version", "not_recipient", "not_participant")


def _recount(conn: sqlite3.Connection, about: str, held: DbHeld, naming: str | None = None,
             unresolved: bool = False) -> None:
    """Count a lineage's entries again (or only those naming ``naming`` as their offer or receipt,
    or only those counted out for a version not indexed then, ``unresolved``): what they name may
    have been indexed after them. Not every entry on every version: anyone may add entries to a
    lineage, and decoding them all per version made each version cost O(entries)."""
    sql = "SELECT did, counted, reason FROM gmp_entries WHERE lineage = ?"
    params: tuple = (about,)
    if naming:
        sql, params = sql + " AND offer = ?", (about, naming)
    elif unresolved:
        sql += f" AND reason IN ({','.join('?' * len(UNRESOLVED))})"
        params = (about, *UNRESOLVED)
    for did, counted, why in conn.execute(sql, params).fetchall():
        entry = held.get(did)
        if entry is None:
            continue
        now = view.counts(entry, held)
        if (bool(counted), why) != (now[0], now[1]):
            conn.execute("UPDATE gmp_entries SET counted = ?, reason = ? WHERE did = ?", (int(now[0]), now[1], did))


# --- audience -------------------------------------------------------------------------------

def _audience(conn: sqlite3.Connection, goal: str, ts: int, *, full: bool) -> None:
    """Advance the goal's clock to ``ts``; draw its audience again when ``full`` or an offer expired."""
    row = conn.execute("SELECT newest_ms FROM gmp_goal_clock WHERE goal_lineage = ?", (goal,)).fetchone()
    if row is None or ts > row[0]:
        conn.execute("INSERT OR REPLACE INTO gmp_goal_clock (goal_lineage, newest_ms) VALUES (?, ?)", (goal, ts))
        if row is not None and not full:
            full = conn.execute(
                "SELECT 1 FROM gmp_entries e JOIN gmp_members m ON m.did = e.did WHERE e.kind = 'delegation'"
                " AND e.expires_ms >= ? AND e.expires_ms < ? AND m.goal_lineage = ? LIMIT 1",
                (row[0], ts, goal)).fetchone() is not None
    if full:
        draw_audience(conn, goal)


def draw_audience(conn: sqlite3.Connection, goal: str) -> None:
    """gmp_audience of one goal from scratch (see the module doc)."""
    conn.execute("DELETE FROM gmp_audience WHERE goal_lineage = ?", (goal,))
    clock = conn.execute("SELECT newest_ms FROM gmp_goal_clock WHERE goal_lineage = ?", (goal,)).fetchone()
    conn.execute(
        """
        INSERT OR IGNORE INTO gmp_audience (goal_lineage, did)
        SELECT :goal, creator_did FROM goals WHERE lineage = :goal AND creator_did IS NOT NULL
        UNION SELECT :goal, j.value FROM goals g, json_each(g.participants) j
              WHERE g.lineage = :goal AND json_valid(g.participants)
        UNION SELECT :goal, did FROM gmp_assignees WHERE goal_lineage = :goal
        UNION SELECT :goal, j.value FROM gmp_members m JOIN gmp_entries e ON e.did = m.did, json_each(e.candidates) j
              WHERE m.goal_lineage = :goal AND e.kind = 'delegation' AND e.counted = 1 AND e.expires_ms >= :now
        """, {"goal": goal, "now": clock[0] if clock else 0})


DERIVED = ("gmp_entries", "task_holders", "gmp_audience", "gmp_assignees", "gmp_goal_clock", "gmp_members")


def clear(conn: sqlite3.Connection) -> None:
    """Before a full rebuild: drop what is derived from GMP containers alone (goal and task rows stay,
    with their local columns, and are upserted again)."""
    for table in DERIVED:
        conn.execute(f"DELETE FROM {table}")
    conn.execute("UPDATE tasks SET container_did = NULL WHERE lineage IN (SELECT root FROM container_versions"
                 " WHERE class = 'task')")  # so the first version drawn again draws its holders whole
    conn.execute("DELETE FROM container_versions WHERE class IN ('goal', 'task') AND did IN"
                 " (SELECT did FROM containers WHERE class_version = '1.1')")


def recount(conn: sqlite3.Connection, about: str) -> None:
    """Every entry of a lineage counted again (after an eviction took versions or entries it names)."""
    _recount(conn, about, DbHeld(conn))


def rebuild_all(conn: sqlite3.Connection) -> None:
    """After a full rebuild (containers in arrival order): every goal's audience drawn again."""
    for (goal,) in conn.execute("SELECT DISTINCT goal_lineage FROM gmp_members").fetchall():
        draw_audience(conn, goal)


# --- removal (quota eviction: ``store.removal``) --------------------------------------------


class Removal:
    """GMP 1.1 containers leaving the store take their entry and member rows with them; once all
    went, their lineages are indexed and drawn again from what remains, the entries naming them
    counted again and their goals' audiences drawn again."""

    def __init__(self, conn: sqlite3.Connection):
        self.conn = conn
        self.lineages: dict[str, str] = {}  # GMP lineage root -> class
        self.goals: set[str] = set()  # goals whose audience is drawn again
        self.recount: set[str] = set()  # lineages whose entries may name what goes (their counting changes)

    def take(self, did: str, cls: str) -> None:
        conn = self.conn
        self.goals.update(r[0] for r in conn.execute("SELECT goal_lineage FROM gmp_members WHERE did = ?", (did,)))
        root = lineage.root_of(conn, did)
        if root is not None:
            self.lineages[root] = cls
        self.recount.update(r[0] for r in conn.execute("SELECT lineage FROM gmp_entries WHERE did = ?", (did,)))
        conn.execute("DELETE FROM gmp_entries WHERE did = ?", (did,))
        conn.execute("DELETE FROM gmp_members WHERE did = ?", (did,))

    def finish(self) -> None:
        for root, cls in self.lineages.items():
            _redraw(self.conn, root, cls)
        for root in sorted(self.recount | set(self.lineages)):
            recount(self.conn, root)
        for goal in self.goals:
            draw_audience(self.conn, goal)


def _redraw(conn: sqlite3.Connection, root: str, cls: str) -> None:
    """A GMP lineage indexed and drawn again from its remaining versions, in arrival order.
    With none left, its row goes unless local rows still point at it (then it stays as it was)."""
    left = [r[0] for r in conn.execute("SELECT v.did FROM container_versions v JOIN containers c ON c.did = v.did"
                                       " WHERE v.root = ? ORDER BY c.rowid", (root,))]
    conn.executemany("DELETE FROM container_versions WHERE did = ?", [(d,) for d in left])
    if not left:
        conn.execute("DELETE FROM task_holders WHERE lineage = ?", (root,))
        if cls == "task":
            conn.execute("DELETE FROM tasks WHERE lineage = ? AND NOT EXISTS (SELECT 1 FROM llm_recent_responses r"
                         " WHERE r.task_id = tasks.id)", (root,))
        else:
            conn.execute("DELETE FROM goal_links WHERE child_goal_id IN (SELECT id FROM goals WHERE lineage = ?)",
                         (root,))
            conn.execute("DELETE FROM goals WHERE lineage = ? AND NOT EXISTS (SELECT 1 FROM tasks t WHERE t.goal_id"
                         " = goals.id) AND NOT EXISTS (SELECT 1 FROM goal_links l WHERE l.parent_goal_id = goals.id)",
                         (root,))
        return
    for did in left:
        refresh(conn, views_cogsync.load_stored(conn, did))
