"""store.quotas, store.removal and store.known: what unknown authors can make a node keep.

The strangers' pool (issue 36): containers of unknown authors that no known author or peer vouches
for live in a small pool that evicts the oldest received first; nothing vouched for, and nothing of
the node, its friends or known peers, is ever evicted to make room."""

from __future__ import annotations

import dataclasses

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from meshnode.base.container import build_container
from meshnode.base.container.model import DEFAULT_LIMITS
from meshnode.base.identity.keys import NodeKey
from meshnode.domain.knowledge import make_concept, make_link
from meshnode.domain.notes import make_note
from meshnode.store import Database
from meshnode.store import migrate as migrate_module
from meshnode.store.database import _store
from meshnode.store.known import KnownAuthors, known_authors
from meshnode.store.admit_batch import admit_many
from meshnode.store.quotas import Quotas, admit, read_pool_usage, read_unknown_usage, stored_size
from meshnode.store.sharing import set_friend

T0 = 1_760_000_000_000


def key(n: int) -> NodeKey:
    return NodeKey(bytes([n]) * 32)


ME, FRIEND, TRUSTED, A, B, C = (key(n) for n in range(1, 7))


@pytest.fixture
def db(tmp_path):
    d = Database(tmp_path / "node.db")
    try:
        yield d
    finally:
        d.close()


def note(k: NodeKey, i: int, **kw):
    return make_note(k, f"note {i}", now_ms=T0 + i, audience="public", **kw)


def put(db, c, quotas, known=frozenset(), t=None):
    return admit(db, c, received_at_ms=T0 + 10_000 if t is None else t, received_from=None, quotas=quotas,
                 known=known)


def held(db, k: NodeKey) -> int:
    return db.conn.execute("SELECT count(*) FROM containers WHERE sender_did = ?", (k.did,)).fetchone()[0]


def set_trust(db, did: str, score: float) -> None:
    with db.transaction() as conn:
        conn.execute("INSERT OR IGNORE INTO agent_peers (id) VALUES (?)", (did,))
        conn.execute("INSERT INTO agent_reputation (agent_id, reputation_score) VALUES (?, ?)", (did, score))


def test_per_author_quota_refuses_the_next_container(db):
    q = Quotas(author_containers=3, author_bytes=10**6)
    outcomes = [put(db, note(A, i), q).outcome for i in range(5)]
    assert outcomes == ["new", "new", "new", "refused", "refused"]
    assert put(db, note(A, 9), q).reason == "author_quota"
    assert held(db, A) == 3
    assert put(db, note(A, 0), q).outcome == "duplicate"  # already held: not a refusal
    assert put(db, note(B, 0), q).outcome == "new"  # another author has its own quota


def test_per_author_byte_quota(db):
    first = note(A, 0)
    q = Quotas(author_containers=100, author_bytes=stored_size(first) * 2 + 10)
    assert [put(db, note(A, i), q).outcome for i in range(3)] == ["new", "new", "refused"]


def test_known_authors_have_no_quota(db):
    q = Quotas(author_containers=1, author_bytes=10**6, total_containers=2, total_bytes=10**9)
    known = frozenset({FRIEND.did})
    assert all(put(db, note(FRIEND, i), q, known).new for i in range(10))
    assert held(db, FRIEND) == 10
    assert read_unknown_usage(db, known)["containers"] == 0


def test_global_quota_evicts_least_trusted_then_oldest_never_known(db):
    q = Quotas(author_containers=10, author_bytes=10**6, total_containers=6, total_bytes=10**9, slack=0)
    known = frozenset({FRIEND.did})
    set_trust(db, A.did, 0.6)
    set_trust(db, B.did, 0.2)  # B is the least trusted; C has no score (0.5)
    for i in range(5):
        assert put(db, note(FRIEND, i), q, known).new
    for i in range(2):
        assert put(db, note(A, i), q, known, t=T0 + i).new
        assert put(db, note(B, i), q, known, t=T0 + 10 + i).new
        assert put(db, note(C, i), q, known, t=T0 + 20 + i).new
    assert (held(db, A), held(db, B), held(db, C)) == (2, 2, 2)
    r = put(db, note(C, 5), q, known, t=T0 + 30)  # 7 unknown: one must go, B's oldest
    assert r.new and r.evicted == 1
    assert (held(db, A), held(db, B), held(db, C)) == (2, 1, 3)
    assert db.conn.execute("SELECT count(*) FROM containers WHERE did = ?", (note(B, 0).did,)).fetchone()[0] == 0
    for i in range(6, 9):  # B goes entirely, then C (0.5) before A (0.6)
        put(db, note(C, i), q, known, t=T0 + 40 + i)
    assert (held(db, A), held(db, B)) == (2, 0)
    assert held(db, FRIEND) == 5
    assert read_unknown_usage(db, known)["containers"] == 6


