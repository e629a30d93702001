"""Reputation in the store: agent_reputation rows, folding the network's counters in,
trust containers published and taken in, and the trust consumers read."""

from __future__ import annotations

import tempfile
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from meshnode.base.container import ContainerError, build_container, decode_container
from meshnode.base.identity import NodeKey
from meshnode.domain.notes import make_note
from meshnode.domain.reputation import DEFAULT_PARAMS, Evidence, ReputationError, apply_all, initial
from meshnode.records.reputation import records
from meshnode.records.reputation.reading import (
    direct_states,
    effective_trust,
    local_did,
    reputation_detail,
    reputation_rows,
    trust_graph,
)
from meshnode.records.reputation.records import (
    fold_observations,
    ingest_trust,
    load_state,
    publish_due,
    publish_trust,
    record_equivocation,
    record_evidence,
    refresh_decay,
)
from meshnode.domain.reputation.statements import build_trust, statement_of
from meshnode.store import Database
from meshnode.store.peers import peer_trust, save_standing, set_liveness, upsert_peer
from meshnode.store.trust import trust_scores

T0 = 1_800_000_000_000
HOUR = 60 * 60 * 1000
DAY = 24 * HOUR
ME, A, B, C = (NodeKey.generate() for _ in range(4))


@pytest.fixture
def db(tmp_path):
    d = Database(tmp_path / "x.db")
    with d.transaction() as conn:
        conn.execute("INSERT INTO identity (id, name) VALUES (?, 'me')", (ME.did,))
    yield d
    d.close()


def standing(db, did, valid, invalid, at=T0):
    save_standing(db, did, {"valid": valid, "invalid": invalid, "invalid_by_code": {}, "rate_limited": 0,
                            "banned_until_ms": 0}, at)


