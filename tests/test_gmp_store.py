"""GMP in the store: admission inside writes (admitted, pending, refused), the view tables
(goals, tasks, task_holders, gmp_entries, gmp_audience, gmp_members), arrival order, sharing
by goal audience and public_goals, the 0016 migration of old rows, and the due index."""

from __future__ import annotations

import json
import random
import sqlite3
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from gmp_fixtures import A, B, C, HOUR, M, T0, World

from meshnode.base.container import decode_container, parse_ms
from meshnode.domain.gmp.rules import GmpRefused
from meshnode.net.mesh_sync import _did_for, _digest
from meshnode.store import Database
from meshnode.records.gmp import store_admission
from meshnode.store import migrate as migrate_module
from meshnode.store.sharing import may_share, shareable
from meshnode.domain.sync.selective import EVERYTHING, PUBLIC_GOAL, Want
from meshnode.domain.sync.session import INITIATOR, RESPONDER, Entry, Session


@pytest.fixture
def db(tmp_path):
    d = Database(tmp_path / "gmp.db")
    yield d
    d.close()


def put(db: Database, c, at: int = T0) -> bool:
    return db.put_container(c, received_at_ms=at, received_from=None)


def lifecycle(w: World):
    """Goal by A with participant C; a task offered to B, accepted, assigned, started, progressed, done."""
    goal = w.goal(participants=(C,))
    t1 = w.task(goal)
    offer = w.offer(t1.did, t1, to=(B,))
    receipt = w.entry(B, "receipt", t1.did, received=offer.did, received_at=w.t)
    accept = w.entry(B, "acceptance", t1.did, offer=offer.did)
    t2 = w.task(goal, previous=(t1,), assigned=(B,), agreed=(accept,), fields={"reason": "assigned"})
    t3 = w.task(goal, key=B, status="in_progress", previous=(t2,), assigned=(B,), fields={"reason": "started"})
    progress = w.entry(B, "progress", t1.did, progress=0.4, task_version=t3.did)
    t4 = w.task(goal, key=B, status="completed", previous=(t3,), assigned=(B,),
                fields={"reason": "completed", "progress": 1.0})
    return [goal, t1, offer, receipt, accept, t2, t3, progress, t4]


def snapshot(db: Database) -> dict:
    """Every GMP view row, without local ids (they follow arrival order)."""
    q = db.conn.execute
    return {
        "goals": q("SELECT lineage, name, status, priority, container_did, author_did, creator_did, forks, audience,"
                   " participants, parent_goal, timestamp_ms, tags, created_at FROM goals ORDER BY lineage").fetchall(),
        "tasks": q("SELECT t.lineage, g.lineage, t.name, t.status, t.container_did, t.author_did, t.creator_did,"
                   " t.forks, t.goal_lineage, t.parent_task, t.depends_on, t.assigned_to, t.progress, t.deadline_ms,"
                   " t.next_check_ms, t.check_grace_s, t.due_at_ms, t.overdue_at_ms, t.delegation_rule, t.reason,"
                   " t.timestamp_ms FROM tasks t LEFT JOIN goals g ON g.id = t.goal_id ORDER BY t.lineage").fetchall(),
        "holders": q("SELECT * FROM task_holders ORDER BY lineage, assignee, from_version").fetchall(),
        "entries": q("SELECT * FROM gmp_entries ORDER BY did").fetchall(),
        "audience": q("SELECT * FROM gmp_audience ORDER BY goal_lineage, did").fetchall(),
        "members": q("SELECT * FROM gmp_members ORDER BY did").fetchall(),
        "versions": q("SELECT * FROM container_versions ORDER BY did").fetchall(),
        "pending": q("SELECT did FROM gmp_pending").fetchall(),
    }


# --- views after a lifecycle -------------------------------------------------------------------