def test_eviction_spares_containers_known_authors_point_at(db):
    q = Quotas(author_containers=10, author_bytes=10**6, total_containers=2, total_bytes=10**9, slack=0)
    known = frozenset({FRIEND.did})
    target = note(A, 0)
    put(db, target, q, known, t=T0)
    put(db, note(A, 1), q, known, t=T0 + 1)
    reply = make_note(FRIEND, "about it", now_ms=T0 + 5, audience="public")
    pointer = build_container(FRIEND, "note", dict(reply.payload), timestamp_ms=T0 + 6,
                              related={"in_reply_to": [target.did]})  # a known author's container names it
    put(db, pointer, q, known)
    put(db, note(B, 0), q, known, t=T0 + 2)  # 3 unknown: the oldest unreferenced one goes
    assert held(db, A) == 1
    assert db.conn.execute("SELECT 1 FROM containers WHERE did = ?", (target.did,)).fetchone()


def test_eviction_removes_note_rows_tags_and_links(db):
    q = Quotas(author_containers=10, author_bytes=10**6, total_containers=1, total_bytes=10**9, slack=0)
    first = make_note(A, "first #tagged", now_ms=T0, audience="public")
    put(db, first, q, t=T0)
    put(db, note(B, 1), q, t=T0 + 1)
    for table, column in (("notes", "container_did"), ("container_tags", "did"), ("container_links", "source_did"),
                          ("container_recipients", "did")):
        assert db.conn.execute(f"SELECT count(*) FROM {table} WHERE {column} = ?", (first.did,)).fetchone()[0] == 0
    assert db.conn.execute("SELECT count(*) FROM notes").fetchone()[0] == 1


def test_eviction_redraws_cogsync_lineages(db):
    q = Quotas(author_containers=10, author_bytes=10**6, total_containers=3, total_bytes=10**9, slack=0)
    v1 = make_concept(A, "sky", now_ms=T0)
    v2 = make_concept(A, "sky, blue", now_ms=T0 + 1, replaces=[v1.did])
    edge = make_link(A, v1.did, "is_a", [v1.did], now_ms=T0 + 2)
    for i, c in enumerate((v1, v2, edge)):
        put(db, c, q, t=T0 + i)
    assert db.conn.execute("SELECT name FROM concepts").fetchall() == [("sky, blue",)]
    set_trust(db, B.did, 0.9)  # B is trusted more: A's oldest goes first
    put(db, note(B, 0), q, t=T0 + 9)  # evicts v1 (A's oldest)
    assert db.conn.execute("SELECT count(*) FROM containers WHERE did = ?", (v1.did,)).fetchone()[0] == 0
    assert db.conn.execute("SELECT name, lineage FROM concepts").fetchall() == [("sky, blue", v2.did)]
    assert db.conn.execute("SELECT root, head FROM container_versions WHERE did = ?", (v2.did,)).fetchall() == [
        (v2.did, 1)]
    assert db.conn.execute("SELECT count(*) FROM container_versions WHERE did = ?", (v1.did,)).fetchone()[0] == 0
    put(db, note(B, 1), q, t=T0 + 10)  # evicts v2: the concept is gone
    assert db.conn.execute("SELECT count(*) FROM concepts").fetchone()[0] == 0
    assert db.conn.execute("SELECT from_concept_id FROM links").fetchall() == [(None,)]


