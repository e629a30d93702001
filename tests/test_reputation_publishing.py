"""What a node signs and gossips about its peers: known peers and strangers with evidence, a few
per round (``reputation.publishing``); and a reputation round in-process, where a flood of
throw-away identities each sending one valid input makes the node sign nothing about them."""

from __future__ import annotations

import pytest
import trio
from hypothesis import given, settings
from hypothesis import strategies as st

from meshnode.base.identity import NodeKey
from meshnode.base.metrics import Metrics
from meshnode.net.mesh_reputation import Reputation
from meshnode.net.standing import Standing
from meshnode.domain.reputation.model import Evidence, ReputationError, apply_all, initial
from meshnode.domain.reputation.publishing import (
    DEFAULT_POLICY,
    Candidate,
    PublishPolicy,
    change,
    is_due,
    select,
    worth_publishing,
)
from meshnode.store.known import KnownAuthors
from meshnode.store.service import Store

T0 = 1_800_000_000_000
HOUR = 60 * 60 * 1000
PRIOR = 0.5


def test_one_valid_input_from_a_stranger_is_not_worth_a_statement():
    fresh = Candidate("did:key:s", 0.5015, evidence=1, first_ms=T0)
    assert is_due(fresh, T0) and not worth_publishing(fresh, T0 + 5 * HOUR)
    assert select([fresh], T0 + 5 * HOUR).withheld == {"little_evidence": 1}


def test_what_makes_a_peer_worth_speaking_of():
    now = T0 + 2 * HOUR
    assert worth_publishing(Candidate("did:key:f", 0.5, known=True), now)  # a friend, even with no evidence
    steady = Candidate("did:key:s", 0.51, evidence=10, first_ms=T0, last_ms=T0 + HOUR)
    assert worth_publishing(steady, now)
    assert not worth_publishing(Candidate("did:key:s", 0.51, evidence=9, first_ms=T0, last_ms=T0 + HOUR), now)
    burst = Candidate("did:key:b", 0.51, evidence=50, first_ms=T0, last_ms=T0 + HOUR - 1)
    assert not worth_publishing(burst, T0 + 100 * HOUR)  # a burst followed by silence never ages into one
    assert worth_publishing(Candidate("did:key:e", 0.05, evidence=1, first_ms=now), now)  # an equivocator
    assert worth_publishing(Candidate("did:key:p", 0.9, evidence=1, first_ms=now), now)  # a person's judgement


@settings(max_examples=100, deadline=None)
@given(st.integers(1, 100_000), st.integers(0, 1000), st.integers(0, HOUR - 1))
def test_cheap_evidence_in_bulk_earns_a_stranger_no_statement_within_the_hour(valid, hours_heard, age):
    """Volume is free for a flooder: valid containers and liveness alone never reach the margin."""
    state = apply_all(initial(T0), [Evidence("valid_container", T0, valid)]
                      + ([Evidence("liveness_ok", T0, hours_heard)] if hours_heard else []))
    c = Candidate("did:key:flooder", state.score, evidence=sum(state.counts.values()), first_ms=T0, last_ms=T0 + age)
    assert not worth_publishing(c, T0 + age)


def test_the_round_limit_takes_known_peers_then_the_largest_changes():
    now = T0 + 2 * HOUR
    policy = PublishPolicy(max_per_round=2)
    strangers = [Candidate(f"did:key:s{i}", 0.5 + i / 20, evidence=50, first_ms=T0, last_ms=now) for i in range(1, 6)]
    friend = Candidate("did:key:f", 0.5, known=True)
    out = select([*strangers, friend], now, policy)
    assert out.publish == ["did:key:f", "did:key:s5"]
    assert out.withheld == {"round_limit": 4}


def test_statements_already_published_are_not_due_again_until_they_move_or_age():
    c = Candidate("did:key:f", 0.7, published=0.68, published_ms=T0, known=True)
    assert select([c], T0 + 1).publish == []
    assert select([c], T0 + DEFAULT_POLICY.max_age_ms).publish == ["did:key:f"]


def test_bad_policies_are_refused():
    for bad in ({"max_per_round": 0}, {"margin": 0.0}, {"min_evidence": -1}, {"min_span_ms": 1.5}):
        with pytest.raises(ReputationError):
            PublishPolicy(**bad)


candidates = st.builds(
    Candidate,
    did=st.text("abcdef", min_size=1, max_size=4).map(lambda s: "did:key:" + s),
    score=st.floats(0, 1),
    published=st.none() | st.floats(0, 1),
    published_ms=st.integers(T0 - 48 * HOUR, T0),
    evidence=st.integers(0, 40),
    first_ms=st.integers(T0 - 3 * HOUR, T0 - HOUR),
    last_ms=st.integers(T0 - 3 * HOUR, T0),
    known=st.booleans(),
)


@settings(max_examples=300, deadline=None)
@given(st.lists(candidates, max_size=40, unique_by=lambda c: c.did), st.integers(1, 8))
def test_selection_rule(cands, k):
    policy = PublishPolicy(max_per_round=k)
    out = select(cands, T0, policy)
    by_did = {c.did: c for c in cands}
    due = [c for c in cands if is_due(c, T0, policy)]
    eligible = [c for c in due if worth_publishing(c, T0, policy, PRIOR)]
    # only due statements about peers worth speaking of, at most k, none twice
    assert len(out.publish) == len(set(out.publish)) == min(k, len(eligible))
    assert all(by_did[d] in eligible for d in out.publish)
    # everything due is either published or counted as held back, by the right reason
    assert len(out.publish) + sum(out.withheld.values()) == len(due)
    assert out.withheld.get("little_evidence", 0) == len(due) - len(eligible)
    assert out.withheld.get("round_limit", 0) == len(eligible) - len(out.publish)
    # what waits is never preferred over what was chosen: known first, then the larger change
    rank = lambda c: (not c.known, -change(c, PRIOR))  # noqa: E731
    left = [c for c in eligible if c.did not in out.publish]
    assert all(rank(by_did[d]) <= rank(c) for d in out.publish for c in left)


