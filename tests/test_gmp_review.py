"""Review of the GMP merge (issue 14): odd but schema-valid payloads from peers, pending floods."""

from __future__ import annotations

import pytest
from gmp_fixtures import A, B, M, T0, World

from meshnode.domain.gmp import build
from meshnode.domain.gmp.rules import MemoryHeld
from meshnode.domain.gmp.view import counts
from meshnode.base.identity.keys import NodeKey
from meshnode.records.gmp import store_admission
from meshnode.store.database import Database


@pytest.fixture
def db(tmp_path):
    d = Database(tmp_path / "gmp.db")
    yield d
    d.close()


def put(db: Database, c, at: int = T0) -> bool:
    return db.put_container(c, received_at_ms=at, received_from=None)


@pytest.mark.parametrize("candidates", [[], 5, "x"])
def test_an_acceptance_naming_an_odd_container_is_not_counted_and_does_not_crash(db, candidates):
    w = World()
    g, t1 = w.goal(), None
    t1 = w.task(g)
    odd = build.goal(A, {"title": "odd", "status": "active", "candidates": candidates}, now_ms=w.tick())
    for c in (g, t1, odd):
        assert put(db, c)
    for kind in ("acceptance", "refusal"):
        e = w.entry(M, kind, t1.did, offer=odd.did)
        assert put(db, e)
        held = MemoryHeld()
        for c in (g, t1, odd):
            held.add(c)
        assert counts(e, held) == (False, "not_offer")
        row = db.conn.execute("SELECT counted, reason FROM gmp_entries WHERE did = ?", (e.did,)).fetchone()
        assert tuple(row) == (0, "not_offer")


@pytest.mark.parametrize("fields", [{"task_version": {"a": 1}}, {"progress": [1]}, {"expires_at": "garbage"},
                                    {"offer": {"x": 1}}, {"received": ["y"]}])
@pytest.mark.parametrize("kind", ["reflection", "x-note"])
def test_fields_a_kind_does_not_define_never_reach_the_columns(db, kind, fields):
    w = World()
    g = w.goal()
    t1 = w.task(g)
    e = w.entry(M, kind, t1.did, **fields)
    for c in (g, t1, e):
        assert put(db, c)
    row = db.conn.execute("SELECT task_version, progress, offer, expires_ms FROM gmp_entries WHERE did = ?",
                          (e.did,)).fetchone()
    assert tuple(row) == (None, None, None, None)


def test_a_pending_entry_that_fails_to_store_does_not_block_what_it_waits_for(db, monkeypatch):
    """A stranger's entry pending on a task must not make that task impossible to store."""
    from meshnode.records.gmp import store_views

    w = World()
    g = w.goal()
    t1 = w.task(g)
    bad = w.entry(M, "reflection", t1.did, summary="poison")
    assert put(db, g)
    assert not put(db, bad)  # pending on t1
    real = store_views._entry

    def boom(conn, c, about, held):
        if c.did == bad.did:
            raise TypeError("an odd payload")
        return real(conn, c, about, held)

    monkeypatch.setattr(store_views, "_entry", boom)
    assert put(db, t1)  # stored; the poisoned entry is dropped
    assert db.conn.execute("SELECT 1 FROM tasks WHERE lineage = ?", (t1.did,)).fetchone()
    assert db.conn.execute("SELECT 1 FROM containers WHERE did = ?", (bad.did,)).fetchone() is None
    assert db.conn.execute("SELECT count(*) FROM gmp_pending").fetchone()[0] == 0
    assert db.conn.execute("SELECT count(*) FROM gmp_members WHERE did = ?", (bad.did,)).fetchone()[0] == 0