def test_lifecycle_views(db):
    w = World()
    cs = lifecycle(w)
    goal, t1, offer, receipt, accept, t2, t3, progress, t4 = cs
    assert all(put(db, c) for c in cs)
    q = db.conn.execute
    g = q("SELECT name, status, priority, lineage, container_did, creator_did, forks, audience, participants"
          " FROM goals").fetchall()
    assert g == [("Ship the bridge", "active", 0.5, goal.did, goal.did, A.did, 0, "participants",
                  json.dumps([A.did, C.did]))]
    row = q("SELECT status, assigned_to, progress, container_did, author_did, creator_did, forks, goal_lineage,"
            " due_at_ms, overdue_at_ms, reason, goal_id FROM tasks WHERE lineage = ?", (t1.did,)).fetchone()
    assert row == ("completed", json.dumps([B.did]), 1.0, t4.did, B.did, A.did, 0, goal.did, None, None,
                   "completed", 1)
    assert q("SELECT assignee, from_version, to_version, ended FROM task_holders").fetchall() == [
        (B.did, t2.did, t4.did, "completed")]
    entries = dict(q("SELECT kind, counted FROM gmp_entries").fetchall())
    assert entries == {"delegation": 1, "receipt": 1, "acceptance": 1, "progress": 1}
    assert {r[0] for r in q("SELECT did FROM gmp_audience WHERE goal_lineage = ?", (goal.did,))} == {
        A.did, B.did, C.did}
    assert q("SELECT count(*) FROM gmp_members WHERE goal_lineage = ?", (goal.did,)).fetchone() == (len(cs),)


def test_progress_shown_is_the_newest_counted(db):
    w = World()
    cs = lifecycle(w)[:8]  # up to B's progress entry, before completion
    for c in cs:
        put(db, c)
    assert db.conn.execute("SELECT status, progress FROM tasks").fetchone() == ("in_progress", 0.4)
    # a progress entry by C, not an assignee, is kept but not counted and does not move the row
    stray = w.entry(C, "progress", cs[1].did, progress=0.9, task_version=cs[6].did)
    assert put(db, stray)
    assert db.conn.execute("SELECT counted, reason FROM gmp_entries WHERE did = ?", (stray.did,)).fetchone() == (
        0, "not_assignee")
    assert db.conn.execute("SELECT progress FROM tasks").fetchone() == (0.4,)


# --- arrival order -----------------------------------------------------------------------------

def test_arrival_order_gives_the_same_rows(tmp_path):
    w = World()
    cs = lifecycle(w)
    orders = [cs, cs[::-1], sorted(cs, key=lambda c: c.did)] + [random.Random(s).sample(cs, len(cs)) for s in (1, 2)]
    snaps = []
    for i, order in enumerate(orders):
        d = Database(tmp_path / f"o{i}.db")
        try:
            stored = [put(d, c) for c in order]
            if order is orders[1]:  # newest first: everything but the goal waits at first
                assert stored[-1] is True and not all(stored)
            snaps.append(snapshot(d))
            assert d.conn.execute("SELECT count(*) FROM containers").fetchone() == (len(cs),)
        finally:
            d.close()
    assert all(s == snaps[0] for s in snaps[1:])
    assert snaps[0]["pending"] == []


def test_pending_then_resolved(db):
    w = World()
    goal, t1, offer, receipt, accept, t2, *_ = lifecycle(w)
    assert put(db, goal)
    assert not put(db, t2)  # names t1 and accept: held aside
    pend = store_admission.gmp_pending_of(db)
    assert [p["did"] for p in pend] == [t2.did] and t1.did in pend[0]["missing"]
    assert t1.did in store_admission.missing_for_pending(db)
    assert db.conn.execute("SELECT count(*) FROM containers WHERE did = ?", (t2.did,)).fetchone() == (0,)
    assert not put(db, accept)  # waits for the offer, which waits for t1
    assert not put(db, offer)
    assert set(store_admission.missing_for_pending(db)) == {t1.did}  # what waits on pending ones is not fetched
    assert put(db, t1)  # releases offer -> accept -> t2, in one transaction
    assert store_admission.gmp_pending_of(db) == []
    assert db.conn.execute("SELECT assigned_to FROM tasks").fetchone() == (json.dumps([B.did]),)


