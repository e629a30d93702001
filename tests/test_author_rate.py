"""net.author_rate: the relay rate of unknown authors' gossip, the write rate of all strangers, and
store.stranger_peers."""

from __future__ import annotations

import pytest
from hypothesis import given, settings, strategies as st

from meshnode.net.author_rate import AuthorRate, RateSettings, StrangerWrites
from meshnode.net.liveness import LivenessTracker, Thresholds
from meshnode.store import Database
from meshnode.store.peers import save_standing, upsert_peer
from meshnode.store.sharing import set_friend
from meshnode.store.stranger_peers import prune_unknown_peers

T0 = 1_760_000_000_000


def test_per_author_burst_then_rate():
    rate = AuthorRate(RateSettings(per_author_per_second=1.0, per_author_burst=3, total_per_second=1000,
                                   total_burst=1000))
    assert [rate.allow("a", T0)[0] for _ in range(4)] == [True, True, True, False]
    assert rate.allow("a", T0) == (False, "author_rate")
    assert rate.allow("b", T0)[0]  # another author has its own bucket
    assert not rate.allow("a", T0 + 500)[0]
    assert rate.allow("a", T0 + 1000)[0]  # one token per second


def test_copies_of_one_container_spend_once():
    rate = AuthorRate(RateSettings(per_author_per_second=1.0, per_author_burst=2, total_per_second=1000,
                                   total_burst=1000))
    assert [rate.allow("a", T0, copy_of="c1")[0] for _ in range(5)] == [True] * 5  # five forwarders, one token
    assert rate.allow("a", T0, copy_of="c2")[0]
    assert not rate.allow("a", T0, copy_of="c3")[0]  # the author's burst of 2 is spent on two containers


def test_global_bucket_bounds_all_unknown_authors_together():
    rate = AuthorRate(RateSettings(per_author_per_second=1.0, per_author_burst=5, total_per_second=2.0,
                                   total_burst=4))
    results = [rate.allow(f"author{i}", T0) for i in range(10)]
    assert [ok for ok, _ in results] == [True] * 4 + [False] * 6
    assert results[-1][1] == "total_rate"
    assert rate.tracked() == 4  # refused authors got no bucket
    assert rate.allow("new", T0 + 500)[0]


def test_gossip_spends_the_write_rate_of_all_strangers_too():
    shared = StrangerWrites(per_second=1.0, burst=2)  # push, sync and fetch take from it as well
    rate = AuthorRate(RateSettings(per_author_per_second=0.001, per_author_burst=1, total_per_second=0.001,
                                   total_burst=3), shared=shared)
    assert rate.allow("a", T0) == (True, "")
    assert shared.take(T0)  # a pushed container took the other token
    assert rate.allow("b", T0) == (False, "stranger_rate")
    assert rate.allow("b", T0 + 1000) == (True, "")  # the refusal spent neither b's token nor the total's
    assert rate.allow("c", T0 + 1000) == (False, "stranger_rate")


def test_full_buckets_are_swept():
    rate = AuthorRate(RateSettings(per_author_per_second=1.0, per_author_burst=2, total_per_second=1e6,
                                   total_burst=10**6), sweep_above=10)
    for i in range(10):
        rate.allow(f"a{i}", T0)
    assert rate.tracked() == 10
    rate.allow("late", T0 + 5_000)  # the sweep drops every bucket that refilled
    assert rate.tracked() == 1


@settings(max_examples=50, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 50), st.integers(0, 200)), max_size=300))
def test_never_more_than_burst_plus_rate(events):
    s = RateSettings(per_author_per_second=2.0, per_author_burst=3, total_per_second=5.0, total_burst=8)
    rate = AuthorRate(s, sweep_above=8)
    t, passed, by_author = T0, 0, {}
    for author, step in events:
        t += step
        if rate.allow(f"a{author}", t)[0]:
            passed += 1
            by_author[author] = by_author.get(author, 0) + 1
    elapsed = (t - T0) / 1000
    assert passed <= s.total_burst + s.total_per_second * elapsed + 1e-9
    for n in by_author.values():
        assert n <= s.per_author_burst + s.per_author_per_second * elapsed + 1e-9


def test_liveness_forgets_a_peer():
    tracker = LivenessTracker(Thresholds(1000, 2000, 3000))
    tracker.heard("x", T0, seq=1, sent_ms=T0)
    tracker.forget("x")
    assert tracker.state("x") is None and tracker.peers() == {}


@pytest.fixture
def db(tmp_path):
    d = Database(tmp_path / "node.db")
    try:
        yield d
    finally:
        d.close()


def test_stranger_peer_rows_are_pruned_beyond_the_cap(db):
    for i in range(20):
        upsert_peer(db, f"did:key:zstranger{i:02d}", peer_id=f"p{i}", now_ms=T0 + i * 1000, source="exchange")
    set_friend(db, "did:key:zfriend", "pf", T0)
    upsert_peer(db, "did:key:zbanned", peer_id="pb", now_ms=T0, source="exchange")
    save_standing(db, "did:key:zbanned", {"valid": 0, "invalid": 20, "invalid_by_code": {}, "rate_limited": 0,
                                          "banned_until_ms": T0 + 10**9}, T0)
    upsert_peer(db, "did:key:zonline", peer_id="po", now_ms=T0, source="exchange", online=True)
    upsert_peer(db, "did:key:zboot", peer_id="pbo", now_ms=T0, source="bootstrap")
    upsert_peer(db, "did:key:ztrusted", peer_id="pt", now_ms=T0, source="exchange")
    upsert_peer(db, "did:key:zknown", peer_id="pk", now_ms=T0, source="exchange")
    with db.transaction() as conn:
        conn.execute("INSERT INTO agent_reputation (agent_id, reputation_score) VALUES ('did:key:ztrusted', 0.8)")
        conn.execute("INSERT INTO agent_reputation (agent_id, reputation_score) VALUES ('did:key:zstranger00', 0.5)")
    gone = prune_unknown_peers(db, keep=5, known={"did:key:zknown"}, now_ms=T0 + 60_000, min_trust=0.7)
    ids = {r[0] for r in db.conn.execute("SELECT id FROM agent_peers")}
    assert gone == 15
    assert {f"did:key:zstranger{i:02d}" for i in range(15, 20)} <= ids  # the most recently seen stay
    assert "did:key:zstranger00" not in ids
    assert {"did:key:zfriend", "did:key:zbanned", "did:key:zonline", "did:key:zboot", "did:key:ztrusted",
            "did:key:zknown"} <= ids
    assert db.conn.execute("SELECT banned_until_ms FROM peer_standing WHERE did = 'did:key:zbanned'").fetchone()
    assert prune_unknown_peers(db, keep=5, known={"did:key:zknown"}, now_ms=T0 + 60_000, min_trust=0.7) == 0