def test_the_migration_adds_columns_and_tables(db):
    cols = {r[1] for r in db.conn.execute("PRAGMA table_info(agent_reputation)")}
    assert {"updated_ms", "capped_until_ms", "counts", "applied"} <= cols
    tables = {r[0] for r in db.conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    assert {"reputation_evidence", "reputation_watermarks", "reputation_published"} <= tables


def test_recorded_evidence_is_what_trust_scores_and_peer_trust_read(db):
    events = [Evidence("task_success", T0, 4), Evidence("invalid_container", T0 + 5)]
    state = record_evidence(db, A.did, events, now_ms=T0 + 10)
    expected = apply_all(initial(T0), events)
    assert state.score == pytest.approx(expected.score, abs=1e-9)
    assert load_state(db.conn, A.did, T0 + 10) == state
    assert trust_scores(db.conn, [A.did]) == {A.did: state.score}
    assert peer_trust(db, A.did) == state.score
    assert peer_trust(db, B.did) == 0.5  # unknown: the prior
    row = db.conn.execute("SELECT trust_level, notes, counts, applied, last_interaction FROM agent_reputation"
                          " WHERE agent_id = ?", (A.did,)).fetchone()
    assert row[0] == "medium" and row[1] == "invalid_container x1, task_success x4"
    assert row[2] == '{"invalid_container": 1, "task_success": 4}' and row[4] == "2027-01-15T08:00:00.010Z"
    peer = db.conn.execute("SELECT source, status, peer_id FROM agent_peers WHERE id = ?", (A.did,)).fetchone()
    assert peer[0] == "exchange" and peer[1] == "unknown" and peer[2].startswith("12D3KooW")


def test_a_known_peer_row_is_left_alone(db):
    upsert_peer(db, A.did, peer_id="12D3KooWx", now_ms=T0, source="bootstrap", name="alice", online=True)
    record_evidence(db, A.did, [Evidence("task_success", T0)], now_ms=T0)
    assert db.conn.execute("SELECT name, source, status, peer_id FROM agent_peers").fetchall() == [
        ("alice", "bootstrap", "online", "12D3KooWx")]


def test_history_is_kept_to_a_bound_and_the_newest_row_wins(db, monkeypatch):
    monkeypatch.setattr(records, "HISTORY_ROWS", 3)
    for i in range(6):
        last = record_evidence(db, A.did, [Evidence("task_success", T0 + i)], now_ms=T0 + i)
    assert db.conn.execute("SELECT count(*) FROM agent_reputation").fetchone()[0] == 3
    assert trust_scores(db.conn, [A.did])[A.did] == last.score
    assert last.counts == {"task_success": 6}


def test_unknown_kinds_and_bad_dids_write_nothing(db):
    with pytest.raises(ReputationError) as e:
        record_evidence(db, A.did, [Evidence("task_success", T0), Evidence("nonsense", T0)], now_ms=T0)
    assert e.value.code == "unknown_evidence"
    with pytest.raises(ReputationError) as e:
        record_evidence(db, "not a did", [Evidence("task_success", T0)], now_ms=T0)
    assert e.value.code == "bad_did"
    assert db.conn.execute("SELECT count(*) FROM agent_reputation").fetchone()[0] == 0
    assert record_evidence(db, A.did, [], now_ms=T0) is None


def test_equivocation_counts_once_per_evidence_and_sticks(db):
    record_evidence(db, A.did, [Evidence("task_success", T0, 20)], now_ms=T0)
    proof = "did:hmp:container:uEiAequivocationproof"
    s = record_equivocation(db, A.did, proof, now_ms=T0 + 1)
    assert s.score <= 0.05 and s.capped_until_ms == T0 + 1 + DEFAULT_PARAMS.equivocation_hold_ms
    assert record_equivocation(db, A.did, proof, now_ms=T0 + 2) is None  # the same proof again
    assert record_equivocation(db, A.did, b"raw conflicting votes", now_ms=T0 + 3).counts["equivocation"] == 2
    s = record_evidence(db, A.did, [Evidence("task_success", T0 + DAY, 100)], now_ms=T0 + DAY)
    assert s.score <= 0.05
    refs = [r[0] for r in db.conn.execute("SELECT ref FROM reputation_evidence ORDER BY at_ms")]
    assert refs[0] == proof and refs[1].startswith("sha256:")


def test_folding_counters_and_liveness_twice_counts_nothing_twice(db):
    upsert_peer(db, A.did, peer_id="p", now_ms=T0, source="bootstrap")
    standing(db, A.did, 10, 2)
    set_liveness(db, A.did, state="ok", last_heard_ms=T0 + 2 * HOUR + 30 * 60_000, last_seq=1, now_ms=T0)
    changed = fold_observations(db, now_ms=T0 + 3 * HOUR)
    assert changed[A.did].counts == {"valid_container": 10, "invalid_container": 2, "liveness_ok": 2}
    assert fold_observations(db, now_ms=T0 + 3 * HOUR) == {}
    assert fold_observations(db, now_ms=T0 + 4 * HOUR) == {}  # nothing new heard, nothing new counted
    # more heard (the half hour left over carries), more counted
    set_liveness(db, A.did, state="ok", last_heard_ms=T0 + 3 * HOUR, last_seq=2, now_ms=T0 + 3 * HOUR)
    standing(db, A.did, 15, 2)
    changed = fold_observations(db, now_ms=T0 + 4 * HOUR)
    assert changed[A.did].counts == {"valid_container": 15, "invalid_container": 2, "liveness_ok": 3}
    # the node restarted: its counters start again from zero
    standing(db, A.did, 4, 1)
    assert fold_observations(db, now_ms=T0 + 4 * HOUR)[A.did].counts["valid_container"] == 19
    # dead for three and a half hours: three observations
    set_liveness(db, A.did, state="dead", last_heard_ms=T0 + 3 * HOUR, last_seq=2, now_ms=T0 + 5 * HOUR)
    changed = fold_observations(db, now_ms=T0 + 8 * HOUR + 30 * 60_000)
    assert changed[A.did].counts["liveness_dead"] == 3
    assert fold_observations(db, now_ms=T0 + 8 * HOUR + 30 * 60_000) == {}


def test_dead_hours_count_only_for_expected_peers_and_friends(db):
    """Heard one hop, a peer dead here may be alive and merely not connected: no debit unless
    this node expects it (committee, coworkers) or it is a friend."""
    for who in (A, B, C):
        upsert_peer(db, who.did, peer_id="p", now_ms=T0, source="bootstrap")
        set_liveness(db, who.did, state="dead", last_heard_ms=T0, last_seq=1, now_ms=T0)
    db.conn.execute("UPDATE agent_peers SET tags = ? WHERE id = ?", ('["Friend"]', C.did))
    changed = fold_observations(db, now_ms=T0 + 3 * HOUR, expected=frozenset([A.did]))
    assert changed[A.did].counts["liveness_dead"] == 3
    assert changed[C.did].counts["liveness_dead"] == 3  # a friend (a spawned child is one)
    assert B.did not in changed  # a stranger not connected here: neither credit nor debit
    assert fold_observations(db, now_ms=T0 + 6 * HOUR, expected=frozenset([A.did])).keys() == {A.did, C.did}


@settings(max_examples=25)
@given(st.lists(st.tuples(st.integers(0, 50), st.booleans()), min_size=1, max_size=8))
def test_every_valid_container_is_counted_exactly_once_however_often_folded(steps):
    with tempfile.TemporaryDirectory() as tmp:
        d = Database(Path(tmp) / "x.db")
        try:
            upsert_peer(d, A.did, peer_id="p", now_ms=T0, source="bootstrap")
            total = 0
            for i, (more, fold) in enumerate(steps):
                total += more
                standing(d, A.did, total, 0, T0 + i)
                if fold:
                    fold_observations(d, now_ms=T0 + i)
            fold_observations(d, now_ms=T0 + len(steps))
            fold_observations(d, now_ms=T0 + len(steps))
            state = load_state(d.conn, A.did, T0)
            assert (state.counts.get("valid_container", 0) if state else 0) == total
        finally:
            d.close()


def test_refresh_decay_keeps_stored_scores_current(db):
    record_evidence(db, A.did, [Evidence("task_success", T0, 30)], now_ms=T0)
    before = trust_scores(db.conn, [A.did])[A.did]
    assert refresh_decay(db, now_ms=T0 + 1) == 0  # too little to write
    assert refresh_decay(db, now_ms=T0 + DEFAULT_PARAMS.half_life_ms) == 1
    after = trust_scores(db.conn, [A.did])[A.did]
    assert after == pytest.approx(0.5 + (before - 0.5) / 2)
    assert refresh_decay(db, now_ms=T0 + DEFAULT_PARAMS.half_life_ms) == 0


def test_a_row_written_by_hand_still_reads(db):
    upsert_peer(db, A.did, peer_id="p", now_ms=T0, source="bootstrap")
    db.conn.execute("INSERT INTO agent_reputation (agent_id, reputation_score) VALUES (?, 0.8)", (A.did,))
    assert direct_states(db, now_ms=T0)[A.did].score == 0.8
    s = record_evidence(db, A.did, [Evidence("task_failure", T0)], now_ms=T0)
    assert s.score == pytest.approx(0.8 * 0.92)


# --- trust containers ------------------------------------------------------------------


def test_published_trust_verifies_and_chains_its_versions(db):
    with pytest.raises(ReputationError) as e:
        publish_trust(db, ME, A.did, now_ms=T0)
    assert e.value.code == "no_reputation"
    upsert_peer(db, A.did, peer_id="p", now_ms=T0, source="discovery", announce_did="did:hmp:container:uEiAann")
    record_evidence(db, A.did, [Evidence("task_success", T0, 10)], now_ms=T0)
    record_equivocation(db, A.did, "did:hmp:container:uEiAproof", now_ms=T0)
    first = publish_trust(db, ME, A.did, now_ms=T0 + 1)
    back = decode_container(first.to_bytes(), now_ms=T0 + 1)
    p = back.payload
    assert back.cls == "trust" and back.sender_did == ME.did and p["agent_did"] == A.did
    assert p["total_trust_score"] == round(load_state(db.conn, A.did, T0).score, 4)
    assert p["evidence_counts"] == {"equivocation": 1, "task_success": 10}
    assert p["evidence"] == ["did:hmp:container:uEiAproof"] and p["basis"] == "direct"
    assert p["capped_until"] == "2027-07-14T08:00:00.000Z"
    assert back.related == {"in_reply_to": ["did:hmp:container:uEiAann"]}
    second = publish_trust(db, ME, A.did, now_ms=T0 + 2)
    assert second.related["previous_version"] == [first.did]
    assert db.get_container_bytes(second.did) is not None
    assert publish_due(db, now_ms=T0 + 3) == []
    assert publish_due(db, now_ms=T0 + DAY + 2) == [A.did]


def test_trust_schema_refuses_bad_optional_fields():
    for bad in ({"evidence_counts": {"x": -1}}, {"basis": "hearsay"}, {"evidence": ["nope"]},
                {"computed_at": "yesterday"}):
        with pytest.raises(ContainerError) as e:
            build_container(A, "trust", {"agent_did": B.did, "total_trust_score": 0.5, **bad}, timestamp_ms=T0)
        assert e.value.code == "class_schema"


def test_ingest_keeps_usable_statements_and_refuses_others(db):
    good = build_trust(A, B.did, 0.9, now_ms=T0)
    assert ingest_trust(db, good, now_ms=T0, received_from=A.did) is True
    assert ingest_trust(db, good, now_ms=T0) is False
    self_praise = build_container(A, "trust", {"agent_did": A.did, "total_trust_score": 1.0}, timestamp_ms=T0)
    note = make_note(A, "hello", now_ms=T0)
    expired = build_container(A, "trust", {"agent_did": C.did, "total_trust_score": 1.0}, timestamp_ms=T0,
                              ttl_ms=T0 + 1)
    for c, code in ((self_praise, "self_trust"), (note, "not_trust")):
        with pytest.raises(ReputationError) as e:
            ingest_trust(db, c, now_ms=T0)
        assert e.value.code == code
    with pytest.raises(ReputationError) as e:
        statement_of(decode_container(expired.to_bytes(), now_ms=T0 + 10))
    assert e.value.code == "expired"
    with pytest.raises(ReputationError) as e:
        build_trust(A, A.did, 0.9, now_ms=T0)
    assert e.value.code == "self_trust"


def test_the_graph_holds_each_signers_newest_direct_statement(db):
    for c in (build_trust(A, B.did, 0.9, now_ms=T0), build_trust(A, B.did, 0.3, now_ms=T0 + 5),
              build_trust(A, C.did, 0.8, now_ms=T0), build_trust(A, C.did, 0.95, now_ms=T0 + 5, basis="transitive"),
              build_trust(B, C.did, 0.7, now_ms=T0 - 40 * DAY)):  # too old to count
        db.put_container(c, received_at_ms=T0)
    # a trust container stored by the generic path (not ingest) counts as well
    db.put_container(build_trust(C, A.did, 0.6, now_ms=T0), received_at_ms=T0)
    assert trust_graph(db, now_ms=T0 + 10) == {A.did: {B.did: 0.3}, C.did: {A.did: 0.6}}


def test_effective_trust_is_direct_first_then_transitive(db):
    record_evidence(db, A.did, [Evidence("task_success", T0, 40)], now_ms=T0)   # about 0.94
    record_evidence(db, C.did, [Evidence("task_failure", T0, 3)], now_ms=T0)
    for c in (build_trust(A, B.did, 0.9, now_ms=T0), build_trust(A, C.did, 1.0, now_ms=T0),
              build_trust(B, ME.did, 1.0, now_ms=T0)):
        db.put_container(c, received_at_ms=T0)
    assert local_did(db) == ME.did
    trust = effective_trust(db, now_ms=T0)
    a = direct_states(db, now_ms=T0)[A.did].score
    assert trust[A.did] == pytest.approx(a)
    assert trust[B.did] == pytest.approx(a * 0.9 * 0.8)
    assert trust[C.did] == pytest.approx(0.5 * 0.92 ** 3)  # A's praise does not override my own evidence
    assert ME.did not in trust
    assert effective_trust(db, [B.did, "did:key:z6Mkunknown"], now_ms=T0) == {B.did: trust[B.did]}


def test_list_and_detail(db):
    upsert_peer(db, A.did, peer_id="p", now_ms=T0, source="discovery", name="alice")
    record_evidence(db, A.did, [Evidence("task_success", T0, 40)], now_ms=T0)
    db.put_container(build_trust(A, B.did, 0.9, now_ms=T0), received_at_ms=T0)
    db.put_container(build_trust(C, B.did, 0.2, now_ms=T0), received_at_ms=T0)
    publish_trust(db, ME, A.did, now_ms=T0)
    rows = reputation_rows(db, now_ms=T0)
    assert [(r["did"], r["basis"], r["name"]) for r in rows] == [(A.did, "direct", "alice"),
                                                                 (B.did, "transitive", None)]
    assert rows[1]["via"] == [A.did]
    d = reputation_detail(db, B.did, now_ms=T0)
    assert d["basis"] == "transitive" and d["history"] == []
    assert [(s["signer"], s["score"]) for s in d["statements"]] == [(A.did, 0.9), (C.did, 0.2)]
    d = reputation_detail(db, A.did, now_ms=T0)
    assert d["statements"] == [] and d["published"]["score"] == pytest.approx(d["score"], abs=1e-6)
    assert d["history"][0]["applied"] == {"task_success": 40}
    with pytest.raises(ReputationError) as e:
        reputation_detail(db, C.did, now_ms=T0)
    assert e.value.code == "no_reputation"