def test_pending_bounded_per_sender_and_in_all_whatever_the_authors(db, monkeypatch):
    """A peer signing with a fresh key per container cannot grow gmp_pending without bound."""
    monkeypatch.setattr(store_admission, "MAX_PER_SENDER", 3)
    monkeypatch.setattr(store_admission, "MAX_PENDING", 5)
    w = World()
    g = w.goal()  # not stored: every entry about it waits for it
    keys = [NodeKey(bytes([i + 1]) * 32) for i in range(8)]
    for i, k in enumerate(keys):
        e = w.entry(k, "reflection", g.did, summary=f"flood {i}")
        db.put_container(e, received_at_ms=T0, received_from="did:peer:flooder")
    assert db.conn.execute("SELECT count(*) FROM gmp_pending").fetchone()[0] == 3
    for i, k in enumerate(keys):
        e = w.entry(k, "reflection", g.did, summary=f"other {i}")
        db.put_container(e, received_at_ms=T0, received_from=f"did:peer:p{i}")
    assert db.conn.execute("SELECT count(*) FROM gmp_pending").fetchone()[0] == 5


def test_a_strangers_offer_receipted_automatically_makes_no_coworker(tmp_path):
    """The node receipts an offer naming it on its own (delivery, not a choice): that receipt must
    not make the stranger who offered a known author (known authors skip the quotas)."""
    from test_mesh_gmp_units import command, run_with_node

    from meshnode.records.gmp import service

    async def body(gmp, store, mesh, keys, clock):
        a, b, c = keys
        goal = await store.write(lambda db: service.goal_add(db, b, clock[0], title="b's", participants=[a.did]))
        task = await store.write(lambda db: service.task_add(db, b, clock[0] + 1, goal=goal["lineage"], title="t"))
        offer = await store.write(lambda db: service.task_offer(db, b, clock[0] + 2, task=task["lineage"],
                                                                 candidates=[a.did]))
        await gmp._react([goal["did"], task["did"], offer["did"]])
        signed = await store.read(lambda db: db.conn.execute(
            "SELECT kind FROM gmp_entries WHERE signer = ?", (a.did,)).fetchall())
        assert [tuple(r) for r in signed] == [("receipt",)]  # the receipt was signed
        assert await gmp.coworkers() == set()
        await command(gmp, "task_refuse", {"task": task["lineage"]})  # a no is not working together either
        assert await gmp.coworkers() == set()
        await command(gmp, "task_accept", {"task": task["lineage"]})
        assert await gmp.coworkers() == {b.did}

    run_with_node(tmp_path, lambda b, c: {}, body)


def test_a_new_version_does_not_count_every_entry_of_its_lineage_again(db, monkeypatch):
    """Anyone may add entries about a task; a version of it must not cost O(entries) (it did: every
    entry was decoded and counted again on each version)."""
    from gmp_fixtures import Story

    from meshnode.domain.gmp import view as gmp_view
    from meshnode.records.gmp import store_views

    s = Story()
    for c in (s.g, s.t1, s.offer, s.receipt, s.acc, s.t2, s.t3):
        assert put(db, c)
    for i in range(50):
        assert put(db, s.w.entry(M, "reflection", s.lineage, summary=f"noise {i}"))
    calls = []
    real = gmp_view.counts
    monkeypatch.setattr(store_views.view, "counts", lambda e, h: calls.append(e.did) or real(e, h))
    assert put(db, s.by(B, [s.t3], progress=0.5))
    assert calls == []


def test_an_evicted_version_uncounts_the_entries_naming_it(db):
    """Eviction still counts a lineage's entries again (a progress entry naming a version gone)."""
    from gmp_fixtures import Story

    from meshnode.store.removal import remove_containers

    s = Story()
    for c in (s.g, s.t1, s.offer, s.receipt, s.acc, s.t2, s.t3):
        assert put(db, c)
    p = s.w.entry(B, "progress", s.lineage, progress=0.3, task_version=s.t3.did)
    assert put(db, p)
    row = "SELECT counted, reason FROM gmp_entries WHERE did = ?"
    assert tuple(db.conn.execute(row, (p.did,)).fetchone()) == (1, None)
    with db.transaction() as conn:
        remove_containers(conn, [s.t3.did], db.hooks)
    assert tuple(db.conn.execute(row, (p.did,)).fetchone()) == (0, "no_version")