def test_a_note_is_shown_again_when_the_note_that_replaced_it_is_evicted(db):
    """The newer note arrives first (gossip), the older later (sync): eviction by arrival takes the
    newer one first, and the older one must not stay hidden behind a note that is gone."""
    q = Quotas(author_containers=10, author_bytes=10**6, total_containers=3, total_bytes=10**9, slack=0)
    old = note(A, 0)
    new = make_note(A, "note 0, corrected", now_ms=T0 + 1, audience="public", replaces=[old.did])
    put(db, new, q, t=T0)
    put(db, old, q, t=T0 + 1)
    put(db, note(A, 2), q, t=T0 + 2)
    assert db.conn.execute("SELECT hidden FROM notes WHERE container_did = ?", (old.did,)).fetchone() == (1,)
    set_trust(db, B.did, 0.9)
    assert put(db, note(B, 0), q, t=T0 + 9).gone == ((new.did, A.did),)
    assert db.conn.execute("SELECT hidden FROM notes WHERE container_did = ?", (old.did,)).fetchone() == (0,)


def test_accounting_survives_a_restart_and_matches_the_store(tmp_path):
    path = tmp_path / "node.db"
    q = Quotas(author_containers=3, author_bytes=10**6, total_containers=100, total_bytes=10**9)
    db = Database(path)
    for i in range(4):
        put(db, note(A, i), q)
        put(db, note(B, i), q)
    db.close()
    db = Database(path)
    try:
        assert put(db, note(A, 7), q).outcome == "refused"
        assert put(db, note(C, 7), q).outcome == "new"
        usage = db.conn.execute("SELECT containers, bytes FROM store_usage").fetchone()
        actual = db.conn.execute("SELECT count(*), sum(length(core) + COALESCE(length(side), 0))"
                                 " FROM containers").fetchone()
        assert usage == actual
        assert read_unknown_usage(db, ())["containers"] == 7
    finally:
        db.close()


def test_migration_counts_containers_already_held(tmp_path, monkeypatch):
    """A database from before 0015 gets its usage from the containers it holds."""
    path = tmp_path / "old.db"
    steps = migrate_module.migrations()
    monkeypatch.setattr(migrate_module, "migrations", lambda: steps[:15])  # made by a meshnode at 0015
    db = Database(path)
    with db.transaction() as conn:  # as that meshnode stored them (no GMP tables yet)
        for i in range(3):
            _store(conn, note(A, i), T0, None, None, db.hooks)
    with db.transaction() as conn:
        for table in ("author_usage", "store_usage"):
            conn.execute(f"DELETE FROM {table}")
        conn.execute("DROP TRIGGER containers_usage_insert")
        conn.execute("DROP TRIGGER containers_usage_delete")
        conn.execute("DROP TABLE author_usage")
        conn.execute("DROP TABLE store_usage")
        conn.execute("DROP INDEX containers_by_sender_received")
    db.conn.execute("PRAGMA user_version = 14")
    db.close()
    monkeypatch.setattr(migrate_module, "migrations", lambda: steps)
    db = Database(path)
    try:
        assert db.conn.execute("SELECT containers FROM author_usage WHERE author = ?", (A.did,)).fetchone() == (3,)
        assert db.conn.execute("SELECT containers FROM store_usage").fetchone() == (3,)
    finally:
        db.close()


def test_known_authors_from_the_store(db):
    set_friend(db, FRIEND.did, "p", T0)
    set_trust(db, TRUSTED.did, 0.9)
    set_trust(db, A.did, 0.9)
    set_trust(db, A.did, 0.3)  # the newest score counts
    found = known_authors(db, fixed={ME.did}, min_trust=0.7)
    assert found == {ME.did, FRIEND.did, TRUSTED.did}
    k = KnownAuthors({ME.did})
    k.replace(found)
    assert FRIEND.did in k and ME.did in k and A.did not in k
    k.replace(())
    assert ME.did in k and FRIEND.did not in k


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(st.tuples(st.integers(0, 3), st.integers(0, 6)), min_size=1, max_size=40))
def test_quotas_hold_for_any_arrival_order(tmp_path_factory, arrivals):
    authors = [A, B, C, FRIEND]
    known = frozenset({FRIEND.did})
    q = Quotas(author_containers=3, author_bytes=10**6, total_containers=5, total_bytes=10**9, slack=0.2)
    db = Database(tmp_path_factory.mktemp("q") / "node.db")
    try:
        sent_by_friend = set()
        for t, (who, i) in enumerate(arrivals):
            c = note(authors[who], i)
            put(db, c, q, known, t=T0 + t)
            if who == 3:
                sent_by_friend.add(c.did)
        for k in (A, B, C):
            assert held(db, k) <= 3
        assert read_unknown_usage(db, known)["containers"] <= 5
        assert held(db, FRIEND) == len(sent_by_friend)
        assert db.conn.execute("SELECT count(*) FROM notes").fetchone()[0] == \
            db.conn.execute("SELECT count(*) FROM containers").fetchone()[0]
        usage = db.conn.execute("SELECT containers FROM store_usage").fetchone()[0]
        assert usage == db.conn.execute("SELECT count(*) FROM containers").fetchone()[0]
    finally:
        db.close()


