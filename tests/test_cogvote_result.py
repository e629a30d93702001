"""consensus_result containers (meshnode/domain/consensus/result.py): a result built from votes always
verifies; a result that misstates any vote, trust, decay, weight, score or state does not, and
the verifier says which."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from meshnode.domain.consensus.cogvote import MAX_VOTES, ConsensusError, Rule, decay, decide, make_vote, tally
from meshnode.domain.consensus.result import build_result, compare_view, read_claim, result_payload, verify_result
from meshnode.records.consensus import cast_vote, load_votes, publish_result, tally_stored, verify_stored, votes_on
from meshnode.base.container import build_container, decode_container, format_ms
from meshnode.base.identity.keys import NodeKey
from meshnode.store import Database

KEYS = [NodeKey(bytes([i]) * 32) for i in range(60, 66)]
AUTHOR = NodeKey(bytes([99]) * 32)
T0 = 1_800_000_000_000
DAY = 86_400_000
TARGET = "did:hmp:container:uEiAtarget"
OTHER = "did:hmp:container:uEiAother"
AT = T0 + 10 * DAY


def votes_from(specs, decision="general", target=TARGET):
    """specs: (key index, value, age in ms before AT)."""
    return [make_vote(KEYS[k], target, v, now_ms=AT - age, decision=decision) for k, v, age in specs]


def by_did(votes):
    return {v.did: v for v in votes}


def reread(c):
    return decode_container(c.to_bytes(), now_ms=AT)


def forge(cast, *, tally_rule=Rule(min_voters=1), at=AT, listed=None, related=None, target=TARGET, **changes):
    """Sign a result whose payload is an honest tally of the ``cast`` votes with ``changes`` made
    to its payload fields as they are; ``listed`` replaces the votes list and recomputes weights,
    score and state from it (so that only the listing is wrong)."""
    payload = result_payload(tally(cast, target, trust={}, at_ms=at, rule=tally_rule))
    if listed is not None:
        payload["votes"] = listed
        o = decide(((e["value"], e["trust"], e["decay"]) for e in listed), tally_rule)
        payload.update(weights={"approve": o.approve, "reject": o.reject, "neutral": o.neutral},
                       score=o.score, state=o.state, summary_percent=o.percent())
    payload.update(changes)
    if related is None:
        related = {"in_reply_to": [target]}
        if payload["votes"]:
            related["depends_on"] = sorted(e["vote"] for e in payload["votes"])
    return build_container(AUTHOR, "consensus_result", payload, timestamp_ms=at, related=related)


def verdict_code(result, votes):
    return verify_result(reread(result), by_did(votes)).code


specs = st.lists(st.tuples(st.integers(0, len(KEYS) - 1), st.sampled_from([-1, 0, 1]), st.integers(0, 40 * DAY)),
                 max_size=10)
rules = st.builds(Rule, st.sampled_from(["general", "ethical"]), st.sampled_from([0, DAY, 30 * DAY]),
                  st.integers(1, 4), st.sampled_from([0.0, 0.5, 1.0]))
trusts = st.dictionaries(st.sampled_from([k.did for k in KEYS]), st.floats(0, 1), max_size=len(KEYS))


@given(specs, rules, trusts)
def test_a_result_built_from_votes_always_verifies(spec, rule, trust):
    votes = votes_from(spec, rule.decision)
    t = tally(votes, TARGET, trust=trust, at_ms=AT, rule=rule)
    result = reread(build_result(AUTHOR, t))
    verdict = verify_result(result, by_did(votes))
    assert verdict.ok, verdict.line()
    claim = read_claim(result)
    assert claim.state == t.outcome.state and claim.score == t.outcome.score
    assert claim.vote_dids == [c.ballot.vote for c in t.counted]
    assert set(result.related.get("depends_on", [])) == set(claim.vote_dids)
    assert result.related["in_reply_to"] == [TARGET]


def test_the_result_payload_names_everything_needed_to_recompute_it():
    votes = votes_from([(0, 1, DAY), (1, -1, 0), (2, 0, 2 * DAY)])
    t = tally(votes, TARGET, trust={KEYS[1].did: 0.25}, at_ms=AT, rule=Rule(half_life_ms=DAY, min_voters=2))
    p = build_result(AUTHOR, t).payload
    assert p["computed_at"] == format_ms(AT) and p["decision"] == "general"
    assert p["rule"] == {"half_life_ms": DAY, "min_voters": 2, "min_trust": 1.0}
    assert sorted((e["voter"], e["value"], e["trust"], e["decay"]) for e in p["votes"]) == sorted(
        [(KEYS[0].did, 1, 0.5, 0.5), (KEYS[1].did, -1, 0.25, 1.0), (KEYS[2].did, 0, 0.5, 0.25)])
    assert p["weights"] == {"approve": 0.25, "reject": 0.25, "neutral": 0.125}
    assert (p["score"], p["state"]) == (0.0, "disputed")  # quorum (3 voters, trust 1.25), a tie
    assert p["summary_percent"] == {"approved": 40.0, "rejected": 40.0, "neutral": 20.0}


# --- every misstatement is caught, with its reason ---------------------------------------------

base_specs = st.lists(st.tuples(st.integers(0, len(KEYS) - 1), st.sampled_from([-1, 0, 1]),
                                st.integers(0, 5 * DAY)), min_size=1, max_size=8)


@given(base_specs, st.data())
def test_changing_a_listed_vote_trust_or_number_breaks_verification(spec, data):
    votes = votes_from(spec)
    listed = result_payload(tally(votes, TARGET, trust={}, at_ms=AT, rule=Rule(min_voters=1)))["votes"]
    i = data.draw(st.integers(0, len(listed) - 1))
    entry = listed[i]
    kind = data.draw(st.sampled_from(["value", "trust", "decay", "voter", "score", "state", "weights"]))
    if kind in ("value", "trust", "decay", "voter"):
        changed = [dict(e) for e in listed]
        if kind == "value":
            changed[i]["value"] = data.draw(st.sampled_from([v for v in (-1, 0, 1) if v != entry["value"]]))
            forged, want = forge(votes, votes=changed), "wrong_value"
        elif kind == "trust":
            changed[i]["trust"] = data.draw(st.floats(0, 1).filter(lambda t: abs(t - entry["trust"]) > 1e-3))
            forged, want = forge(votes, votes=changed), "tally_mismatch"
        elif kind == "decay":
            changed[i]["decay"] = data.draw(st.floats(0, 1).filter(lambda d: abs(d - entry["decay"]) > 1e-6))
            forged, want = forge(votes, votes=changed), "decay_mismatch"
        else:
            changed[i]["voter"] = next(k.did for k in KEYS + [AUTHOR] if k.did != entry["voter"])
            forged, want = forge(votes, votes=changed), "wrong_voter"
    elif kind == "score":
        o = tally(votes, TARGET, trust={}, at_ms=AT, rule=Rule(min_voters=1)).outcome
        score = data.draw(st.floats(-1, 1).filter(lambda s: abs(s - o.score) > 1e-6))
        forged, want = forge(votes, score=score), "score_mismatch"
    elif kind == "state":
        o = tally(votes, TARGET, trust={}, at_ms=AT, rule=Rule(min_voters=1)).outcome
        state = data.draw(st.sampled_from([s for s in ("approved", "rejected", "disputed", "pending")
                                           if s != o.state]))
        forged, want = forge(votes, state=state), "state_mismatch"
    else:
        o = tally(votes, TARGET, trust={}, at_ms=AT, rule=Rule(min_voters=1)).outcome
        forged, want = forge(votes, weights={"approve": o.approve + 0.5, "reject": o.reject,
                                             "neutral": o.neutral}), "tally_mismatch"
    verdict = verify_result(reread(forged), by_did(votes))
    assert not verdict.ok and verdict.code == want, verdict.line()


def test_each_kind_of_misstatement_has_its_own_reason():
    votes = votes_from([(0, 1, DAY), (1, 1, 0), (2, -1, 0)])
    honest = result_payload(tally(votes, TARGET, trust={}, at_ms=AT, rule=Rule(min_voters=1)))["votes"]
    assert verdict_code(forge(votes), votes) == "ok"

    # a vote the verifier does not hold
    assert verdict_code(forge(votes), votes[:2]) == "missing_vote"
    # a vote on another target, or under another decision
    stray = votes_from([(3, 1, 0)], target=OTHER) + votes_from([(4, 1, 0)], decision="ethical")
    for v, code in zip(stray, ("wrong_target", "wrong_decision")):
        entry = {"vote": v.did, "voter": v.sender_did, "value": 1, "trust": 0.5, "decay": 1.0}
        assert verdict_code(forge(votes, listed=honest + [entry]), votes + [v]) == code
    # two votes of one voter: the older one is not the newest
    older = make_vote(KEYS[1], TARGET, -1, now_ms=AT - 5 * DAY)
    entry = {"vote": older.did, "voter": KEYS[1].did, "value": -1, "trust": 0.5, "decay": decay(5 * DAY, 30 * DAY)}
    verdict = verify_result(reread(forge(votes, listed=honest + [entry])), by_did(votes + [older]))
    assert verdict.code == "not_newest" and older.did in verdict.reason.split("is not")[0]
    # a listed vote twice; related links that do not match
    assert verdict_code(forge(votes, listed=honest + [honest[0]]), votes) == "duplicate_vote"
    assert verdict_code(forge(votes, related={"in_reply_to": [OTHER], "depends_on": sorted(v.did for v in votes)}),
                        votes) == "related_mismatch"
    assert verdict_code(forge(votes, related={"in_reply_to": [TARGET], "depends_on": [votes[0].did]}),
                        votes) == "related_mismatch"
    # a result computed before a vote it lists was cast, or after the vote expired
    assert verdict_code(forge(votes, at=AT - 1, listed=honest, computed_at=format_ms(AT - 1)),
                        votes) == "vote_after_result"
    fleeting = build_container(KEYS[5], "vote", {"target_did": TARGET, "vote_value": 1, "vote_type": "approval"},
                               timestamp_ms=AT - DAY, ttl_ms=AT - 1, related={"in_reply_to": [TARGET]})
    entry = {"vote": fleeting.did, "voter": KEYS[5].did, "value": 1, "trust": 0.5, "decay": decay(DAY, 30 * DAY)}
    assert verdict_code(forge(votes, listed=honest + [entry]), votes + [fleeting]) == "expired_vote"
    # the rule misstated: another half-life changes every decay
    assert verdict_code(forge(votes, rule={"half_life_ms": DAY, "min_voters": 1, "min_trust": 1.0}),
                        votes) == "decay_mismatch"
    # summary_percent misstated
    wrong = {"approved": 50.0, "rejected": 25.0, "neutral": 25.0}
    assert verdict_code(forge(votes, summary_percent=wrong), votes) == "summary_mismatch"
    # a container that is no vote, listed as one
    note = build_container(KEYS[3], "note", {"text": "x", "source": "cli", "audience": "private"}, timestamp_ms=AT)
    entry = {"vote": note.did, "voter": KEYS[3].did, "value": 1, "trust": 0.5, "decay": 1.0}
    assert verdict_code(forge(votes, listed=honest + [entry]), votes + [note]) == "not_a_vote"
    # something that is not a result at all
    assert verify_result(votes[0], {}).code == "not_a_result"


def test_a_result_with_no_votes_is_pending_and_verifies():
    result = reread(build_result(AUTHOR, tally([], TARGET, trust={}, at_ms=AT)))
    assert "depends_on" not in result.related
    verdict = verify_result(result, {})
    assert verdict.ok and verdict.claim.state == "pending"


def test_the_largest_result_fits_a_container():
    keys = [NodeKey(i.to_bytes(2, "big") * 16) for i in range(MAX_VOTES + 1)]
    votes = [make_vote(k, TARGET, 1, now_ms=AT - 1) for k in keys]
    result = build_result(AUTHOR, tally(votes[:MAX_VOTES], TARGET, trust={}, at_ms=AT))
    assert verify_result(reread(result), by_did(votes)).ok
    with pytest.raises(ConsensusError) as info:
        build_result(AUTHOR, tally(votes, TARGET, trust={}, at_ms=AT))
    assert info.value.code == "too_many_votes"


# --- the verifier's own view -----------------------------------------------------------------


def test_the_own_view_reports_other_trust_and_votes_the_result_did_not_list():
    votes = votes_from([(0, 1, DAY), (1, 1, DAY), (2, -1, DAY)])
    claim = read_claim(reread(build_result(AUTHOR, tally(votes, TARGET, trust={}, at_ms=AT,
                                                         rule=Rule(min_voters=1)))))
    same = compare_view(claim, votes, {})
    assert same.same and "same result" in same.line()
    newer = make_vote(KEYS[2], TARGET, 1, now_ms=AT - 1)  # voter 2 changed their mind before AT
    view = compare_view(claim, votes + [newer], {KEYS[0].did: 0.9})
    assert view.trust_differs == ((KEYS[0].did, 0.5, 0.9),)
    assert view.not_listed == (newer.did,) and view.not_counted == (votes[2].did,)
    assert view.tally.outcome.state == "approved" and "1 voter" in view.line()


# --- the store side --------------------------------------------------------------------------


def test_votes_are_found_by_their_target_and_loaded_verified(tmp_path):
    db = Database(tmp_path / "db.sqlite")
    try:
        votes = votes_from([(0, 1, 0), (1, -1, 0)]) + votes_from([(2, 1, 0)], target=OTHER)
        note = build_container(KEYS[3], "note", {"text": "x", "source": "cli", "audience": "private"},
                               timestamp_ms=AT, related={"in_reply_to": [TARGET]})
        for c in votes + [note]:
            db.put_container(c, received_at_ms=AT)
        assert {c.did for c in votes_on(db, TARGET, now_ms=AT)} == {votes[0].did, votes[1].did}
        loaded = load_votes(db, [votes[0].did, "did:hmp:container:uEiAnope"], now_ms=AT)
        assert loaded[votes[0].did] == votes[0] and loaded["did:hmp:container:uEiAnope"] is None
    finally:
        db.close()


def test_the_store_side_casts_revisions_that_count_and_verifies_what_it_publishes(tmp_path):
    db = Database(tmp_path / "db.sqlite")
    proposal = build_container(AUTHOR, "diary_entry", {"content": "meet on Fridays"}, timestamp_ms=AT - DAY)
    with pytest.raises(ConsensusError) as refused:  # a vote is on a container held here (issue 35)
        cast_vote(db, KEYS[0], proposal.did, 1, now_ms=AT)
    assert refused.value.code == "unknown_target"
    assert db.conn.execute("SELECT count(*) FROM containers").fetchone() == (0,)  # nothing signed nor stored
    db.put_container(proposal, received_at_ms=AT - DAY)
    target = proposal.did
    try:
        first = cast_vote(db, KEYS[0], target, 1, now_ms=AT)
        # the clock went back: the revision is still later than the vote it replaces
        second = cast_vote(db, KEYS[0], target, -1, now_ms=AT - DAY)
        assert second.timestamp_ms == AT + 1 and second.related["previous_version"] == [first.did]
        ethical = cast_vote(db, KEYS[0], target, 1, now_ms=AT, decision="ethical")
        assert "previous_version" not in ethical.related  # another question
        for k in KEYS[1:3]:
            cast_vote(db, k, target, -1, now_ms=AT)
        t = tally_stored(db, target, rule=Rule(), at_ms=AT + 2)
        assert [c.ballot.vote for c in t.counted if c.ballot.voter == KEYS[0].did] == [second.did]
        assert t.outcome.state == "rejected"
        result = publish_result(db, AUTHOR, target, rule=Rule(), now_ms=AT + 2)
        verdict, view = verify_stored(db, db.load_container(result.did, now_ms=AT + 2), now_ms=AT + 2)
        assert verdict.ok and view.same
        not_a_result, none = verify_stored(db, first, now_ms=AT + 2)
        assert not_a_result.code == "not_a_result" and none is None
    finally:
        db.close()