def test_an_offer_adds_its_candidates_without_drawing_the_whole_audience(db, monkeypatch):
    """Each delegation entry (anyone's, counted or not) drew the goal's audience from scratch:
    O(goal size) per entry. Candidates of a counted open offer join; nobody else does."""
    from gmp_fixtures import C, Story

    from meshnode.records.gmp import store_views

    s = Story()
    for c in (s.g, s.t1, s.offer, s.receipt, s.acc, s.t2, s.t3):
        assert put(db, c)
    stranger = NodeKey(bytes([0x77]) * 32)
    drawn = []
    real = store_views.draw_audience
    monkeypatch.setattr(store_views, "draw_audience", lambda conn, goal: drawn.append(goal) or real(conn, goal))
    forged = s.w.offer(s.lineage, s.t3, to=(stranger,), key=M)  # not a delegator: not counted
    assert put(db, forged)
    real_offer = s.w.offer(s.lineage, s.t3, to=(C, stranger))
    assert put(db, real_offer)
    assert drawn == []
    audience = {r[0] for r in db.conn.execute("SELECT did FROM gmp_audience WHERE goal_lineage = ?", (s.g.did,))}
    assert stranger.did in audience and M.did not in audience
    with db.transaction() as conn:
        real(conn, s.g.did)
    assert {r[0] for r in db.conn.execute("SELECT did FROM gmp_audience WHERE goal_lineage = ?",
                                          (s.g.did,))} == audience


def test_a_peer_that_never_answers_a_fetch_does_not_hold_up_reactions(tmp_path):
    """Fetching what a pending container waits for ran inside the reaction loop (20 s per try):
    a peer sending pending containers and never answering stalled every receipt and assignment."""
    import trio
    from test_mesh_gmp_units import command, run_with_node

    from meshnode.records.gmp import service

    async def body(gmp, store, mesh, keys, clock):
        a, b, c = keys
        asked = trio.Event()

        async def never(did, dids):
            asked.set()
            await trio.sleep_forever()

        mesh.fetch = never
        goal = await store.write(lambda db: service.goal_add(db, b, clock[0], title="b's", participants=[a.did]))
        task = await store.write(lambda db: service.task_add(db, b, clock[0] + 1, goal=goal["lineage"], title="t"))
        offer = await store.write(lambda db: service.task_offer(db, b, clock[0] + 2, task=task["lineage"],
                                                                 candidates=[a.did]))
        waiting = build.entry(c, "reflection", {}, now_ms=clock[0] + 3, about="did:key:z6MkNotHeldHereAtAll")
        assert not await store.write(lambda db: db.put_container(waiting, received_at_ms=clock[0],
                                                                 received_from=c.did))
        with trio.fail_after(5):
            await gmp._react_to_arrivals([(waiting.did, c.did), (offer["did"], b.did)])
            await asked.wait()
        receipts = await store.read(lambda db: db.conn.execute(
            "SELECT count(*) FROM gmp_entries WHERE kind = 'receipt' AND signer = ?", (a.did,)).fetchone()[0])
        assert receipts == 1

    run_with_node(tmp_path, lambda b, c: {}, body)


def test_no_receipt_for_an_offer_that_does_not_count(tmp_path):
    """An "offer" by someone who may not offer the task (not its creator nor a steward) is no offer:
    the node signed and pushed a receipt for each one a stranger sent."""
    from gmp_fixtures import C, Story

    from meshnode.records.gmp import service
    from meshnode.store.database import Database

    s = Story()
    db = Database(tmp_path / "c.db")
    for c in (s.g, s.t1, s.offer, s.receipt, s.acc, s.t2, s.t3):
        assert put(db, c)
    forged = s.w.offer(s.lineage, s.t3, to=(C,), key=M)
    real = s.w.offer(s.lineage, s.t3, to=(C,))
    assert put(db, forged) and put(db, real)
    out = service.on_admitted(db, C, T0, [forged.did, real.did])
    receipts = db.conn.execute("SELECT offer FROM gmp_entries WHERE kind = 'receipt' AND signer = ?",
                               (C.did,)).fetchall()
    assert [r[0] for r in receipts] == [real.did] and len(out["published"]) == 1
    db.close()