def _views(db) -> dict:
    q = db.conn.execute
    return {
        "notes": sorted(q("SELECT container_did, hidden FROM notes").fetchall()),
        "concepts": sorted(q("SELECT lineage, container_did, name, forks FROM concepts").fetchall()),
        "links": sorted(q("SELECT lineage, container_did, from_did, to_did, from_concept_id IS NULL,"
                          " to_concept_id IS NULL FROM links").fetchall()),
        "versions": sorted(q("SELECT did, root, head FROM container_versions").fetchall()),
        "tags": sorted(q("SELECT did, tag FROM container_tags").fetchall()),
    }


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(st.tuples(st.sampled_from(["note", "note_edit", "concept", "edit", "link"]), st.integers(0, 2),
                          st.integers(0, 9)), min_size=1, max_size=25))
def test_views_after_eviction_equal_views_built_from_what_is_left(tmp_path_factory, steps):
    """Whatever was evicted, the views are those of a store that only ever held the survivors."""
    authors = [A, B, C]
    q = Quotas(author_containers=100, author_bytes=10**7, total_containers=6, total_bytes=10**9, slack=0.3)
    folder = tmp_path_factory.mktemp("v")
    db = Database(folder / "evicted.db")
    fresh = Database(folder / "fresh.db")
    try:
        made, concepts, notes = [], [], {k.did: [] for k in authors}
        for t, (kind, who, late) in enumerate(steps):
            k, now = authors[who], T0 + t
            if kind == "note" or (kind == "note_edit" and not notes[k.did]):
                c = make_note(k, f"#t{t % 3} note {t}", now_ms=now, audience="public")
                notes[k.did].append(c)
            elif kind == "note_edit":  # replaces one of the author's earlier notes
                c = make_note(k, f"note {t}", now_ms=now, audience="public",
                              replaces=[notes[k.did][late % len(notes[k.did])].did])
                notes[k.did].append(c)
            elif kind == "concept" or not concepts:
                c = make_concept(k, f"c{t}", now_ms=now, tags=[f"t{t % 2}"])
                concepts.append(c)
            elif kind == "edit":
                c = make_concept(k, f"c{t}", now_ms=now, replaces=[concepts[-1].did])
                concepts.append(c)
            else:
                c = make_link(k, concepts[0].did, "near", [concepts[-1].did], now_ms=now)
            made.append(c)
            put(db, c, q, t=now + 100 * late)  # received out of order: eviction order is not version order
        left = {r[0] for r in db.conn.execute("SELECT did FROM containers")}
        for c in made:
            if c.did in left:
                fresh.put_container(c, received_at_ms=T0)
        assert _views(db) == _views(fresh)
    finally:
        db.close()
        fresh.close()


def test_eviction_rereads_versions_stored_under_higher_item_limits(db):
    """A lineage holding a version with more items than today's limit (stored under older
    rules) is redrawn on eviction; it used to raise too_many_items on every later arrival."""
    q = Quotas(author_containers=10, author_bytes=10**8, total_containers=3, total_bytes=10**9, slack=0)
    v1 = make_concept(A, "sky", now_ms=T0)
    roomy = dataclasses.replace(DEFAULT_LIMITS, max_items=10**6)  # [limits] max_items raised, later lowered
    big = build_container(A, "semantic_node", {"label": "sky, blue"}, meta={"n": list(range(20_000))},
                          timestamp_ms=T0 + 1, related={"previous_version": [v1.did]}, limits=roomy)
    for i, c in enumerate((v1, big, note(A, 5))):
        put(db, c, q, t=T0 + i)
    set_trust(db, B.did, 0.9)
    assert put(db, note(B, 0), q, t=T0 + 9).evicted == 1  # v1 goes: the lineage is redrawn from `big`
    assert db.conn.execute("SELECT name, lineage FROM concepts").fetchall() == [("sky, blue", big.did)]
    assert put(db, note(B, 1), q, t=T0 + 10).new