def test_refused_on_release_is_dropped(db):
    w = World()
    goal = w.goal(participants=(C,))
    t1 = w.task(goal)
    forged = w.task(goal, key=M, status="abandoned", previous=(t1,))
    put(db, goal)
    assert not put(db, forged)  # pending: its parent is not here yet
    assert put(db, t1)
    assert store_admission.gmp_pending_of(db) == []
    assert db.conn.execute("SELECT count(*) FROM containers WHERE did = ?", (forged.did,)).fetchone() == (0,)
    assert db.conn.execute("SELECT status FROM tasks").fetchone() == ("pending",)


def test_pending_limits(db, monkeypatch):
    monkeypatch.setattr(store_admission, "MAX_PER_AUTHOR", 2)
    w = World()
    goal = w.goal()
    t1 = w.task(goal)
    later = [w.task(goal, previous=(t1,), title=f"v{i}") for i in range(3)]
    assert [put(db, c, T0 + i) for i, c in enumerate(later)] == [False] * 3
    assert len(store_admission.gmp_pending_of(db, A.did)) == 2  # the third was not kept
    assert store_admission.prune_gmp_pending(db, T0 + store_admission.MAX_AGE_MS) == 0
    assert store_admission.prune_gmp_pending(db, T0 + 1 + store_admission.MAX_AGE_MS) == 1
    assert db.conn.execute("SELECT count(*) FROM gmp_pending_missing").fetchone() == (1,)


# --- refusal -----------------------------------------------------------------------------------

def test_refused_raises_and_stores_nothing(db):
    w = World()
    goal, t1, *_ = lifecycle(w)
    put(db, goal)
    put(db, t1)
    before = snapshot(db), db.conn.execute("SELECT count(*) FROM containers").fetchone()
    forged = w.task(goal, key=M, status="abandoned", previous=(t1,))
    with pytest.raises(GmpRefused) as info:
        put(db, forged)
    assert info.value.code == "gmp_not_authorized"
    assert (snapshot(db), db.conn.execute("SELECT count(*) FROM containers").fetchone()) == before


# --- forks and holders -------------------------------------------------------------------------

def test_fork_counted_and_creator_head_shown(db):
    w = World()
    goal, t1, offer, receipt, accept, t2, t3, *_ = lifecycle(w)
    for c in (goal, t1, offer, receipt, accept, t2, t3):
        put(db, c)
    # concurrently: B checks in, A releases B (reassigned_dead)
    checkin = w.task(goal, key=B, status="in_progress", previous=(t3,), assigned=(B,),
                     fields={"reason": "check_in", "next_check_at": w.t + 2 * HOUR})
    removal = w.task(goal, status="pending", previous=(t3,), fields={"reason": "reassigned_dead"})
    assert put(db, removal) and put(db, checkin)
    row = db.conn.execute("SELECT forks, container_did, status, assigned_to FROM tasks").fetchone()
    assert row == (1, removal.did, "pending", "[]")  # the creator's head is shown
    holders = db.conn.execute("SELECT assignee, from_version, to_version, ended FROM task_holders").fetchall()
    assert holders == [(B.did, t2.did, removal.did, "reassigned_dead")]
    join = w.task(goal, status="pending", previous=(removal, checkin), fields={"reason": "merged"})
    assert put(db, join)
    assert db.conn.execute("SELECT forks, container_did FROM tasks").fetchone() == (0, join.did)


def test_reassignment_keeps_holder_history(db):
    w = World()
    goal, t1, offer, receipt, accept, t2, t3, *_ = lifecycle(w)
    removal = w.task(goal, status="pending", previous=(t3,), fields={"reason": "reassigned_dead"})
    offer2 = w.offer(t1.did, removal, to=(C,))
    accept2 = w.entry(C, "acceptance", t1.did, offer=offer2.did)
    t5 = w.task(goal, previous=(removal,), assigned=(C,), agreed=(accept2,), fields={"reason": "assigned"})
    for c in (goal, t1, offer, receipt, accept, t2, t3, removal, offer2, accept2, t5):
        assert put(db, c)
    holders = db.conn.execute("SELECT assignee, to_version, ended FROM task_holders ORDER BY since_ms").fetchall()
    assert holders == [(B.did, removal.did, "reassigned_dead"), (C.did, None, None)]
    assert db.conn.execute("SELECT assigned_to FROM tasks").fetchone() == (json.dumps([C.did]),)