# --- a reputation round in-process ---------------------------------------------------


class Victim(Reputation):
    """The reputation service with what a round uses: a real store, standing counters, known authors;
    what it gossips is kept, and no GMP work (no coworkers)."""

    def __init__(self, store: Store, key: NodeKey, friends: list[str]):
        self.now = T0
        self.gossiped: list = []
        super().__init__(store, key, Standing(), KnownAuthors({key.did, *friends}), Metrics(), lambda: self.now,
                         publish=self._gossip)

    async def _gossip(self, c) -> None:
        self.gossiped.append(c)


def subjects(victim: Victim) -> list[str]:
    return sorted(c.payload["agent_did"] for c in victim.gossiped)


def test_throwaway_identities_get_no_statements_but_a_friend_does(tmp_path):
    n = 60
    throwaway = [NodeKey.generate().did for _ in range(n)]
    friend, steady, burster = (NodeKey.generate().did for _ in range(3))

    async def main():
        async with await Store.open(tmp_path / "v.db") as store:
            v = Victim(store, NodeKey.generate(), [friend])
            for minute in range(3):  # the friend and one stranger send valid input steadily
                v.now = T0 + minute * 60_000
                v.standing.record_valid(friend, v.now, 5)
                v.standing.record_valid(steady, v.now, 5)
                if minute == 1:
                    for did in throwaway:  # the flood: one valid input each
                        v.standing.record_valid(did, v.now)
                    v.standing.record_valid(burster, v.now, 20)  # and one identity with a burst, then silence
                result = await v.reputation_round()
            assert subjects(v) == [friend]  # the friend's statement went out in the first round
            assert result["published"] == [] and result["withheld"] == {"little_evidence": n + 2}
            assert v.metrics.get("trust_statements_withheld", reason="little_evidence") == 2 * (n + 2) + 1
            assert v.metrics.get("trust_published") == 1
            assert result["peers"] >= n + 3  # local scores are still kept for every one of them
            # the steady stranger, an hour later and with more evidence, is worth speaking of
            v.now = T0 + HOUR + 3 * 60_000
            v.standing.record_valid(steady, v.now, 5)
            result = await v.reputation_round()
            assert [c.payload["agent_did"] for c in v.gossiped[1:]] == [steady]
            assert result["withheld"] == {"little_evidence": n + 1}  # the throw-away ids and the burster

    trio.run(main)


def test_the_round_limit_holds_back_the_rest_for_later_rounds(tmp_path):
    friends = [NodeKey.generate().did for _ in range(5)]

    async def main():
        async with await Store.open(tmp_path / "v.db") as store:
            v = Victim(store, NodeKey.generate(), friends)
            v.trust_policy = PublishPolicy(max_per_round=2)
            for did in friends:
                v.standing.record_valid(did, v.now)
            rounds = []
            for _ in range(3):
                rounds.append(len((await v.reputation_round())["published"]))
                v.now += 60_000
            assert rounds == [2, 2, 1] and sorted(subjects(v)) == sorted(friends)
            assert v.metrics.get("trust_statements_withheld", reason="round_limit") == 3 + 1

    trio.run(main)


def test_sessions_credited_are_remembered_for_a_bounded_number_of_peers():
    from meshnode.net.mesh_reputation import SESSIONS_KEPT

    n = Reputation(None, None, Standing(), KnownAuthors(set()), Metrics(), lambda: T0, publish=None)
    for i in range(SESSIONS_KEPT + 50):
        n.credit_sync_session(f"did:key:z{i}")
    assert len(n._sessions_credited) == SESSIONS_KEPT


def test_strangers_with_evidence_outlast_a_flood_of_throwaway_rows(tmp_path):
    import json

    from meshnode.store import Database
    from meshnode.store.peers import upsert_peer
    from meshnode.store.stranger_peers import prune_unknown_peers

    db = Database(tmp_path / "p.db")
    try:
        upsert_peer(db, "did:key:zsteady", peer_id="ps", now_ms=T0, source="exchange")
        with db.transaction() as conn:
            conn.execute("INSERT INTO agent_reputation (agent_id, reputation_score, counts) VALUES (?, 0.52, ?)",
                         ("did:key:zsteady", json.dumps({"valid_container": 8, "liveness_ok": 3})))
        for i in range(20):  # seen after it, one input each
            upsert_peer(db, f"did:key:zjunk{i:02d}", peer_id=f"p{i}", now_ms=T0 + (i + 1) * 1000, source="exchange")
            with db.transaction() as conn:
                conn.execute("INSERT INTO agent_reputation (agent_id, reputation_score, counts) VALUES (?, 0.5015, ?)",
                             (f"did:key:zjunk{i:02d}", json.dumps({"valid_container": 1})))
        assert prune_unknown_peers(db, keep=5, known=(), now_ms=T0 + 60_000, min_trust=0.7) == 16
        ids = {r[0] for r in db.conn.execute("SELECT id FROM agent_peers")}
        assert ids == {"did:key:zsteady", *(f"did:key:zjunk{i:02d}" for i in range(16, 20))}
    finally:
        db.close()