# The strangers' pool

RELAY = "did:key:zstrangerrelay"  # a peer this node does not know
KNOWN = frozenset({ME.did, FRIEND.did})
POOL = Quotas(author_containers=100, author_bytes=10**7, total_containers=1000, total_bytes=10**9, slack=0,
              pool_containers=4, pool_bytes=10**8)


def reply(k: NodeKey, target: str, i: int):
    body = dict(make_note(k, f"reply {i}", now_ms=T0 + i, audience="public").payload)
    return build_container(k, "note", body, timestamp_ms=T0 + i, related={"in_reply_to": [target]})


def pool_put(db, c, t, sender=RELAY, known=KNOWN, quotas=POOL, **kw):
    return admit(db, c, received_at_ms=T0 + t, received_from=sender, quotas=quotas, known=known, **kw)


def is_held(db, c) -> bool:
    return db.conn.execute("SELECT 1 FROM containers WHERE did = ?", (c.did,)).fetchone() is not None


def pooled(db) -> set[str]:
    return {r[0] for r in db.conn.execute("SELECT did FROM containers WHERE pooled = 1")}


def test_the_pool_evicts_the_oldest_received_and_nothing_vouched_for(db):
    mine = [note(ME, i) for i in range(3)]
    for c in mine:  # the node's own, as a peer sent them back: never pooled
        assert pool_put(db, c, 0).new
    friends = [pool_put(db, note(FRIEND, i), 1, sender=FRIEND.did) for i in range(3)]
    forwarded = note(C, 50)  # a stranger's, sent by a friend: vouched for
    assert not pool_put(db, forwarded, 2, sender=FRIEND.did).pooled
    named = note(C, 51)  # a stranger's a friend replied to before it arrived: vouched for
    assert pool_put(db, reply(FRIEND, named.did, 60), 3, sender=FRIEND.did).new
    assert not pool_put(db, named, 4).pooled
    junk = [note(A, i) for i in range(4)]
    for t, c in enumerate(junk):  # received in this order, after everything above
        r = pool_put(db, c, 10 + t)
        assert r.new and r.pooled and not r.evicted
    assert pooled(db) == {c.did for c in junk}
    late = pool_put(db, note(B, 0), 20)  # the fifth: the oldest received goes
    assert late.pooled and late.gone == ((junk[0].did, A.did),) and late.pool_evicted == 1
    for t in range(3):  # and the next ones, in the order they arrived
        assert pool_put(db, note(B, 1 + t), 21 + t).gone == ((junk[1 + t].did, A.did),)
    assert all(r.new for r in friends) and all(is_held(db, c) for c in (*mine, forwarded, named))
    assert db.conn.execute("SELECT count(*) FROM containers WHERE sender_did = ?", (FRIEND.did,)).fetchone() == (4,)
    assert read_pool_usage(db)["containers"] == 4


def test_a_container_vouched_for_later_leaves_the_pool(db):
    first, second, third = note(A, 0), note(A, 1), note(C, 2)
    for t, c in enumerate((first, second, third)):
        pool_put(db, c, t)
    # a friend's reply to the oldest arrives: it vouches for it, which leaves the pool at once
    assert pool_put(db, reply(FRIEND, first.did, 9), 5, sender=FRIEND.did).unpooled == 1
    # the person replies to the second here (not through admission) and C becomes known: the
    # pool's eviction checks every vouch again before it evicts anything
    db.put_container(reply(ME, second.did, 10), received_at_ms=T0 + 6)
    known = KNOWN | {C.did}
    assert pooled(db) == {second.did, third.did}
    junk = [note(B, i) for i in range(5)]
    results = [pool_put(db, c, 10 + t, known=known) for t, c in enumerate(junk)]
    assert results[0].unpooled == 0 and not results[0].evicted  # 3 pooled (2 of them vouched since): no pass yet
    assert results[2].unpooled == 2  # over the limit: the vouched leave the pool, nothing evicted
    assert [r.gone for r in results] == [(), (), (), (), ((junk[0].did, B.did),)]
    assert all(is_held(db, c) for c in (first, second, third))
    assert pooled(db) == {c.did for c in junk[1:]}