# --- audience and sharing ----------------------------------------------------------------------

def test_private_goal_goes_to_its_audience_only(db):
    w = World()
    cs = lifecycle(w)
    for c in cs:
        put(db, c)
    for peer in (B, C):
        assert {r[1] for r in shareable(db, peer.did, A.did)} == {c.did for c in cs}
        assert all(may_share(db, c.did, peer.did, A.did) for c in cs)
    assert shareable(db, M.did, A.did) == []
    assert not any(may_share(db, c.did, M.did, A.did) for c in cs)


def test_offer_candidates_join_until_the_offer_expires(db):
    w = World()
    goal = w.goal(participants=())
    t1 = w.task(goal)
    offer = w.offer(t1.did, t1, to=(M,), expires_ms=HOUR)
    for c in (goal, t1, offer):
        put(db, c)
    assert may_share(db, t1.did, M.did, A.did)
    w.tick(2 * HOUR)
    later = w.task(goal, previous=(t1,), fields={"description": "more"})
    put(db, later)  # a signed time past the offer's expiry
    assert not may_share(db, t1.did, M.did, A.did)


def run_session(db_x, x, db_y, y, want_x: Want, want_y: Want) -> tuple[set[str], set[str]]:
    """x starts a session with y; returns (DIDs that move to y, DIDs that move to x)."""
    sides = {}
    for db, me, peer, role, want in ((db_x, x, y, INITIATOR, want_x), (db_y, y, x, RESPONDER, want_y)):
        rows = shareable(db, peer, me)
        sides[me] = (Session(role, [Entry(ts, _digest(d), cls, frozenset(tags)) for ts, d, cls, tags in rows], want),
                     {_digest(d): d for _, d, _, _ in rows})
    sx, sy = sides[x][0], sides[y][0]
    in_flight = [(sy, m) for m in sx.start()]
    while in_flight:
        receiver, message = in_flight.pop(0)
        other = sx if receiver is sy else sy
        in_flight += [(other, m) for m in receiver.receive(message)]
    assert sx.done and sy.done
    return ({sides[x][1][i] for i in sx.push} | {_did_for(i) for i in sy.fetch},
            {sides[y][1][i] for i in sy.push} | {_did_for(i) for i in sx.fetch})


def test_public_goal_only_to_a_want_that_asks(tmp_path):
    w = World()
    goal = w.goal(participants=(), audience="public")
    t1 = w.task(goal)
    private = w.goal(participants=())
    db_a, db_m = Database(tmp_path / "a.db"), Database(tmp_path / "m.db")
    try:
        for c in (goal, t1, private):
            put(db_a, c)
        rows = shareable(db_a, M.did, A.did)
        assert {r[1] for r in rows} == {goal.did, t1.did} and all(PUBLIC_GOAL in r[3] for r in rows)
        assert shareable(db_a, M.did, A.did, public_goals=False) == []
        assert may_share(db_a, t1.did, M.did, A.did) and not may_share(db_a, private.did, M.did, A.did)
        assert run_session(db_m, M.did, db_a, A.did, EVERYTHING, EVERYTHING) == (set(), set())
        wants = Want(public_goals=True)
        assert Want.from_wire(wants.to_wire()) == wants and wants.to_wire() == {"public_goals": True}
        assert run_session(db_m, M.did, db_a, A.did, wants, EVERYTHING) == (set(), {goal.did, t1.did})
        assert run_session(db_a, A.did, db_m, M.did, EVERYTHING, wants) == ({goal.did, t1.did}, set())  # either starts
        assert run_session(db_a, A.did, db_m, M.did, wants, wants) == ({goal.did, t1.did}, set())
    finally:
        db_a.close()
        db_m.close()