def test_a_version_extends_the_holders_instead_of_walking_the_lineage(db, monkeypatch):
    """Each version walked (and decoded, signatures checked) the whole path to draw task_holders:
    O(versions) per version. Appending one extends the stored spans; the rows are the same as a
    full draw (rebuild_views), through releases, reassignment and completion."""
    from gmp_fixtures import C, Story

    from meshnode.domain.gmp import view as gmp_view

    s, w = Story(), None
    w = s.w
    for c in (s.g, s.t1, s.offer, s.receipt, s.acc, s.t2, s.t3):
        assert put(db, c)
    walks = []
    real = gmp_view.path_to
    monkeypatch.setattr(gmp_view, "path_to", lambda head, held: walks.append(head.did) or real(head, held))
    prev = s.t3
    for i in range(5):
        prev = s.by(B, [prev], progress=i / 10, reason="check_in")
        assert put(db, prev)
    released = s.by(B, [prev], assigned=[], status="pending", reason="released", next_check_at=None)
    assert put(db, released)
    offer = w.offer(s.lineage, released, to=(C,))
    acc = w.entry(C, "acceptance", s.lineage, offer=offer.did)
    again = s.by(A, [released], assigned=[C], agreed=[acc], reason="assigned", next_check_at=w.t + 3_600_000)
    started = s.by(C, [again], status="in_progress", reason="started")
    done = s.by(C, [started], status="completed", reason="completed")
    for c in (offer, acc, again, started, done):
        assert put(db, c)
    assert walks == []
    rows = "SELECT * FROM task_holders ORDER BY lineage, assignee, from_version"
    incremental = db.conn.execute(rows).fetchall()
    assert [(r[1], r[6]) for r in incremental] == [(B.did, "released"), (C.did, "completed")]
    db.rebuild_views()
    assert walks and db.conn.execute(rows).fetchall() == incremental


def test_counting_a_strangers_offer_does_not_walk_the_lineage(db, monkeypatch):
    """Counting an offer walked the task's whole lineage (decoding every version) to find stewards,
    for anyone's offer: O(versions) per entry a stranger sends. The creator counts at once, and
    a signer with no version in the lineage cannot be a steward."""
    from gmp_fixtures import C, Story

    from meshnode.domain.gmp import view as gmp_view

    s = Story()
    for c in (s.g, s.t1, s.offer, s.receipt, s.acc, s.t2, s.t3):
        assert put(db, c)
    walks = []
    real = gmp_view.delegators
    monkeypatch.setattr(gmp_view, "delegators", lambda *a, **k: walks.append(1) or real(*a, **k))
    forged, by_creator = s.w.offer(s.lineage, s.t3, to=(C,), key=M), s.w.offer(s.lineage, s.t3, to=(C,))
    assert put(db, forged) and put(db, by_creator)
    assert walks == []
    got = dict(db.conn.execute("SELECT did, counted FROM gmp_entries WHERE did IN (?, ?)",
                               (forged.did, by_creator.did)).fetchall())
    assert got == {forged.did: 0, by_creator.did: 1}


def test_a_strangers_version_is_refused_without_walking_the_lineage(db, monkeypatch):
    from gmp_fixtures import Story

    from meshnode.domain.gmp import rules
    from meshnode.domain.gmp.rules import GmpRefused

    s = Story()
    for c in (s.g, s.t1, s.offer, s.receipt, s.acc, s.t2, s.t3):
        assert put(db, c)
    walks = []
    real = rules.delegators
    monkeypatch.setattr(rules, "delegators", lambda *a, **k: walks.append(1) or real(*a, **k))
    with pytest.raises(GmpRefused) as refused:
        put(db, s.by(M, [s.t3], progress=0.9))
    assert refused.value.code == "gmp_not_authorized" and walks == []


def test_a_push_that_fails_in_the_store_does_not_take_the_service_down(tmp_path):
    """A push job runs in the GMP service's nursery; a store error while loading what to push (a
    busy database) escaped it and cancelled the whole service (and the node with it)."""
    import trio
    from test_mesh_gmp_units import command, run_with_node

    from meshnode.base.errors import StoreError

    async def body(gmp, store, mesh, keys, clock):
        a, b, c = keys
        real = store.read

        async def failing(fn, *args, **kwargs):
            if getattr(fn, "__name__", "") == "<lambda>" and "load_container" in fn.__code__.co_names:
                raise StoreError("db_error", "database is locked")
            return await real(fn, *args, **kwargs)

        store.read = failing
        with trio.fail_after(5):
            report = await gmp.push([{"to": b.did, "dids": ["did:hmp:container:x"]}])
        assert report["failed"] == [b.did]
        store.read = real
        goal = await command(gmp, "goal_add", {"title": "still running"})  # the service lives on
        assert goal["lineage"]

    run_with_node(tmp_path, lambda b, c: {}, body)