def test_a_copy_from_a_known_peer_vouches_for_a_pooled_container(db):
    c = note(A, 0)
    assert pool_put(db, c, 0).pooled
    assert pool_put(db, c, 1, sender=FRIEND.did).unpooled == 1  # a duplicate, forwarded by a friend this time
    assert pooled(db) == set()
    gossiped = note(A, 1)  # gossip names the author as sender: the friend that forwarded it is passed apart
    assert not admit_many(db, [(gossiped, T0 + 2, A.did)], quotas=POOL, known=KNOWN, vouched=[gossiped.did])[0].pooled


def test_the_pool_has_a_byte_limit(db):
    sizes = Quotas(**{**POOL.__dict__, "pool_containers": 100})
    big = [make_note(A, f"{i} " + "x" * 4000, now_ms=T0 + i, audience="public") for i in range(4)]
    one = len(big[0].core_bytes())
    limit = Quotas(**{**sizes.__dict__, "pool_bytes": 3 * one + one // 2})
    gone = [pool_put(db, c, t, quotas=limit).gone for t, c in enumerate(big)]
    assert gone == [(), (), (), ((big[0].did, A.did),)]


def test_the_global_quota_evicts_pooled_containers_before_vouched_ones(db):
    q = Quotas(author_containers=100, author_bytes=10**7, total_containers=3, total_bytes=10**9, slack=0,
               pool_containers=100, pool_bytes=10**8)
    vouched = [note(A, i) for i in range(2)]
    for t, c in enumerate(vouched):  # the oldest, sent by a friend
        pool_put(db, c, t, sender=FRIEND.did, quotas=q)
    stranger = note(B, 0)
    pool_put(db, stranger, 5, quotas=q)
    r = pool_put(db, note(B, 1), 6, quotas=q)  # four strangers' containers held: the pooled one goes, not the oldest
    assert r.gone == ((stranger.did, B.did),) and r.pool_evicted == 0
    assert all(is_held(db, c) for c in vouched)


def test_migration_marks_strangers_containers_already_held_as_pooled(tmp_path, monkeypatch):
    """A database from before 0029: what came from the network, neither from nor by a friend, is
    pooled; the pool's first eviction checks every vouch again (above)."""
    path = tmp_path / "old.db"
    steps = migrate_module.migrations()
    monkeypatch.setattr(migrate_module, "migrations", lambda: steps[:28])
    db = Database(path)
    set_friend(db, FRIEND.did, "p", T0)
    stranger, forwarded, friends, mine = note(A, 0), note(B, 0), note(FRIEND, 0), note(ME, 0)
    with db.transaction() as conn:
        for c, sender in ((stranger, RELAY), (forwarded, FRIEND.did), (friends, RELAY), (mine, None)):
            _store(conn, c, T0, sender, None, db.hooks)
    db.close()
    monkeypatch.setattr(migrate_module, "migrations", lambda: steps)
    db = Database(path)
    try:
        assert pooled(db) == {stranger.did}
    finally:
        db.close()


def test_a_pool_far_over_its_limit_shrinks_a_bounded_step_per_admission(db, monkeypatch):
    """As after the upgrade that marked every stranger's container at once: one admission does not
    evict them all in its transaction (the one writer would be held for seconds)."""
    import meshnode.store.quotas as quotas_module

    monkeypatch.setattr(quotas_module, "POOL_EVICTIONS_AT_ONCE", 3)
    big = Quotas(author_containers=100, author_bytes=10**7, total_containers=1000, total_bytes=10**9, slack=0,
                 pool_containers=100, pool_bytes=10**8)
    for i in range(12):
        assert pool_put(db, note(A, i), i, quotas=big).pooled
    assert pool_put(db, note(B, 0), 20).pool_evicted == 3  # the limit is now 4: 13 held, 3 go
    assert read_pool_usage(db)["containers"] == 10
    assert pool_put(db, note(B, 1), 21).pool_evicted == 3
    assert read_pool_usage(db)["containers"] == 8