def test_gmp_classes_are_not_cogsync_knowledge(db):
    """Goal/task versions join the lineage index but never the CogSync friends rule or its views."""
    from meshnode.store.sharing import set_friend

    w = World()
    goal = w.goal(participants=())
    put(db, goal)
    set_friend(db, M.did, "peer", T0)
    assert shareable(db, M.did, A.did) == []  # a friend outside the audience gets nothing
    assert db.conn.execute("SELECT class FROM container_versions").fetchall() == [("goal",)]
    assert db.conn.execute("SELECT count(*) FROM container_forward").fetchone() == (0,)
    assert db.conn.execute("SELECT count(*) FROM concepts").fetchone() == (0,)


def test_rebuild_views_gives_the_same_rows(db):
    w = World()
    for c in lifecycle(w):
        put(db, c)
    before = snapshot(db)
    db.conn.execute("DELETE FROM gmp_audience")
    db.conn.execute("UPDATE tasks SET status = 'paused'")
    db.rebuild_views()
    assert snapshot(db) == before


def test_eviction_takes_gmp_rows_along(db):
    from meshnode.store.removal import remove_containers

    w = World()
    cs = lifecycle(w)
    for c in cs:
        put(db, c)
    t4 = cs[-1]
    with db.transaction() as conn:
        assert remove_containers(conn, [t4.did], db.hooks) == 1
    assert db.conn.execute("SELECT status, container_did FROM tasks").fetchone() == ("in_progress", cs[6].did)
    assert db.conn.execute("SELECT count(*) FROM gmp_members WHERE did = ?", (t4.did,)).fetchone() == (0,)


# --- migration and index -----------------------------------------------------------------------

def test_migration_keeps_old_rows_with_new_words(tmp_path, monkeypatch):
    path = tmp_path / "old.db"
    steps = migrate_module.migrations()
    monkeypatch.setattr(migrate_module, "migrations", lambda: steps[:15])
    old = Database(path)
    old.conn.executescript("""
        INSERT INTO goals (name, priority, status) VALUES ('g1', 'low', 'active'), ('g2', 'high', 'paused'),
                                                        ('g3', NULL, 'completed'), ('g4', 'normal', 'failed');
        INSERT INTO goal_links VALUES (1, 2, 'subgoal');
        INSERT INTO tasks (goal_id, name, status, pinned, repl_mode, repl_config, llm_id) VALUES
            (1, 't1', 'open', 1, 'full', '{"n": 1}', 'm1'), (1, 't2', 'done', 0, 'none', NULL, NULL),
            (2, 't3', 'frozen', 0, 'none', NULL, NULL), (NULL, 't4', 'in_progress', 0, 'read_only', NULL, NULL),
            (NULL, 't5', 'open', 0, 'none', NULL, NULL);
        DELETE FROM tasks WHERE id = 5;
        INSERT INTO llm_recent_responses (role, content, task_id) VALUES ('user', 'hi', 1), ('assistant', 'x', 3);
    """)
    old.close()
    monkeypatch.setattr(migrate_module, "migrations", lambda: steps)
    db = Database(path)
    try:
        q = db.conn.execute
        assert q("SELECT id, name, status, priority, lineage FROM goals ORDER BY id").fetchall() == [
            (1, "g1", "active", 0.25, None), (2, "g2", "paused", 0.75, None), (3, "g3", "completed", 0.5, None),
            (4, "g4", "failed", 0.5, None)]
        assert q("SELECT * FROM goal_links").fetchall() == [(1, 2, "subgoal")]
        assert q("SELECT id, goal_id, name, status, pinned, repl_mode, repl_config, llm_id, lineage FROM tasks"
                 " ORDER BY id").fetchall() == [
            (1, 1, "t1", "pending", 1, "full", '{"n": 1}', "m1", None), (2, 1, "t2", "completed", 0, "none", None, None, None),
            (3, 2, "t3", "paused", 0, "none", None, None, None), (4, None, "t4", "in_progress", 0, "read_only", None, None, None)]
        assert q("PRAGMA foreign_key_check").fetchall() == [] and q("PRAGMA integrity_check").fetchone() == ("ok",)
        # the references into the rebuilt tables still name them, and are still enforced
        refs = {(t, r[2]) for t in ("llm_recent_responses", "tasks", "goal_links")
                for r in q(f"PRAGMA foreign_key_list({t})")}
        assert refs == {("llm_recent_responses", "tasks"), ("tasks", "goals"), ("goal_links", "goals")}
        with pytest.raises(sqlite3.IntegrityError):
            q("INSERT INTO llm_recent_responses (role, content, task_id) VALUES ('user', 'x', 99)")
        with pytest.raises(sqlite3.IntegrityError):
            q("INSERT INTO tasks (name, status) VALUES ('x', 'open')")  # the old words are gone
        assert q("INSERT INTO tasks (name) VALUES ('new') RETURNING id, status").fetchone() == (6, "pending")
        q("SELECT * FROM tag_usage").fetchall()  # the view reads the live tables again
    finally:
        db.close()