def test_one_reaction_refused_does_not_lose_the_others(tmp_path, monkeypatch):
    """Reactions commit one by one; one that raised (a refused assignment) lost the push list of
    those already stored in the same call (a receipt signed and never pushed)."""
    from gmp_fixtures import C, Story

    from meshnode.records.gmp import reactions, service
    from meshnode.domain.gmp.rules import GmpRefused

    s = Story()
    db = Database(tmp_path / "c.db")
    for c in (s.g, s.t1, s.offer, s.receipt, s.acc, s.t2, s.t3):
        assert put(db, c)
    offer = s.w.offer(s.lineage, s.t3, to=(C,))
    assert put(db, offer)

    def refused(*args):
        raise GmpRefused("gmp_against_decision", "a rule changed under it")

    monkeypatch.setattr(reactions, "_join", refused)
    out = service.on_admitted(db, C, T0, [offer.did, s.t3.did])
    assert [p["to"] for p in out["push"]] == [A.did] and len(out["published"]) == 1
    db.close()


def test_an_offer_under_a_subgoal_does_not_push_the_private_parent_goal(tmp_path):
    """The bundle pushed to a candidate held every version of the subgoal's parent goals, which its
    audience need not hold (admission never reads them) and the candidate may not have: a private
    goal pushed to a non-participant."""
    from gmp_fixtures import C

    from meshnode.records.gmp import service
    from meshnode.store.sharing import may_share

    db = Database(tmp_path / "a.db")
    try:
        secret = service.goal_add(db, A, T0, title="private parent", participants=[B.did])
        sub = service.goal_add(db, A, T0 + 1, title="subgoal", parent=secret["lineage"])
        task = service.task_add(db, A, T0 + 2, goal=sub["lineage"], title="t")
        offer = service.task_offer(db, A, T0 + 3, task=task["lineage"], candidates=[C.did])
        to_c = [d for p in offer["push"] if p["to"] == C.did for d in p["dids"]]
        assert sub["did"] in to_c and offer["did"] in to_c
        assert not may_share(db, secret["did"], C.did, A.did)
        assert secret["did"] not in to_c
    finally:
        db.close()


def test_pending_containers_over_the_fetches_in_flight_are_fetched_later(tmp_path, monkeypatch):
    import trio
    from test_mesh_gmp_units import command, run_with_node

    from meshnode.net import mesh_gmp

    monkeypatch.setattr(mesh_gmp, "FETCHES_IN_FLIGHT", 1)

    async def body(gmp, store, mesh, keys, clock):
        a, b, c = keys
        asked, release = [], trio.Event()

        async def slow(did, dids):
            asked.append(tuple(dids))
            await release.wait()
            return []

        mesh.fetch = slow
        waiting = []
        for i in range(2):
            e = build.entry(c, "reflection", {}, now_ms=clock[0] + i, about=f"did:key:z6MkNotHeldHere{i}")
            assert not await store.write(lambda db, e=e: db.put_container(e, received_at_ms=clock[0],
                                                                          received_from=c.did))
            waiting.append(e.did)
        with trio.fail_after(5):
            await gmp._react_to_arrivals([(d, c.did) for d in waiting])
            while len(asked) < 1:
                await trio.sleep(0.01)
            release.set()
            while gmp._fetching:
                await trio.sleep(0.01)
            await gmp._react_to_arrivals([])  # the next batch of arrivals (none of them new)
            while len(asked) < 2:
                await trio.sleep(0.01)
        assert sorted(asked) == [("did:key:z6MkNotHeldHere0",), ("did:key:z6MkNotHeldHere1",)]

    run_with_node(tmp_path, lambda b, c: {}, body)