def test_task_due_range_uses_the_index(db):
    rng = random.Random(7)
    statuses = ["pending", "in_progress", "paused", "completed", "failed", "abandoned"]
    with db.transaction() as conn:
        conn.executemany(
            "INSERT INTO tasks (name, status, lineage, assigned_to, due_at_ms, overdue_at_ms) VALUES (?, ?, ?, ?, ?, ?)",
            [(f"t{i}", rng.choice(statuses), f"did:l{i}", "[]", T0 + i * 1000, T0 + i * 1000 + HOUR)
             for i in range(100_000)])
        conn.execute("ANALYZE")
    sql = ("SELECT id FROM tasks WHERE status IN ('pending', 'in_progress', 'paused') AND overdue_at_ms <= ?"
           " ORDER BY overdue_at_ms")
    plan = " ".join(r[3] for r in db.conn.execute("EXPLAIN QUERY PLAN " + sql, (T0 + 2 * HOUR,)))
    assert "tasks_open_by_overdue" in plan, plan
    rows = db.conn.execute(sql, (T0 + 2 * HOUR,)).fetchall()
    assert 0 < len(rows) <= 3601


def test_goal_links_from_related(tmp_path):
    w = World()
    parent = w.goal()
    other = w.goal(participants=())
    from meshnode.domain.gmp import build

    child = build.goal(A, {"title": "sub", "status": "active"}, now_ms=w.tick(), parent_goal=parent.did,
                       depends_on=[other.did])
    snaps = []
    for i, order in enumerate(([parent, other, child], [child, other, parent])):
        d = Database(tmp_path / f"l{i}.db")
        try:
            for c in order:
                put(d, c)
            rows = d.conn.execute(
                "SELECT p.lineage, c.lineage, l.relation_type FROM goal_links l JOIN goals p ON p.id = l.parent_goal_id"
                " JOIN goals c ON c.id = l.child_goal_id ORDER BY l.relation_type").fetchall()
            assert rows == [(other.did, child.did, "dependency"), (parent.did, child.did, "subgoal")]
            assert d.conn.execute("SELECT parent_goal FROM goals WHERE lineage = ?", (child.did,)).fetchone() == (
                parent.did,)
            snaps.append(snapshot(d))
        finally:
            d.close()
    assert snaps[0] == snaps[1]


# --- the GMP vectors, through the store --------------------------------------------------------

VECTORS = json.loads((Path(__file__).resolve().parent.parent / "protocols" / "vectors" / "gmp.json").read_text())


@pytest.mark.parametrize("case", VECTORS["cases"], ids=[c["description"][:50] for c in VECTORS["cases"]])
def test_vector_case_through_the_store(case, tmp_path):
    """Each vector's containers put in its order: the same outcomes on arrival and in the end (pending
    ones released by what they wait for, of any class), and the task row shows the expected view."""
    names = {k["did"]: n for n, k in VECTORS["keys"].items()}
    now = parse_ms(case["now"])
    d = Database(tmp_path / "v.db")
    try:
        for item in case["containers"]:
            if item["expect"]["outcome"] == "class_schema":
                continue
            c = decode_container(bytes.fromhex(item["hex"]), now_ms=now)
            try:
                got = "admitted" if put(d, c) else "pending"
            except GmpRefused as exc:
                got = exc.code
            assert got == item["expect"]["outcome"], item["name"]
        held = {r[0] for r in d.conn.execute("SELECT did FROM containers")}
        pending = {r[0] for r in d.conn.execute("SELECT did FROM gmp_pending")}
        for did, outcome in case["final"].items():
            assert (did in held, did in pending) == (outcome == "admitted", outcome == "pending"), (did, outcome)
        if "view" not in case:
            return
        v = case["view"]
        row = d.conn.execute("SELECT container_did, forks, status, assigned_to, due_at_ms, overdue_at_ms FROM tasks"
                             " WHERE lineage = ?", (v["lineage"],)).fetchone()
        assert row == (v["head"], v["forks"], v["status"], json.dumps([VECTORS["keys"][n]["did"] for n in
                                                                         v["assigned_to"]]),
                       v["due_at"] and parse_ms(v["due_at"]), v["overdue_at"] and parse_ms(v["overdue_at"]))
        holders = d.conn.execute("SELECT assignee, from_version, to_version, ended FROM task_holders WHERE lineage = ?"
                                 " ORDER BY since_ms, from_version", (v["lineage"],)).fetchall()
        assert [{"assignee": names[a], "from": f, "to": t, "ended": e} for a, f, t, e in holders] == v["holders"]
        entries = d.conn.execute("SELECT did, counted, reason FROM gmp_entries WHERE lineage = ? ORDER BY did",
                                 (v["lineage"],)).fetchall()
        assert {did: [bool(n), why] for did, n, why in entries} == v["entries"]
    finally:
        d.close()


def test_pending_released_by_a_container_of_another_class(db):
    """An assignment under cogconsensus waits for the consensus_result its offer cites; storing the
    result (not a GMP class) releases it in the same write."""
    case = next(c for c in VECTORS["cases"] if c["description"].startswith("contested"))
    now = parse_ms(case["now"])
    by_name = {x["name"]: decode_container(bytes.fromhex(x["hex"]), now_ms=now) for x in case["containers"]}
    skip = {"result", "assigned_without_basis"}
    late = ["offer_with_basis", "acceptance_c", "assigned_c"]
    for x in case["containers"]:
        if x["name"] not in skip and x["name"] not in late:
            assert put(db, by_name[x["name"]]), x["name"]
    assert [put(db, by_name[n]) for n in late] == [True, True, False]  # entries are admitted, the version waits
    assert by_name["result"].did in store_admission.missing_for_pending(db)
    assert put(db, by_name["result"])
    assert store_admission.gmp_pending_of(db) == []
    lineage = case["view"]["lineage"]
    assert db.conn.execute("SELECT container_did FROM tasks WHERE lineage = ?", (lineage,)).fetchone() == (
        by_name["assigned_c"].did,)


FAULTS = next(c for c in VECTORS["cases"] if c["description"].startswith("one fault each"))


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(order=st.permutations(range(len([x for x in FAULTS["containers"] if x["expect"]["outcome"] != "class_schema"]))))
def test_any_arrival_order_with_forgeries_gives_the_same_rows(tmp_path, order):
    """The lifecycle with one forged or faulty container per refusal code, in any order: refused ones
    (at once or when released) never count, and the rows are those of the order they were made in."""
    now = parse_ms(FAULTS["now"])
    cs = [decode_container(bytes.fromhex(x["hex"]), now_ms=now) for x in FAULTS["containers"]
          if x["expect"]["outcome"] != "class_schema"]
    snaps = []
    for i, seq in enumerate((cs, [cs[j] for j in order])):
        d = Database(tmp_path / f"h{len(list(tmp_path.iterdir()))}-{i}.db")
        try:
            for c in seq:
                try:
                    put(d, c)
                except GmpRefused:
                    pass
            snaps.append(snapshot(d))
        finally:
            d.close()
    assert snaps[0] == snaps[1]
